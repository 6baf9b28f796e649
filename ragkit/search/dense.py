"""Dense retrieval: embed docs once into a Qdrant collection, embed the query, take the nearest.

Hybrid search fuses a keyword and a dense ranking with reciprocal rank fusion.
Taught in lessons/02_embeddings.ipynb.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ragkit.corpus import Doc, Hit, Search, check_docs, check_query, passage_text
from ragkit.models import resolve
from ragkit.models.embeddings import Embedder, unit_rows
from ragkit.search.fusion import RRF_K, reciprocal_rank_fusion
from ragkit.search.store import VectorStore


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of a with each row of b (0 against a zero row)."""
    return unit_rows(a) @ unit_rows(b).T


class DenseIndex:
    """Docs embedded once and kept in a Qdrant collection; search embeds the query and asks Qdrant.

    Without a collection name, an index takes the first of docs, docs-2, docs-3, ... that this process has not
    used on its store, so indexes sharing a folder or server keep their points apart; a named collection is
    emptied and refilled.
    """

    def __init__(self, docs: Sequence[Doc], *, embedder: Embedder | None = None,
                 store: VectorStore | None = None, collection: str | None = None):
        self.docs = check_docs(list(docs))
        self._by_id = {doc.id: doc for doc in self.docs}
        self.embedder = embedder or resolve.embedder()
        self.store = store or VectorStore()
        # numbered, not random: a notebook run again on a folder store refills its collections, adding none
        self.collection = collection or self.store.new_name("docs")
        self.vectors = self.embedder.embed_passages([passage_text(doc) for doc in self.docs])
        self.store.create(self.collection, self.vectors.shape[1], recreate=True)
        self.store.upsert(self.collection, self.docs, self.vectors)

    def search(self, query: str, *, k: int = 5, where: dict | None = None) -> list[Hit]:
        """The k docs nearest the query, optionally only those whose fields match `where`."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        vector = self.embedder.embed_queries([check_query(query)])[0]
        hits = self.store.search(self.collection, vector, k=k, where=where)
        return [Hit(self._by_id.get(hit.id, hit.doc), hit.score) for hit in hits]


class HybridIndex:
    """Several retrievers (e.g. BM25 and dense) asked for `depth` hits each, fused by RRF."""

    def __init__(self, searches: Sequence[Search], *, depth: int = 50, rrf_k: int = RRF_K):
        if not searches:
            raise ValueError("a hybrid index needs at least one retriever")
        self.searches, self.depth, self.rrf_k = list(searches), depth, rrf_k

    def search(self, query: str, *, k: int = 5) -> list[Hit]:
        """The k best docs by reciprocal rank fusion of every retriever's ranking."""
        check_query(query)
        rankings = [search(query, k=max(k, self.depth)) for search in self.searches]
        return reciprocal_rank_fusion(rankings, k=self.rrf_k, limit=k)
