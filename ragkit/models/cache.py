"""Model outputs kept on disk and reused for the same input: chat replies, embedding vectors, reranker scores.

One class, Store, keeps values by key in one SQLite table of one file; thin adapters say what a value is
and what its key covers. The benchmarks keep their corpora's vectors under EMBEDDINGS_DIR across runs.
With the model_cache setting (RAGKIT_MODEL_CACHE; `make test` sets it and empties it at the start of every
run) ragkit.models wraps the course chat model, embedder and reranker in these stores, so that a notebook
reuses what an earlier one computed for the same input instead of computing it again. A llama.cpp reply
depends only on the model file, the llama.cpp build and the request, because the prompt cache is off (see
ragkit.models.llm); put everything that changes a vector into the model name (e.g. "...:passage" and "...:query").

Corruption policy, the same for every store. A store is a cache: damage warns (warnings.warn, naming the
file and the reason), never raises, and never costs more than what is damaged.
- A file SQLite cannot read (not a database, a malformed image, a table of another layout) is moved aside
  to `<name>.corrupt` (replacing an older one) and a fresh file is started; the call goes on with it.
- A row whose value cannot be decoded is deleted alone; the other rows stay.
- A file that cannot be opened or written (locked, read-only, a folder that is a file) is left as it is:
  reads count as misses, and what could not be saved is computed again next time.
- Vectors whose width differs from what the model gives now mean the model changed under the same name:
  the table is emptied and filled again.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ragkit.config import cache_dir, load_settings
from ragkit.corpus import passage_text
from ragkit.models.llm import ChatReply

EMBEDDINGS_DIR = cache_dir() / "embeddings"
CORRUPT_ERRORS = ("SQLITE_CORRUPT", "SQLITE_NOTADB")  # sqlite error names (and their extended forms)
BATCH = 500  # keys per SELECT, below SQLite's limit on bound parameters


class ForeignLayout(sqlite3.DatabaseError):
    """The file holds a table of this name with other columns: it was written by something else."""


class Store:
    """Values by key in one SQLite table of one file, under the module's corruption policy."""

    def __init__(self, path: str | Path, *, table: str, column: str,
                 encode: Callable[[Any], bytes | str], decode: Callable[[bytes | str], Any]):
        self.path = Path(path).expanduser()
        self.table, self.column = table, column
        self.encode, self.decode = encode, decode

    def get(self, key: str) -> Any | None:
        """The value stored under key, or None."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        """The values stored under keys (absent keys left out); damaged rows are deleted with a warning."""
        if not self.path.exists():
            return {}
        stored = self._run(lambda db: _select(db, self.table, self.column, list(dict.fromkeys(keys))), doing="read")
        found, damaged = {}, {}
        for key, raw in (stored or {}).items():
            try:
                found[key] = self.decode(raw)
            except (TypeError, ValueError) as err:
                damaged[key] = err
        if damaged:
            self._delete(damaged)
        return found

    def put_many(self, values: Mapping[str, Any]) -> None:
        """Store values under their keys (replacing older ones) in one transaction."""
        records = [(key, self.encode(value)) for key, value in values.items()]
        self._run(lambda db: db.executemany(f"INSERT OR REPLACE INTO {self.table} VALUES (?, ?)", records),
                  doing="save")

    def clear(self, reason: str) -> None:
        """Warn and delete every row, for when the stored values no longer fit the model."""
        _warn(f"model cache {self.path} is unusable ({reason}); rebuilding it")
        self._run(lambda db: db.execute(f"DELETE FROM {self.table}"), doing="clear")

    def _delete(self, damaged: Mapping[str, Exception]) -> None:
        """Warn and delete the damaged rows alone."""
        reason = next(iter(damaged.values()))
        _warn(f"model cache {self.path}: {len(damaged)} damaged row(s) deleted ({reason}); rebuilding them, "
              "the other rows are kept")
        rows = [(key,) for key in damaged]
        self._run(lambda db: db.executemany(f"DELETE FROM {self.table} WHERE key = ?", rows), doing="repair")

    def _run(self, operation: Callable[[sqlite3.Connection], Any], *, doing: str) -> Any | None:
        """operation in one transaction; a corrupt file is moved aside and the operation run on a fresh one."""
        for attempt in (1, 2):
            try:
                with closing(self._connect()) as db, db:
                    return operation(db)
            except (sqlite3.Error, OSError) as err:
                if attempt == 1 and _is_corrupt(err) and self._move_aside(err):
                    continue
                _warn(f"could not {doing} the model cache {self.path}: {err}")
        return None

    def _connect(self) -> sqlite3.Connection:
        """Open (creating if needed) the file and its table; ForeignLayout if the table has other columns."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30)
        try:
            db.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (key TEXT PRIMARY KEY, {self.column} BLOB NOT NULL)")
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({self.table})")]
            if columns != ["key", self.column]:
                raise ForeignLayout(f"table {self.table} has columns {columns}, not ['key', '{self.column}']")
        except BaseException:
            db.close()
            raise
        return db

    def _move_aside(self, reason: Exception) -> bool:
        """Move the unreadable file to <name>.corrupt with a warning; False if it cannot be moved."""
        aside = self.path.with_name(self.path.name + ".corrupt")
        try:
            self.path.replace(aside)
            for suffix in ("-journal", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        except FileNotFoundError:
            pass  # another process moved it first
        except OSError:
            return False
        _warn(f"model cache {self.path} is unreadable ({reason}); moved it aside to {aside.name} and rebuilding it")
        return True


def _select(db: sqlite3.Connection, table: str, column: str, keys: list[str]) -> dict[str, Any]:
    """The raw stored values of keys, a batch of keys per query."""
    rows: dict[str, Any] = {}
    for start in range(0, len(keys), BATCH):
        batch = keys[start:start + BATCH]
        rows.update(db.execute(f"SELECT key, {column} FROM {table} WHERE key IN ({','.join('?' * len(batch))})",
                               batch))
    return rows


def _is_corrupt(err: Exception) -> bool:
    """Whether err says the file itself is damaged (not merely locked, read-only or out of reach)."""
    return isinstance(err, ForeignLayout) or (getattr(err, "sqlite_errorname", None) or "").startswith(CORRUPT_ERRORS)


def _warn(message: str) -> None:
    warnings.warn(message, stacklevel=4)


def model_slug(model: str) -> str:
    """A folder name for a model: its name made path-safe, plus a short hash so names never collide."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.")[:80] or "model"
    return f"{readable}-{hashlib.sha256(model.encode()).hexdigest()[:8]}"


# --- chat replies -------------------------------------------------------------------------------------


def stored_reply(text: str) -> ChatReply:
    """A ChatReply from its stored JSON (pairs of top_logprobs back to tuples, as they were put)."""
    fields = json.loads(text)
    fields["top_logprobs"] = tuple(map(tuple, fields.get("top_logprobs", ())))
    return ChatReply(**fields)


class ReplyCache:
    """Chat replies in one store under folder, keyed by ragkit.models.llm.reply_key; counts hits and misses."""

    def __init__(self, folder: str | Path):
        self.store = Store(Path(folder).expanduser() / "replies.sqlite", table="replies", column="reply",
                           encode=lambda reply: json.dumps(asdict(reply)),
                           decode=stored_reply)
        self.path = self.store.path
        self.hits = self.misses = 0

    def get(self, key: str) -> ChatReply | None:
        """The stored reply for key, or None."""
        reply = self.store.get(key)
        if reply is None:
            self.misses += 1
        else:
            self.hits += 1
        return reply

    def put(self, key: str, reply: ChatReply) -> None:
        """Store reply under key (replacing an older one)."""
        self.store.put_many({key: reply})


# --- rows of floats: embedding vectors and reranker scores --------------------------------------------


class VectorCache:
    """Float rows in one store per model name, keyed by sha256(model + NUL + text); one width per store."""

    FILE, TABLE, COLUMN = "embeddings.sqlite", "rows", "vector"  # the layout of the embedding stores

    def __init__(self, model: str, *, root: str | Path = EMBEDDINGS_DIR):
        self.model = model
        self.store = Store(Path(root) / model_slug(model) / self.FILE, table=self.TABLE, column=self.COLUMN,
                           encode=lambda row: row.astype("<f4").tobytes(), decode=_row)
        self.path = self.store.path
        self.encoded = 0  # texts computed by this object (misses)
        self.reused = 0  # texts served from disk (hits)

    def key(self, text: str) -> str:
        """The store key of one text under this model."""
        return hashlib.sha256(f"{self.model}\0{text}".encode()).hexdigest()

    def rows(self, texts: Sequence[str], compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """Rows for texts as a float32 matrix, calling compute once on the texts not stored yet, in order."""
        keys = [self.key(text) for text in texts]
        found = self.store.get_many(keys)
        todo = {key: text for key, text in zip(keys, texts) if key not in found}  # first occurrences, in order
        fresh = dict(zip(todo, _matrix(compute, list(todo.values())))) if todo else {}
        if len({row.shape for row in [*found.values(), *fresh.values()]}) > 1:
            self.store.clear("its rows and the model's differ in width: the model changed under the same name")
            found, todo = {}, dict(zip(keys, texts))
            fresh = dict(zip(todo, _matrix(compute, list(todo.values()))))
        if fresh:
            self.store.put_many(fresh)
        self.encoded += len(todo)
        self.reused += len(texts) - len(todo)
        found.update(fresh)
        return np.stack([found[key] for key in keys]) if keys else np.zeros((0, 0), dtype=np.float32)


class EmbeddingCache(VectorCache):
    """Embedding vectors on disk, one store per model name (the benchmarks' corpora, CachedEmbedder)."""

    def embed(self, texts: Sequence[str], encode_fn: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """Vectors for texts, calling encode_fn once on the texts not stored yet."""
        return self.rows(texts, encode_fn)


class ScoreCache(VectorCache):
    """Reranker scores on disk, one number per (query, passage) pair, in their own file and table."""

    FILE, TABLE, COLUMN = "scores.sqlite", "scores", "score"

    def score(self, query: str, docs: Sequence, score_fn: Callable[[list], np.ndarray]) -> np.ndarray:
        """Scores of docs for query, calling score_fn only on the docs whose pair is not stored yet."""
        keys = [f"{query}\0{passage_text(doc)}" for doc in docs]
        doc_of = dict(zip(keys, docs))
        rows = self.rows(keys, lambda todo: np.reshape(score_fn([doc_of[key] for key in todo]), (-1, 1)))
        return rows[:, 0] if keys else np.zeros(0, dtype=np.float32)


def _matrix(compute: Callable[[list[str]], np.ndarray], texts: list[str]) -> np.ndarray:
    """compute(texts) as a float32 matrix with one row per text."""
    matrix = np.asarray(compute(texts), dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != len(texts):
        raise ValueError(f"encode_fn returned shape {matrix.shape} for {len(texts)} texts; expected one row per text")
    return matrix


def _row(blob: bytes | str) -> np.ndarray:
    """One stored row (little-endian float32 bytes) as an array; refuses a damaged one."""
    if not isinstance(blob, bytes) or not blob or len(blob) % 4:
        raise ValueError("a stored vector is not a whole number of float32 values")
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


# --- models wrapped in a store --------------------------------------------------------------------------


def model_identity(model) -> str:
    """What names a model's outputs in a store: its own `identity` if it has one, else its class and name."""
    return getattr(model, "identity", None) or f"{type(model).__name__} {model.name}"


class CachedEmbedder:
    """An embedder whose vectors are kept in EmbeddingCaches under folder (queries and passages apart)."""

    def __init__(self, inner, folder: str | Path):
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        identity = model_identity(inner)
        self.queries = EmbeddingCache(f"{identity}:query", root=folder)
        self.passages = EmbeddingCache(f"{identity}:passage", root=folder)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors, encoded only for texts not cached yet."""
        return self.queries.embed(list(texts), self.inner.embed_queries) if texts else self.inner.embed_queries([])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Passage vectors, encoded only for texts not cached yet."""
        return self.passages.embed(list(texts), self.inner.embed_passages) if texts else self.inner.embed_passages([])


class CachedReranker:
    """A reranker whose (query, passage) scores are kept in a ScoreCache under folder."""

    def __init__(self, inner, folder: str | Path):
        self.inner, self.name = inner, inner.name
        self.scores = ScoreCache(f"{model_identity(inner)} scores", root=folder)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def score(self, query: str, docs: Sequence) -> np.ndarray:
        """The inner reranker's scores, computed only for pairs not cached yet."""
        if not docs:
            return self.inner.score(query, docs)
        return self.scores.score(query, docs, lambda todo: self.inner.score(query, todo))


def reply_store(model_cache: str | None = None) -> ReplyCache | None:
    """The store of chat replies under the model_cache setting (or the folder given), or None when it is off."""
    folder = load_settings().model_cache if model_cache is None else model_cache
    return ReplyCache(Path(folder) / "replies") if folder else None


@contextmanager
def atomic_folder(out_dir: Path) -> Iterator[Path]:
    """A '<out_dir>.partial' folder to write into, renamed to out_dir only if the block finishes."""
    out_dir = Path(out_dir)
    partial, old = (out_dir.with_name(out_dir.name + suffix) for suffix in (".partial", ".old"))
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        yield partial
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    if out_dir.exists():
        out_dir.rename(old)
    partial.rename(out_dir)
    shutil.rmtree(old, ignore_errors=True)
