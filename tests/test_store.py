"""ragkit.search.store: Qdrant in memory and in a folder, with small hand-made vectors (no model)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragkit.corpus import Doc, Hit
from ragkit.errors import BackendError, BackendUnreachable, ConfigError, CorpusError
from ragkit.search.dense import DenseIndex
from ragkit.search.store import VectorStore, point_id
from tests.fakes import HashingEmbedder

HOLD_FOLDER = ("import sys, time; from qdrant_client import QdrantClient; c = QdrantClient(path=sys.argv[1]); "
               "print('locked', flush=True); time.sleep(120)")

DOCS = [
    Doc("en-annual-01", "Annual leave is 25 days.", title="Annual leave", source="handbook/en", lang="en",
        topic="annual-leave"),
    Doc("en-annual-01#2", "Carry over five days.", title="Annual leave", source="handbook/en", lang="en",
        topic="annual-leave", parent_id="en-annual-01"),
    Doc("vi-leave-01", "Nhân viên có 12 ngày phép năm.", title="Nghỉ phép năm", source="handbook/vi", lang="vi",
        topic="annual-leave"),
    Doc("en-sick-01", "Post in #absences before 09:30.", title="Sick leave", source="handbook/en", lang="en",
        topic="sick-leave"),
]
VECTORS = np.array([[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.7, 0.7, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)


@pytest.fixture(params=["memory", "folder"])
def store(request, tmp_path):
    """A store with the four docs upserted, once in memory and once in a folder."""
    vector_store = VectorStore(":memory:" if request.param == "memory" else tmp_path / "qdrant")
    vector_store.create("docs", dim=3)
    vector_store.upsert("docs", DOCS, VECTORS)
    yield vector_store
    vector_store.close()


def test_search_returns_hits_best_first(store):
    hits = store.search("docs", np.array([1.0, 0.0, 0.0]), k=3)
    assert all(isinstance(h, Hit) for h in hits)
    assert [h.id for h in hits] == ["en-annual-01", "en-annual-01#2", "vi-leave-01"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[2].score == pytest.approx(np.sqrt(0.5), abs=1e-5)  # cosine, not a raw dot product


def test_search_restores_every_payload_field(store):
    by_id = {h.id: h.doc for h in store.search("docs", np.array([1.0, 1.0, 1.0]), k=4)}
    assert by_id == {d.id: d for d in DOCS}


def test_upserting_the_same_docs_again_keeps_the_count(store):
    assert store.count("docs") == 4
    assert store.upsert("docs", DOCS, VECTORS) == 4
    assert store.count("docs") == 4


def test_upsert_overwrites_a_doc_with_the_same_id(store):
    store.upsert("docs", [Doc("en-sick-01", "New sick-leave rule.")], np.array([[1.0, 0.0, 0.0]]))
    hits = store.search("docs", np.array([1.0, 0.0, 0.0]), k=1)
    assert store.count("docs") == 4
    assert (hits[0].id, hits[0].doc.text) == ("en-sick-01", "New sick-leave rule.")


def test_point_ids_are_stable_and_distinct():
    assert point_id("en-annual-01") == point_id("en-annual-01") != point_id("en-annual-02")


def test_a_where_filter_restricts_hits(store):
    hits = store.search("docs", np.array([1.0, 0.0, 0.0]), k=4, where={"lang": "vi"})
    assert [h.id for h in hits] == ["vi-leave-01"]


def test_a_filter_on_two_fields_needs_both(store):
    hits = store.search("docs", np.array([1.0, 0.0, 0.0]), k=4, where={"lang": "en", "topic": "sick-leave"})
    assert [h.id for h in hits] == ["en-sick-01"]


def test_create_keeps_an_existing_collection(store):
    store.create("docs", dim=3)
    assert store.count("docs") == 4


def test_recreate_empties_the_collection(store):
    store.create("docs", dim=3, recreate=True)
    assert store.count("docs") == 0
    assert store.search("docs", np.array([1.0, 0.0, 0.0])) == []


def test_a_folder_store_persists_after_closing(tmp_path):
    first = VectorStore(str(tmp_path / "qdrant"))
    first.create("docs", dim=3)
    first.upsert("docs", DOCS, VECTORS)
    first.close()
    again = VectorStore(tmp_path / "qdrant")
    try:
        assert again.count("docs") == 4
    finally:
        again.close()


def test_docs_and_vectors_of_different_lengths_are_refused(store):
    with pytest.raises(CorpusError, match="4 docs but 3 vectors"):
        store.upsert("docs", DOCS, VECTORS[:3])


def test_a_qdrant_url_with_nothing_listening_says_what_to_do(free_port):
    url = f"http://127.0.0.1:{free_port}"
    vector_store = VectorStore(url)
    with pytest.raises(BackendUnreachable, match=f"no Qdrant server answers at {url}") as err:
        vector_store.create("docs", dim=3)
    assert "docker run" in str(err.value) and "RAGKIT_STORE=:memory:" in str(err.value)
    with pytest.raises(BackendUnreachable):
        vector_store.upsert("docs", DOCS, VECTORS)
    with pytest.raises(BackendUnreachable):
        vector_store.search("docs", VECTORS[0])


@pytest.fixture
def two_indexes(tmp_path, monkeypatch):
    """Two DenseIndex objects made as lessons make them: RAGKIT_STORE names one folder for both."""
    monkeypatch.setenv("RAGKIT_STORE", str(tmp_path / "qdrant"))
    docs = DenseIndex(DOCS[:2], embedder=HashingEmbedder(), collection="docs")
    children = DenseIndex(DOCS[2:], embedder=HashingEmbedder(), collection="children")
    yield docs, children
    docs.store.close()
    children.store.close()


def test_two_indexes_on_one_folder_keep_their_collections_apart(two_indexes):
    docs, children = two_indexes
    assert {h.id for h in docs.search("annual leave days", k=4)} == {"en-annual-01", "en-annual-01#2"}
    assert {h.id for h in children.search("annual leave days", k=4)} == {"vi-leave-01", "en-sick-01"}
    assert (docs.store.count("docs"), docs.store.count("children")) == (2, 2)  # one folder, both collections


def test_closing_one_store_leaves_the_other_on_the_folder_usable(two_indexes):
    docs, children = two_indexes
    docs.store.close()
    docs.store.close()  # a second close must not take the other store's share of the client
    assert [h.id for h in children.search("sick absences", k=1)] == ["en-sick-01"]
    assert children.store.count("docs") == 2


def test_closing_every_store_frees_the_folder_and_keeps_the_data(tmp_path):
    from qdrant_client import QdrantClient

    first, second = VectorStore(tmp_path / "qdrant"), VectorStore(str(tmp_path / "qdrant" / ".." / "qdrant"))
    first.create("docs", dim=3)
    first.upsert("docs", DOCS, VECTORS)
    second.create("kb", dim=3)
    first.close()
    second.close()
    raw = QdrantClient(path=str(tmp_path / "qdrant"))  # Qdrant refuses this while any client holds the folder
    try:
        assert raw.count("docs").count == 4 and raw.collection_exists("kb")
    finally:
        raw.close()


def test_in_memory_stores_stay_separate():
    first, second = VectorStore(":memory:"), VectorStore(":memory:")
    first.create("docs", dim=3)
    first.upsert("docs", DOCS, VECTORS)
    second.create("docs", dim=3)
    assert (first.count("docs"), second.count("docs")) == (4, 0)
    first.close()
    second.close()


def test_a_folder_another_process_holds_says_what_to_do(tmp_path):
    folder = tmp_path / "qdrant"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_FOLDER, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(BackendError, match="is in use by another process") as err:
            VectorStore(folder)
    finally:
        holder.kill()
        holder.wait()
    message = str(err.value)
    assert not isinstance(err.value, RuntimeError)
    assert all(advice in message for advice in ("close or restart that kernel", "another folder",
                                                ":memory:", "http://localhost:6333"))
    VectorStore(folder).close()  # the failed attempt left nothing behind: the folder opens once it is free


def test_a_store_dropped_without_closing_frees_the_folder(tmp_path):
    from qdrant_client import QdrantClient

    store = VectorStore(tmp_path / "qdrant")
    store.create("docs", dim=3)
    del store  # as when a notebook cell rebinds its variable
    QdrantClient(path=str(tmp_path / "qdrant")).close()


@pytest.mark.parametrize("location, advice", [("memory", ":memory:"), ("localhost:6333", "http://localhost:6333")])
def test_a_store_location_that_is_likely_a_mistake_is_refused_before_any_folder_is_made(
        tmp_path, monkeypatch, location, advice):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=advice):
        VectorStore(location)
    monkeypatch.setenv("RAGKIT_STORE", location)
    with pytest.raises(ConfigError, match=advice):
        VectorStore()
    assert list(tmp_path.iterdir()) == []


def test_a_path_object_is_a_folder_even_without_a_slash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = VectorStore(Path("qdrant"))
    store.create("docs", dim=3)
    store.close()
    assert (tmp_path / "qdrant").is_dir()


def test_unnamed_indexes_on_one_folder_keep_their_own_points(tmp_path):
    store = VectorStore(tmp_path / "qdrant")
    first = DenseIndex(DOCS[:2], embedder=HashingEmbedder(), store=store)
    second = DenseIndex(DOCS[2:], embedder=HashingEmbedder(), store=store)
    assert first.collection != second.collection
    assert {h.id for h in first.search("annual leave days", k=4)} == {"en-annual-01", "en-annual-01#2"}
    assert {h.id for h in second.search("annual leave days", k=4)} == {"vi-leave-01", "en-sick-01"}
    store.close()


def test_unnamed_indexes_through_ragkit_store_keep_their_own_points(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_STORE", str(tmp_path / "qdrant"))
    first = DenseIndex(DOCS[:2], embedder=HashingEmbedder())
    second = DenseIndex(DOCS[2:], embedder=HashingEmbedder())
    assert (first.store.count(first.collection), second.store.count(second.collection)) == (2, 2)
    first.store.close()
    second.store.close()


def test_a_named_collection_is_refilled_by_the_next_index_of_that_name(tmp_path):
    store = VectorStore(tmp_path / "qdrant")
    DenseIndex(DOCS[:2], embedder=HashingEmbedder(), store=store, collection="docs")
    later = DenseIndex(DOCS[2:], embedder=HashingEmbedder(), store=store, collection="docs")
    assert later.collection == "docs" and store.count("docs") == 2
    store.close()


def test_an_unnamed_index_takes_docs_first_then_a_numbered_name(tmp_path):
    assert DenseIndex(DOCS, embedder=HashingEmbedder()).collection == "docs"  # lesson 02 counts 'docs'
    assert DenseIndex(DOCS, embedder=HashingEmbedder()).collection == "docs"  # a new in-memory store each
    store = VectorStore(tmp_path / "qdrant")
    store.create("docs", dim=3)  # a name given by hand is taken too
    names = [DenseIndex(DOCS, embedder=HashingEmbedder(), store=store).collection for _ in range(2)]
    assert names == ["docs-2", "docs-3"]
    store.close()
    reopened = VectorStore(str(tmp_path / "qdrant"))  # the same folder: its names stay taken in this process
    assert DenseIndex(DOCS, embedder=HashingEmbedder(), store=reopened).collection == "docs-4"
    reopened.close()
