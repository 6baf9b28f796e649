"""Iterative retrieval without a model: search, then search again with the query extended by what each top hit
says (its title and first sentence), and interleave the rankings. It reaches a passage the first hits name.

Taught in lessons/06_cot_rag.ipynb.
"""

from __future__ import annotations

from typing import Sequence

from ragkit.corpus import Hit, Search
from ragkit.search.fusion import interleave


def follow_up_queries(query: str, hits: Sequence[Hit], *, follow: int = 2) -> list[str]:
    """The query extended by the title and first sentence of each of the top `follow` hits."""
    return [f"{query} {hit.doc.title}. {hit.doc.text.split('. ')[0]}" for hit in hits[:follow]]


def follow_up_search(search: Search, query: str, *, k: int = 5, follow: int = 2, depth: int = 5) -> list[Hit]:
    """The query's ranking and its follow-up queries' rankings (depth each), interleaved and cut at k."""
    if follow < 0 or depth < 1:
        raise ValueError(f"follow must be 0 or more and depth at least 1, got {follow} and {depth}")
    first = search(query, k=depth)
    return interleave([first, *(search(q, k=depth) for q in follow_up_queries(query, first, follow=follow))], k)
