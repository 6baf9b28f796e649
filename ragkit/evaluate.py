"""Retrieval metrics over gold questions: recall@k, hit@k and MRR.

Taught in lessons/01_bag_of_words.ipynb.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ragkit.corpus import Hit, Question

Search = Callable[..., list[Hit]]  # called as search(query, k=...), like BM25Index.search


def recall_at_k(retrieved: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """Share of the relevant ids found in the first k retrieved ids."""
    if not relevant:
        raise ValueError("a gold question needs at least one relevant id")
    return len(set(retrieved[:k]) & set(relevant)) / len(set(relevant))


def hit_at_k(retrieved: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """1.0 if any relevant id is among the first k retrieved ids, else 0.0."""
    return float(bool(set(retrieved[:k]) & set(relevant)))


def reciprocal_rank(retrieved: Sequence[str], relevant: Sequence[str]) -> float:
    """1/rank of the first relevant id, 0.0 if none was retrieved."""
    return next((1.0 / rank for rank, doc_id in enumerate(retrieved, 1) if doc_id in set(relevant)), 0.0)


def evaluate_retrieval(search: Search, questions: Sequence[Question], *, ks: Sequence[int] = (1, 5)) -> dict[str, float]:
    """Mean recall@k for each k, and MRR over the first max(ks) hits, on the gold questions."""
    if not questions:
        raise ValueError("no gold questions to evaluate on")
    depth = max(ks)
    runs = [([hit.id for hit in search(q.query, k=depth)], q.relevant) for q in questions]
    means = {f"recall@{k}": _mean(recall_at_k(ids, rel, k) for ids, rel in runs) for k in ks}
    means["mrr"] = _mean(reciprocal_rank(ids, rel) for ids, rel in runs)
    return means


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def format_table(rows: Sequence[dict], *, digits: int = 3) -> str:
    """Rows of dicts as an aligned text table, floats rounded (stable under nbval)."""
    if not rows:
        return "(no rows)"
    columns = list(rows[0])
    cells = [[f"{row[c]:.{digits}f}" if isinstance(row[c], float) else str(row[c]) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)
