"""Retrieval and answer metrics: how one ranking or one answer scores against a gold question.

Retrieval metrics take the retrieved ids best first and the relevant ids: either a sequence of ids
(each of grade 1) or a mapping id → grade (grade 0 means judged not relevant). An id retrieved twice
counts once, at its first rank. A question without relevant ids, or a cut-off k < 1, is a
ValueError: a score over nothing would silently read as a miss.

Taught in lessons/01_bag_of_words.ipynb (recall@k, MRR) and lessons/08_evaluation.ipynb (the rest).
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ragkit.corpus import Question
from ragkit.text import normalize_answer

Relevance = Sequence[str] | Mapping[str, float]  # ids (grade 1 each) or id → grade

RETRIEVAL_METRICS = ("recall", "precision", "ndcg", "hit", "all_gold", "mrr")


# --- retrieval metrics, one question ---------------------------------------------------------


def grades_of(relevant: Relevance) -> dict[str, float]:
    """The relevant ids with their grades (> 0); a plain sequence of ids gives grade 1 to each."""
    if isinstance(relevant, Mapping):
        if any(grade < 0 for grade in relevant.values()):
            raise ValueError("relevance grades must be 0 or more")
        graded = {doc_id: grade for doc_id, grade in relevant.items() if grade > 0}
    else:
        if isinstance(relevant, str):
            raise TypeError("relevant must be a sequence of ids or a mapping id → grade, not one string")
        graded = dict.fromkeys(relevant, 1)
    if not graded:
        raise ValueError("a gold question needs at least one relevant id")
    return graded


def _top(retrieved: Sequence[str], k: int) -> list[str]:
    """The first k retrieved ids, refusing a cut-off below 1."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"k must be a whole number of at least 1, got {k!r}")
    return list(retrieved[:k])


def recall_at_k(retrieved: Sequence[str], relevant: Relevance, k: int) -> float:
    """Share of the relevant ids found in the first k retrieved ids. Taught in lessons/01_bag_of_words.ipynb."""
    graded = grades_of(relevant)
    return len(set(_top(retrieved, k)) & graded.keys()) / len(graded)


def precision_at_k(retrieved: Sequence[str], relevant: Relevance, k: int) -> float:
    """Relevant ids in the first k retrieved, divided by k (as trec_eval's P_k, short lists included)."""
    graded = grades_of(relevant)
    return len(set(_top(retrieved, k)) & graded.keys()) / k


def hit_at_k(retrieved: Sequence[str], relevant: Relevance, k: int) -> float:
    """1.0 if any relevant id is among the first k retrieved ids, else 0.0."""
    graded = grades_of(relevant)
    return float(bool(set(_top(retrieved, k)) & graded.keys()))


def all_gold_at_k(retrieved: Sequence[str], relevant: Relevance, k: int) -> float:
    """1.0 if every relevant id is among the first k retrieved ids (multi-hop needs all), else 0.0."""
    graded = grades_of(relevant)
    return float(graded.keys() <= set(_top(retrieved, k)))


def reciprocal_rank(retrieved: Sequence[str], relevant: Relevance) -> float:
    """1/rank of the first relevant id, 0.0 if none was retrieved. Taught in lessons/01_bag_of_words.ipynb."""
    graded = grades_of(relevant)
    return next((1.0 / rank for rank, doc_id in enumerate(retrieved, 1) if doc_id in graded), 0.0)


def dcg(gains: Iterable[float]) -> float:
    """Discounted cumulative gain: the gain at rank r counts gain / log2(r + 1)."""
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, 1))


def ndcg_at_k(retrieved: Sequence[str], relevant: Relevance, k: int) -> float:
    """DCG of the first k retrieved over the ideal DCG (grades sorted), as trec_eval's ndcg_cut_k."""
    graded = grades_of(relevant)
    seen: set[str] = set()
    gains = []
    for doc_id in _top(retrieved, k):
        gains.append(0.0 if doc_id in seen else graded.get(doc_id, 0.0))
        seen.add(doc_id)
    ideal = sorted(graded.values(), reverse=True)[:k]
    return dcg(gains) / dcg(ideal)


def supporting_evidence_recall(retrieved: Iterable[str], supporting: Iterable[str], *, k: int | None = None) -> float:
    """Share of the gold supporting ids among the retrieved ids (a set, or a ranked list cut at k)."""
    gold = set(supporting)
    if not gold:
        raise ValueError("a gold question needs at least one supporting id")
    if k is not None:
        if not isinstance(retrieved, Sequence):
            raise TypeError("k needs the retrieved ids as a ranked list, not a set")
        retrieved = _top(retrieved, k)
    return len(set(retrieved) & gold) / len(gold)


