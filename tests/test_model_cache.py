"""ragkit.models.cache: one corruption policy for every store (replies, embeddings, reranker scores)."""

import re
import sqlite3
import warnings

import numpy as np
import pytest

from ragkit.corpus import Doc
from ragkit.models.cache import CachedEmbedder, CachedReranker, EmbeddingCache, ReplyCache, Store
from ragkit.models.llm import ChatReply
from tests.test_embedding_cache import FakeReranker  # scores len(query) + len(text), records the docs it saw

REPLY = ChatReply("Blue.", "m", prompt_tokens=5, completion_tokens=2)
DOCS = [Doc("a", "one"), Doc("b", "three")]


def encode(texts):
    return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


class Adapter:
    """Drives one adapter the same way: fill two entries, read them back, say how many the model computed."""

    def __init__(self, kind, folder):
        self.kind, self.folder = kind, folder
        self.computed = 0

    def open(self):
        if self.kind == "replies":
            return ReplyCache(self.folder)
        if self.kind == "embeddings":
            return EmbeddingCache("fake", root=self.folder)
        return CachedReranker(FakeReranker(), self.folder)

    def path(self):
        cache = self.open()
        return cache.scores.path if self.kind == "scores" else cache.path

    def fill(self):
        cache = self.open()
        if self.kind == "replies":
            cache.put("k1", REPLY)
            cache.put("k2", ChatReply("Red.", "m"))
        else:
            self.read(cache)

    def read(self, cache=None):
        """Both entries through the adapter; counts what had to be computed again."""
        cache = cache or self.open()
        if self.kind == "replies":
            replies = [cache.get("k1"), cache.get("k2")]
            self.computed += sum(reply is None for reply in replies)
            return [reply and reply.text for reply in replies]
        if self.kind == "embeddings":
            before = cache.encoded
            rows = cache.embed(["a", "bb"], encode)
            self.computed += cache.encoded - before
            return rows.tolist()
        scores = cache.score("q", DOCS)
        self.computed += len(cache.inner.seen)
        return scores.tolist()


KINDS = ["replies", "embeddings", "scores"]
EXPECTED = {"replies": ["Blue.", "Red."], "embeddings": [[1.0, 1.0], [2.0, 1.0]], "scores": [4.0, 6.0]}
TABLES = {"replies": ("replies", "reply"), "embeddings": ("rows", "vector"), "scores": ("scores", "score")}


@pytest.mark.parametrize("kind", KINDS)
def test_a_corrupt_file_is_moved_aside_with_a_warning_and_the_adapter_still_works(tmp_path, kind):
    adapter = Adapter(kind, tmp_path)
    adapter.fill()
    path = adapter.path()
    path.write_bytes(b"not a database " * 300)
    with pytest.warns(UserWarning, match=rf"{re.escape(str(path))}.*not a database.*corrupt") as caught:
        first = adapter.read()
    assert len(caught) == 1
    assert (path.with_name(path.name + ".corrupt")).read_bytes().startswith(b"not a database")
    if kind == "replies":
        assert first == [None, None]  # the replies were lost with the file: the model is asked again
        adapter.fill()
    else:
        assert first == EXPECTED[kind]  # computed again
    adapter.computed = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert adapter.read() == EXPECTED[kind]  # the fresh file holds them, no warning
    assert adapter.computed == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_row_is_deleted_alone_with_a_warning(tmp_path, kind):
    adapter = Adapter(kind, tmp_path)
    adapter.fill()
    table, column = TABLES[kind]
    with sqlite3.connect(adapter.path()) as db:
        keys = [key for key, in db.execute(f"SELECT key FROM {table} ORDER BY rowid")]
        db.execute(f"UPDATE {table} SET {column} = 'damaged' WHERE key = ?", (keys[0],))
    adapter.computed = 0
    with pytest.warns(UserWarning, match=rf"{re.escape(str(adapter.path()))}: 1 damaged row"):
        values = adapter.read()
    assert adapter.computed == 1  # only the damaged entry is missing; the other row survived
    if kind != "replies":
        assert values == EXPECTED[kind]
    with sqlite3.connect(adapter.path()) as db:
        assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == (1 if kind == "replies" else 2)
    assert not adapter.path().with_name(adapter.path().name + ".corrupt").exists()


def test_a_table_of_another_layout_counts_as_corrupt(tmp_path):
    store = Store(tmp_path / "s.sqlite", table="things", column="value", encode=str, decode=str)
    with sqlite3.connect(store.path) as db:
        db.execute("CREATE TABLE things (other TEXT)")
    with pytest.warns(UserWarning, match="columns"):
        assert store.get("k") is None
    store.put_many({"k": "v"})
    assert store.get("k") == "v" and (tmp_path / "s.sqlite.corrupt").exists()


def test_a_file_out_of_reach_is_left_in_place_and_only_warns(tmp_path):
    store = Store(tmp_path / "s.sqlite", table="things", column="value", encode=str, decode=str)
    store.path.mkdir()  # sqlite cannot open a folder: out of reach, not damaged
    with pytest.warns(UserWarning, match="could not read"):
        assert store.get_many(["k"]) == {}
    with pytest.warns(UserWarning, match="could not save"):
        store.put_many({"k": "v"})
    assert store.path.is_dir() and not (tmp_path / "s.sqlite.corrupt").exists()


def test_reranker_scores_have_their_own_name_file_and_table(tmp_path):
    cached = CachedReranker(FakeReranker(), tmp_path)
    cached.score("q", DOCS)
    assert cached.scores.model == "FakeReranker fake-ce scores"
    assert cached.scores.path.name == "scores.sqlite"
    with sqlite3.connect(cached.scores.path) as db:
        assert [name for name, in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["scores"]
    assert not list(tmp_path.rglob("embeddings.sqlite"))


def test_a_model_with_an_identity_is_stored_under_it(tmp_path):
    from tests.fakes import HashingEmbedder

    class Shifted(HashingEmbedder):
        """The same name, other vectors: it says so with its identity."""

        identity = "hashing, shifted"

        def embed_queries(self, texts):
            return super().embed_queries(texts)[:, ::-1].copy()

    plain, shifted = CachedEmbedder(HashingEmbedder(), tmp_path), CachedEmbedder(Shifted(), tmp_path)
    assert plain.name == shifted.name
    assert not np.allclose(plain.embed_queries(["sick leave"]), shifted.embed_queries(["sick leave"]))
    assert shifted.queries.path != plain.queries.path and "shifted" in str(shifted.queries.path)
