"""Embedding rows cached on disk, keyed by model and text, so a rerun skips encoding.

The benchmarks keep their corpora's vectors here across runs. With the model_cache setting
(RAGKIT_MODEL_CACHE; `make test` sets it and empties it at the start of every run) the course embedder
and reranker are wrapped so that a notebook reads the vectors and scores an earlier one computed for
the same texts instead of computing them again.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from pathlib import Path

import numpy as np

from ragkit.config import PROJECT_DIR
from ragkit.corpus import passage_text

EMBEDDINGS_DIR = PROJECT_DIR / ".cache" / "embeddings"


def model_slug(model: str) -> str:
    """A folder name for a model: its name made path-safe, plus a short hash so names never collide."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.")[:80] or "model"
    return f"{readable}-{hashlib.sha256(model.encode()).hexdigest()[:8]}"


# Put everything that changes a vector into the model name, e.g. "multilingual-e5-small:passage" and
# "...:query" for models that prefix queries differently. An unreadable cache file is rebuilt with a
# warning, never an error; rows are stored as little-endian float32 bytes, one SQLite file per model.
class EmbeddingCache:
    """Embedding rows on disk keyed by sha256(model + NUL + text), so a rerun skips encoding."""

    def __init__(self, model: str, *, root: str | Path = EMBEDDINGS_DIR):
        self.model = model
        self.path = Path(root) / model_slug(model) / "embeddings.sqlite"
        self.encoded = 0  # texts encoded by this object (cache misses)
        self.reused = 0  # texts served from disk (cache hits)

    def key(self, text: str) -> str:
        """The cache key of one text under this model."""
        return hashlib.sha256(f"{self.model}\0{text}".encode()).hexdigest()

    def embed(self, texts: Sequence[str], encode_fn: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """Rows for texts as a float32 matrix, calling encode_fn once on the uncached texts, in order."""
        keys = [self.key(text) for text in texts]
        found = self._load(keys)
        todo = {key: text for key, text in zip(keys, texts) if key not in found}  # first occurrences, in order
        fresh = dict(zip(todo, _encode(encode_fn, list(todo.values())))) if todo else {}
        if len({row.shape for row in [*found.values(), *fresh.values()]}) > 1:
            self._discard("its rows and the model's differ in width: the model changed under the same name")
            found, todo = {}, dict(zip(keys, texts))
            fresh = dict(zip(todo, _encode(encode_fn, list(todo.values()))))
        if fresh:
            self._save(fresh)
        self.encoded += len(todo)
        self.reused += len(texts) - len(todo)
        found.update(fresh)
        return np.stack([found[key] for key in keys]) if keys else np.zeros((0, 0), dtype=np.float32)

    def _connect(self) -> sqlite3.Connection:
        """Open (creating if needed) the cache database."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=30)
        connection.execute("CREATE TABLE IF NOT EXISTS rows (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        return connection

    def _load(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached rows among keys; an unreadable cache is discarded and counts as empty."""
        if not self.path.exists():
            return {}
        unique = list(dict.fromkeys(keys))
        rows: dict[str, np.ndarray] = {}
        try:
            with closing(self._connect()) as connection:
                for start in range(0, len(unique), 500):
                    chunk = unique[start:start + 500]
                    query = f"SELECT key, vector FROM rows WHERE key IN ({','.join('?' * len(chunk))})"
                    rows.update((key, _row(blob)) for key, blob in connection.execute(query, chunk))
        except (sqlite3.Error, ValueError) as err:
            self._discard(err)
            return {}
        return rows

    def _save(self, rows: Mapping[str, np.ndarray]) -> None:
        """Store new rows in one transaction; a failure only warns (they are encoded again next time)."""
        records = [(key, row.astype("<f4").tobytes()) for key, row in rows.items()]
        try:
            with closing(self._connect()) as connection, connection:
                connection.executemany("INSERT OR REPLACE INTO rows VALUES (?, ?)", records)
        except (sqlite3.Error, OSError) as err:
            warnings.warn(f"could not save embeddings to {self.path}: {err}", stacklevel=3)

    def _discard(self, reason: object) -> None:
        """Warn and delete an unusable cache file so that it is rebuilt."""
        warnings.warn(f"embedding cache {self.path} is unusable ({reason}); rebuilding it", stacklevel=4)
        try:
            for suffix in ("", "-journal", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        except OSError as err:
            warnings.warn(f"could not delete {self.path}: {err}", stacklevel=4)


def _encode(encode_fn: Callable[[list[str]], np.ndarray], texts: list[str]) -> np.ndarray:
    """encode_fn(texts) as a float32 matrix with one row per text."""
    matrix = np.asarray(encode_fn(texts), dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != len(texts):
        raise ValueError(f"encode_fn returned shape {matrix.shape} for {len(texts)} texts; expected one row per text")
    return matrix


def _row(blob: bytes) -> np.ndarray:
    """One stored vector (little-endian float32 bytes) as an array; refuses a damaged one."""
    if not isinstance(blob, bytes) or not blob or len(blob) % 4:
        raise ValueError("a stored vector is damaged")
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


class CachedEmbedder:
    """An embedder whose vectors are kept in an EmbeddingCache under folder (queries and passages apart)."""

    def __init__(self, inner, folder: str | Path):
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        identity = f"{type(inner).__name__} {inner.name}"
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
    """A reranker whose (query, passage) scores are kept in an EmbeddingCache under folder, one number a row."""

    def __init__(self, inner, folder: str | Path):
        self.inner, self.name = inner, inner.name
        self.scores = EmbeddingCache(f"{type(inner).__name__} {inner.name}:scores", root=folder)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def score(self, query: str, docs: Sequence) -> np.ndarray:
        """The inner reranker's scores, computed only for pairs not cached yet."""
        if not docs:
            return self.inner.score(query, docs)
        keys = [f"{query}\0{passage_text(doc)}" for doc in docs]
        doc_of = dict(zip(keys, docs))
        rows = self.scores.embed(keys, lambda todo: np.reshape(self.inner.score(query, [doc_of[k] for k in todo]), (-1, 1)))
        return rows[:, 0]
