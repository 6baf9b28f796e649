"""Qdrant collections: embedded (:memory: or a folder) by default, a server by URL to scale out.

Taught in lessons/02_embeddings.ipynb.
"""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Sequence

import numpy as np

from ragkit.config import load_settings
from ragkit.corpus import Doc, Hit
from ragkit.errors import BackendUnreachable, CorpusError

ID_NAMESPACE = uuid.UUID("6f1c1c1e-3b8e-4d52-9d1a-2a1c0ffee000")
PAYLOAD_FIELDS = ("id", "text", "title", "source", "lang", "topic", "parent_id")


def point_id(doc_id: str) -> str:
    """A stable Qdrant point id for a doc id, so upserting the same doc twice overwrites it."""
    return str(uuid.uuid5(ID_NAMESPACE, doc_id))


class VectorStore:
    """A Qdrant client opened on ':memory:', a local folder, or an http(s) URL."""

    def __init__(self, location: str | Path | None = None, *, api_key: str | None = None):
        from qdrant_client import QdrantClient

        self.location = str(location or load_settings().store)
        if self.location.startswith(("http://", "https://")):
            self._client = QdrantClient(url=self.location, api_key=api_key, timeout=10)
        elif self.location == ":memory:":
            self._client = QdrantClient(":memory:")
        else:
            self._client = QdrantClient(path=self.location)

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
        """Release the client (a local folder can then be opened again)."""
        self._client.close()

    def _reachable(self):
        return _qdrant_errors(self.location)


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
