"""Reciprocal rank fusion: merge ranked lists by rank alone, so scores on different scales mix.

Taught in lessons/02_embeddings.ipynb.
"""

from __future__ import annotations

from typing import Sequence

from ragkit.corpus import Hit, Search
from ragkit.errors import EmptyQueryError

RRF_K = 60  # the constant of Cormack et al. (2009); it damps the weight of the very top ranks


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Hit]], *, k: int = RRF_K,
                           limit: int | None = None, weights: Sequence[float] | None = None) -> list[Hit]:
    """Score each doc by the sum of weight/(k + rank) over the lists (every weight 1 unless given); ties go
    to the earlier first sighting."""
    if k < 0:
        raise ValueError(f"the RRF constant k must be 0 or more, got {k}")
    weights = _checked_weights(weights, len(rankings))
    scores: dict[str, float] = {}
    docs = {}
    for ranking, weight in zip(rankings, weights):
        if weight == 0:
            continue  # a leg weighted 0 is left out, not merely outranked
        for rank, hit in enumerate(ranking, start=1):
            scores[hit.id] = scores.get(hit.id, 0.0) + weight / (k + rank)
            docs.setdefault(hit.id, hit.doc)
    first_seen = {doc_id: i for i, doc_id in enumerate(docs)}
    order = sorted(scores, key=lambda doc_id: (-scores[doc_id], first_seen[doc_id]))
    return [Hit(docs[doc_id], scores[doc_id]) for doc_id in order[:limit]]


def _checked_weights(weights: Sequence[float] | None, rankings: int) -> list[float]:
    """One weight of 0 or more a ranking (all 1 when none are given)."""
    if weights is None:
        return [1.0] * rankings
    weights = [float(w) for w in weights]
    if len(weights) != rankings:
        raise ValueError(f"give one weight a ranking: {len(weights)} weights for {rankings} rankings")
    if any(not w >= 0 for w in weights):
        raise ValueError(f"RRF weights must be 0 or more, got {weights}")
    return weights


def interleave(rankings: Sequence[Sequence[Hit]], limit: int) -> list[Hit]:
    """Round-robin over the rankings (each one's 1st, then each one's 2nd, ...), each doc once, cut at limit."""
    seen: dict[str, Hit] = {}
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking):
                seen.setdefault(ranking[rank].id, ranking[rank])
    return list(seen.values())[:limit]


def lead_then_interleave(lead: Sequence[Hit], rankings: Sequence[Sequence[Hit]], limit: int, *,
                         first: int) -> list[Hit]:
    """The top `first` of the lead ranking, then the other rankings interleaved; each doc once, cut at limit."""
    if first < 0:
        raise ValueError(f"first must be 0 or more, got {first}")
    kept = {hit.id: hit for hit in lead[:first]}
    for hit in interleave(rankings, limit + len(kept)):
        kept.setdefault(hit.id, hit)
    return list(kept.values())[:limit]


def fuse_queries(search: Search, queries: Sequence[str], *, k: int = 5,
                 depth: int = 20, rrf_k: int = RRF_K) -> list[Hit]:
    """Run one search per query (depth hits each) and fuse the lists with RRF; a query with no word the retriever
    can search with (a generated "What can I do for you?" under BM25) is left out, unless every query is.

    Taught in lessons/03_query_rewriting.ipynb.
    """
    if not queries:
        raise ValueError("no queries to search with")
    rankings, problem = [], None
    for query in queries:
        try:
            rankings.append(search(query, k=depth))
        except EmptyQueryError as err:
            problem = err
    if not rankings:
        raise problem
    return reciprocal_rank_fusion(rankings, k=rrf_k, limit=k)
