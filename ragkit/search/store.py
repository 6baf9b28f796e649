"""Qdrant collections: embedded (:memory: or a folder) by default, a server by URL to scale out.

Qdrant locks a folder for one client, so every VectorStore of a process on one folder shares one client.
Taught in lessons/02_embeddings.ipynb.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain, count
from pathlib import Path
from typing import Sequence

import numpy as np

from ragkit.config import MEMORY_STORE, check_store, load_settings
from ragkit.corpus import Doc, Hit
from ragkit.errors import BackendError, BackendUnreachable, CorpusError

ID_NAMESPACE = uuid.UUID("6f1c1c1e-3b8e-4d52-9d1a-2a1c0ffee000")
PAYLOAD_FIELDS = ("id", "text", "title", "source", "lang", "topic", "parent_id")


def point_id(doc_id: str) -> str:
    """A stable Qdrant point id for a doc id, so upserting the same doc twice overwrites it."""
    return str(uuid.uuid5(ID_NAMESPACE, doc_id))


class VectorStore:
    """A Qdrant client opened on ':memory:', a local folder, or an http(s) URL (see config.check_store)."""

    def __init__(self, location: str | Path | None = None, *, api_key: str | None = None):
        self.location = _location(location)
        if self.location == MEMORY_STORE or self.location.startswith(("http://", "https://")):
            self._client = _private_client(self.location, api_key)
            self._release = weakref.finalize(self, self._client.close)
            self._names = set() if self.location == MEMORY_STORE else _names_on(self.location)
        else:
            folder = str(Path(self.location).expanduser().resolve())
            self._client = _acquire_folder(folder)
            self._release = weakref.finalize(self, _release_folder, folder)
            self._names = _names_on(folder)

    def create(self, name: str, dim: int, *, recreate: bool = False) -> None:
        """Make a cosine collection of the given dimension (kept if it exists, unless recreate)."""
        from qdrant_client import models

        with self._reachable():
            exists = self._client.collection_exists(name)
            if exists and recreate:
                self._client.delete_collection(name)
            if recreate or not exists:
                config = models.VectorParams(size=dim, distance=models.Distance.COSINE)
                self._client.create_collection(name, vectors_config=config)
        with _NAMES_LOCK:
            self._names.add(name)

    def new_name(self, prefix: str) -> str:
        """A collection name this process has not used on this store's database: prefix, else prefix-2, -3, ..."""
        with _NAMES_LOCK:
            name = next(name for name in chain([prefix], (f"{prefix}-{n}" for n in count(2)))
                        if name not in self._names)
            self._names.add(name)
            return name

    def upsert(self, name: str, docs: Sequence[Doc], vectors: np.ndarray) -> int:
        """Insert or overwrite docs with their vectors; payloads keep every Doc field."""
        from qdrant_client import models

        if len(docs) != len(vectors):
            raise CorpusError(f"{len(docs)} docs but {len(vectors)} vectors: give one vector per doc")
        points = [models.PointStruct(id=point_id(doc.id), vector=np.asarray(vector).tolist(),
                                     payload={f: getattr(doc, f) for f in PAYLOAD_FIELDS})
                  for doc, vector in zip(docs, vectors)]
        with self._reachable():
            self._client.upsert(name, points=points, wait=True)
        return len(points)

    def search(self, name: str, vector: np.ndarray, *, k: int = 5, where: dict | None = None) -> list[Hit]:
        """The k nearest docs by cosine, optionally only those whose payload matches `where`."""
        with self._reachable():
            response = self._client.query_points(name, query=np.asarray(vector).tolist(), limit=k,
                                                 query_filter=_filter(where), with_payload=True)
        return [Hit(Doc(**{f: p.payload.get(f) for f in PAYLOAD_FIELDS}), float(p.score))
                for p in response.points]

    def count(self, name: str) -> int:
        """How many points the collection holds."""
        with self._reachable():
            return self._client.count(name, exact=True).count

    def close(self) -> None:
        """Release the client; a folder's shared client closes (and unlocks) when its last store closes."""
        self._release()

    def _reachable(self):
        return _qdrant_errors(self.location)


_NAMES: dict[str, set[str]] = {}  # per folder or server URL: the collection names this process has used there
_NAMES_LOCK = threading.Lock()


def _names_on(database: str) -> set[str]:
    """The collection names this process has used on a folder or server, shared by its VectorStores there."""
    with _NAMES_LOCK:
        return _NAMES.setdefault(database, set())


def _location(location: str | Path | None) -> str:
    """A Path is a folder as it is; text (or the store setting, when None) must pass config.check_store."""
    if isinstance(location, Path):
        return str(location)
    return check_store(location or load_settings().store)


def _private_client(location: str, api_key: str | None):
    """A client of this store alone: its own in-memory database, or a connection to a server."""
    from qdrant_client import QdrantClient

    if location == MEMORY_STORE:
        return QdrantClient(MEMORY_STORE)
    return QdrantClient(url=location, api_key=api_key, timeout=10)


@dataclass
class _SharedClient:
    """The one client a process keeps on a folder, and how many open VectorStores use it."""

    client: object
    users: int = 0


_FOLDERS: dict[str, _SharedClient] = {}
_FOLDERS_LOCK = threading.Lock()


def _acquire_folder(folder: str):
    """The process's client on this (resolved) folder, opened on first use, with one more user."""
    with _FOLDERS_LOCK:
        if folder not in _FOLDERS:
            _FOLDERS[folder] = _SharedClient(_open_folder(folder))
        _FOLDERS[folder].users += 1
        return _FOLDERS[folder].client


def _release_folder(folder: str) -> None:
    """One user fewer; the last one closes the client, which frees the folder for other processes."""
    with _FOLDERS_LOCK:
        shared = _FOLDERS[folder]
        shared.users -= 1
        if shared.users == 0:
            del _FOLDERS[folder]
            shared.client.close()


def _open_folder(folder: str):
    """A Qdrant client on a folder, or an error that says what to do if another process holds it."""
    from qdrant_client import QdrantClient

    try:
        return QdrantClient(path=folder)
    except RuntimeError as err:
        if "already accessed" not in str(err):
            raise
        raise BackendError(
            f"the Qdrant folder {folder} is in use by another process (another notebook kernel or "
            "script): close or restart that kernel or process, or point RAGKIT_STORE at another folder, "
            "at :memory:, or at a Qdrant server URL such as http://localhost:6333") from err


def _filter(where: dict | None):
    from qdrant_client import models

    if not where:
        return None
    return models.Filter(must=[models.FieldCondition(key=key, match=models.MatchValue(value=value))
                               for key, value in where.items()])


@contextmanager
def _qdrant_errors(location: str):
    """Turn a connection failure to a Qdrant server into an error that says what to do."""
    import httpx
    from qdrant_client.http.exceptions import ResponseHandlingException

    try:
        yield
    except (ResponseHandlingException, httpx.ConnectError) as err:
        raise BackendUnreachable(
            f"no Qdrant server answers at {location}: start one (e.g. `docker run -p 6333:6333 "
            "qdrant/qdrant`) or set RAGKIT_STORE=:memory: to use the embedded store") from err
