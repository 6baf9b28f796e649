"""Runners that score a pipeline, an answer function or a reader on every question of a gold set.

Taught in lessons/01_bag_of_words.ipynb (evaluate_retrieval) and lessons/08_evaluation.ipynb (the rest).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ragkit.corpus import Question, Search
from ragkit.evaluate.metrics import (
    answers_of,
    check_ks,
    check_metrics,
    exact_match,
    mean,
    metric_keys,
    relevance_of,
    score_ranking,
    token_f1,
)


@dataclass(frozen=True)
class Evaluation:
    """Mean metric values over a gold set, each question's values, and the mean seconds per question."""

    means: dict[str, float]
    per_question: tuple[dict, ...] = ()
    seconds_per_query: float = 0.0


def _check_gold(gold: Sequence[Question]) -> None:
    """Refuse an empty gold set."""
    if not gold:
        raise ValueError("no gold questions to evaluate on")


def _means(rows: Sequence[dict], keys: Iterable[str]) -> dict[str, float]:
    """The mean of each key over the rows."""
    return {key: mean(row[key] for row in rows) for key in keys}


def evaluate_pipeline(pipeline: Search, gold: Sequence[Question], *,
                      metrics: Sequence[str] = ("recall", "ndcg", "mrr"), ks: Sequence[int] = (1, 5, 10)) -> Evaluation:
    """Run pipeline(query, k=max(ks)) on every gold question and average the retrieval metrics."""
    _check_gold(gold)
    check_metrics(metrics)
    depth = check_ks(ks)
    rows = []
    for question in gold:
        started = time.perf_counter()
        ids = [hit.id for hit in pipeline(question.query, k=depth)]
        seconds = time.perf_counter() - started
        try:
            scores = score_ranking(ids, relevance_of(question), metrics=metrics, ks=ks)
        except ValueError as err:
            raise ValueError(f"question {question.id!r}: {err}") from None
        rows.append({"id": question.id, **scores, "retrieved": tuple(ids), "seconds": seconds})
    means = _means(rows, metric_keys(metrics, ks=ks))
    return Evaluation(means, tuple(rows), mean(row["seconds"] for row in rows))


def evaluate_answers(answer_fn: Callable[[str], str], gold: Sequence[Question]) -> Evaluation:
    """Run answer_fn(query) on every gold question; mean exact match and token F1, best over the aliases."""
    _check_gold(gold)
    rows = []
    for question in gold:
        answers = answers_of(question)
        started = time.perf_counter()
        prediction = answer_fn(question.query)
        seconds = time.perf_counter() - started
        if not isinstance(prediction, str):
            raise TypeError(f"answer_fn must return a string, got {type(prediction).__name__} for {question.id!r}")
        rows.append({"id": question.id, "exact_match": exact_match(prediction, answers),
                     "f1": token_f1(prediction, answers), "prediction": prediction, "seconds": seconds})
    return Evaluation(_means(rows, ("exact_match", "f1")), tuple(rows), mean(row["seconds"] for row in rows))


def evaluate_retrieval(search: Search, questions: Sequence[Question], *,
                       ks: Sequence[int] = (1, 5)) -> dict[str, float]:
    """Mean recall@k for each k, and MRR over the first max(ks) hits (mrr@max(ks)).

    Taught in lessons/01_bag_of_words.ipynb.
    """
    return evaluate_pipeline(search, questions, metrics=("recall", "mrr"), ks=ks).means