# --- answer metrics ----------------------------------------------------------------------------

def _aliases(gold: str | Sequence[str]) -> list[str]:
    """The gold answers as a non-empty list."""
    aliases = [gold] if isinstance(gold, str) else list(gold)
    if not aliases:
        raise ValueError("a gold question needs at least one answer")
    return aliases


def exact_match(prediction: str, gold: str | Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold alias, else 0.0."""
    return max(float(normalize_answer(prediction) == normalize_answer(alias)) for alias in _aliases(gold))


def _f1(prediction: str, alias: str) -> float:
    """Token F1 against one alias; two empty answers agree (SQuAD 2.0's rule)."""
    predicted, expected = normalize_answer(prediction).split(), normalize_answer(alias).split()
    if not predicted or not expected:
        return float(predicted == expected)
    common = sum((Counter(predicted) & Counter(expected)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, gold: str | Sequence[str]) -> float:
    """Harmonic mean of token precision and recall after normalisation, best over the gold aliases."""
    return max(_f1(prediction, alias) for alias in _aliases(gold))


def contains_gold(prediction: str, gold: str | Sequence[str]) -> float:
    """1.0 if a normalised gold alias occurs in the normalised prediction as whole words, else 0.0."""
    said = f" {normalize_answer(prediction or '')} "
    return max(float(bool(key) and f" {key} " in said) for key in map(normalize_answer, _aliases(gold)))


def answers_of(question: Question) -> tuple[str, ...]:
    """A question's gold answer, then its extra["answer_aliases"], then legacy extra["aliases"], without repeats."""
    aliases: list[str] = []
    for key in ("answer_aliases", "aliases"):
        value = question.extra.get(key) or ()
        aliases.extend((value,) if isinstance(value, str) else value)
    answers = tuple(dict.fromkeys(a for a in (question.answer, *aliases) if a))
    if not answers:
        raise ValueError(f"question {question.id!r} has no gold answer")
    return answers


def relevance_of(question: Question) -> Relevance:
    """A question's graded relevance (Question.extra["grades"], as BEIR qrels give), else its relevant ids."""
    return question.extra.get("grades") or question.relevant


# --- several metrics, one question ---------------------------------------------------------


def check_ks(ks: Sequence[int]) -> int:
    """The deepest cut-off, refusing no cut-offs or one below 1."""
    if not ks:
        raise ValueError("give at least one cut-off k")
    for k in ks:
        _top((), k)
    return max(ks)


def check_metrics(metrics: Sequence[str]) -> None:
    """Refuse unknown metric names, naming the known ones."""
    unknown = [m for m in metrics if m not in RETRIEVAL_METRICS]
    if unknown or not metrics:
        raise ValueError(f"unknown metrics {unknown}; choose from {', '.join(RETRIEVAL_METRICS)}")


_AT_K = {"recall": recall_at_k, "precision": precision_at_k, "ndcg": ndcg_at_k,
         "hit": hit_at_k, "all_gold": all_gold_at_k}


def metric_keys(metrics: Sequence[str], *, ks: Sequence[int]) -> list[str]:
    """The names of the scores, like "recall@5" and "mrr@10", in the order of metrics then ks.

    MRR looks only at the first max(ks) hits, so its name carries that cut-off."""
    keys: list[str] = []
    for metric in metrics:
        keys += [f"mrr@{max(ks)}"] if metric == "mrr" else [f"{metric}@{k}" for k in ks]
    return list(dict.fromkeys(keys))


def score_ranking(retrieved: Sequence[str], relevant: Relevance, *,
                  metrics: Sequence[str], ks: Sequence[int]) -> dict[str, float]:
    """One question's metrics, keyed like "recall@5" and "mrr@10", in the order of metrics then ks."""
    scores = {}
    for metric in metrics:
        if metric == "mrr":
            scores[f"mrr@{max(ks)}"] = reciprocal_rank(_top(retrieved, max(ks)), relevant)
        else:
            scores.update({f"{metric}@{k}": _AT_K[metric](retrieved, relevant, k) for k in ks})
    return scores


def mean(values: Iterable[float]) -> float:
    """The arithmetic mean; NaN for no values (there is no mean of nothing, and NaN cannot pass for a score)."""
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """The chance that a random positive scores above a random negative (ties count half); NaN without both."""
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores for {len(labels)} labels")
    positives = [s for s, label in zip(scores, labels) if label]
    negatives = [s for s, label in zip(scores, labels) if not label]
    if not positives or not negatives:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))
