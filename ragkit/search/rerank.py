"""Second-stage reranking: a reranker (ragkit.models.rerankers) reorders the first stage's hits.

Taught in lessons/04_reranking.ipynb.
"""

from __future__ import annotations

from typing import Sequence

from ragkit.corpus import Hit, check_query
from ragkit.models.rerankers import Reranker


def rerank(query: str, hits: Sequence[Hit], reranker: Reranker, *, k: int | None = None) -> list[Hit]:
    """The hits reordered by the reranker's scores (ties keep their first-stage order)."""
    if not hits:
        return []
    scores = reranker.score(check_query(query), [hit.doc for hit in hits])
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
    return [Hit(hits[i].doc, float(scores[i])) for i in order[:k]]


