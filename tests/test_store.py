"""ragkit.store: Qdrant in memory and in a folder, with small hand-made vectors (no model)."""

import numpy as np
import pytest

from ragkit.corpus import Doc, Hit
from ragkit.errors import BackendUnreachable, CorpusError
from ragkit.store import VectorStore, point_id

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
