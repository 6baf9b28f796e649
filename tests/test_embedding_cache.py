"""ragkit.models.cache, embeddings and scores: vectors on disk keyed by model and text, and the models using them."""

import sqlite3
import warnings

import numpy as np
import pytest

from ragkit.corpus import Doc
from ragkit.models.cache import CachedEmbedder, CachedReranker, EmbeddingCache, model_slug


class FakeEncoder:
    """Encodes a text as [len(text), its first code point, 1], and counts the texts it was given."""

    def __init__(self, width=3):
        self.calls: list[list[str]] = []
        self.width = width

    def __call__(self, texts):
        self.calls.append(list(texts))
        return [[len(t), ord(t[0]) if t else 0, 1][: self.width] + [0] * (self.width - 3) for t in texts]


def expected(texts):
    return np.array([[len(t), ord(t[0]) if t else 0, 1] for t in texts], dtype=np.float32)


def test_a_rerun_reads_the_cache_instead_of_encoding(tmp_path):
    texts = ["alpha", "beta", "gamma"]
    first = FakeEncoder()
    rows = EmbeddingCache("fake/model", root=tmp_path).embed(texts, first)
    assert first.calls == [texts]
    assert rows.dtype == np.float32 and np.array_equal(rows, expected(texts))
    again = FakeEncoder()
    cache = EmbeddingCache("fake/model", root=tmp_path)  # a new process would start like this
    assert np.array_equal(cache.embed(texts, again), rows)
    assert again.calls == [] and (cache.encoded, cache.reused) == (0, 3)


def test_only_new_texts_are_encoded_once_each_in_order(tmp_path):
    cache = EmbeddingCache("fake", root=tmp_path)
    cache.embed(["b"], FakeEncoder())
    encoder = FakeEncoder()
    texts = ["zeta", "b", "yy", "zeta", "", "b"]
    rows = cache.embed(texts, encoder)
    assert encoder.calls == [["zeta", "yy", ""]]
    assert np.array_equal(rows, expected(texts))


def test_the_model_name_is_part_of_the_key(tmp_path):
    EmbeddingCache("model-a", root=tmp_path).embed(["x"], FakeEncoder())
    encoder = FakeEncoder()
    EmbeddingCache("model-b", root=tmp_path).embed(["x"], encoder)
    assert encoder.calls == [["x"]]
    assert EmbeddingCache("model-a").key("x") != EmbeddingCache("model-b").key("x")
    assert EmbeddingCache("model-a").path.parent != EmbeddingCache("model-b").path.parent


def test_model_slugs_are_path_safe_and_distinct():
    assert "/" not in model_slug("intfloat/multilingual-e5-small:passage")
    assert model_slug("a/b") != model_slug("a-b")
    assert model_slug("../..").startswith("model-")


def test_no_texts_give_an_empty_matrix_without_encoding(tmp_path):
    encoder = FakeEncoder()
    rows = EmbeddingCache("fake", root=tmp_path).embed([], encoder)
    assert rows.shape == (0, 0) and encoder.calls == []


def test_an_encoder_returning_the_wrong_number_of_rows_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="one row per text"):
        EmbeddingCache("fake", root=tmp_path).embed(["a", "b"], lambda texts: [[1.0, 2.0]])


@pytest.mark.parametrize("damage", [b"this is not a database at all" * 100, b"", "truncate"])
def test_a_corrupt_cache_is_rebuilt_with_a_warning(tmp_path, damage):
    cache = EmbeddingCache("fake", root=tmp_path)
    cache.embed(["a", "b"], FakeEncoder())
    if damage == "truncate":
        data = cache.path.read_bytes()
        cache.path.write_bytes(data[: len(data) // 2] + b"\xff" * 50)
    else:
        cache.path.write_bytes(damage)
    encoder = FakeEncoder()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = EmbeddingCache("fake", root=tmp_path).embed(["a", "b"], encoder)
    assert np.array_equal(rows, expected(["a", "b"]))
    if damage != b"":  # an empty file is a valid, empty SQLite database
        assert any("rebuilding" in str(w.message) for w in caught)
    assert encoder.calls == [["a", "b"]]
    rerun = FakeEncoder()
    EmbeddingCache("fake", root=tmp_path).embed(["a", "b"], rerun)
    assert rerun.calls == []  # the rebuilt cache works


def test_a_damaged_row_or_a_foreign_table_is_rebuilt_too(tmp_path):
    cache = EmbeddingCache("fake", root=tmp_path)
    cache.embed(["a"], FakeEncoder())
    with sqlite3.connect(cache.path) as connection:
        connection.execute("UPDATE rows SET vector = ?", (b"\x00\x01\x02",))
    with pytest.warns(UserWarning, match="rebuilding"):
        rows = cache.embed(["a"], FakeEncoder())
    assert np.array_equal(rows, expected(["a"]))
    cache.path.unlink()
    with sqlite3.connect(cache.path) as connection:
        connection.execute("CREATE TABLE rows (other TEXT)")
    with pytest.warns(UserWarning, match="rebuilding"):
        assert np.array_equal(cache.embed(["a"], FakeEncoder()), expected(["a"]))


def test_rows_of_another_width_mean_the_model_changed_and_are_re_encoded(tmp_path):
    cache = EmbeddingCache("fake", root=tmp_path)
    cache.embed(["a"], FakeEncoder())
    wider = FakeEncoder(width=5)
    with pytest.warns(UserWarning, match="changed under the same name"):
        rows = cache.embed(["a", "b"], wider)
    assert rows.shape == (2, 5) and wider.calls == [["b"], ["a", "b"]]
    assert EmbeddingCache("fake", root=tmp_path).embed(["a", "b"], FakeEncoder(width=5)).shape == (2, 5)


def test_a_cache_that_cannot_be_written_only_warns(tmp_path):
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("x")
    cache = EmbeddingCache("fake", root=blocker)
    with pytest.warns(UserWarning, match="could not save"):
        rows = cache.embed(["a"], FakeEncoder())
    assert np.array_equal(rows, expected(["a"]))


class FakeEmbedder:
    name, dim = "fake-e5", 3

    def __init__(self):
        self.calls = []

    def embed_queries(self, texts):
        self.calls.append(("query", list(texts)))
        return expected(["q" + t for t in texts])

    def embed_passages(self, texts):
        self.calls.append(("passage", list(texts)))
        return expected(texts)


def test_cached_embedder_encodes_each_text_once_per_role_and_keeps_the_name(tmp_path):
    inner = FakeEmbedder()
    cached = CachedEmbedder(inner, tmp_path)
    assert (cached.name, cached.dim) == ("fake-e5", 3)
    first = cached.embed_passages(["a", "bb"])
    again = CachedEmbedder(inner, tmp_path).embed_passages(["bb", "a"])  # a new notebook, the same store
    assert np.array_equal(again, first[::-1])
    assert np.array_equal(cached.embed_queries(["a"]), expected(["qa"]))  # a query is not read as a passage
    assert inner.calls == [("passage", ["a", "bb"]), ("query", ["a"])]


def test_cached_embedder_passes_no_texts_to_the_model(tmp_path):
    inner = FakeEmbedder()
    assert CachedEmbedder(inner, tmp_path).embed_passages([]).shape[0] == 0


def test_the_setting_wraps_the_real_course_embedder_and_its_vectors_match(tmp_path, monkeypatch):
    from ragkit import models

    monkeypatch.setenv("RAGKIT_CONFIG", "/dev/null")
    monkeypatch.delenv("RAGKIT_EMBEDDER", raising=False)
    monkeypatch.setenv("RAGKIT_MODEL_CACHE", str(tmp_path))
    embedder = models.embedder()
    assert isinstance(embedder, CachedEmbedder) and embedder.name == embedder.inner.name
    texts = ["Sick leave: message your lead on Slack before 9:00.", "Nghỉ ốm cần báo trước 9 giờ."]
    stored = embedder.embed_passages(texts)
    assert np.allclose(stored, embedder.inner.embed_passages(texts), atol=1e-5)
    assert embedder.passages.encoded == 2
    assert np.array_equal(models.embedder().embed_passages(texts[::-1]), stored[::-1])
    assert embedder.passages.reused == 2


class FakeReranker:
    name = "fake-ce"

    def __init__(self):
        self.seen = []

    def score(self, query, docs):
        self.seen += [doc.id for doc in docs]
        return np.array([len(query) + len(doc.text) for doc in docs], dtype=np.float32)


def test_cached_reranker_scores_each_pair_once_and_keys_on_the_query(tmp_path):
    inner = FakeReranker()
    docs = [Doc("a", "one"), Doc("b", "three")]
    first = CachedReranker(inner, tmp_path).score("q", docs)
    assert first.tolist() == [4.0, 6.0]
    again = CachedReranker(inner, tmp_path)
    assert again.score("q", docs[::-1]).tolist() == [6.0, 4.0] and again.name == "fake-ce"
    assert again.score("qq", docs[:1]).tolist() == [5.0]
    assert inner.seen == ["a", "b", "a"] and again.score("q", []).shape == (0,)
