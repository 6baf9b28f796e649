"""Checks of lesson 08's exercises (evaluation: the ladder, its intervals and the reader's misses)."""

from __future__ import annotations

import math
from collections import Counter

from ragkit.evaluate.runners import Evaluation
from ragkit.evaluate.significance import paired_bootstrap
from ragkit.exercises.checking import exercise, require

HYBRID, DENSE_RERANKED = "02 hybrid (BM25 + dense, RRF)", "04 dense → cross-encoder"
PARENT_CHILD, DENSE = "05 parent-child (dense children)", "02 dense (e5)"
KINDS = ("exact", "retrieval", "abstained", "wrong answer")


def _top(row: dict) -> list[str]:
    """The ids a per-question row retrieved, in order."""
    return list(row["retrieved"])


@exercise("8.1", names=("hybrid_reranked", "results"),
          expects="the Evaluation that `score` returned for the hybrid top 20 reranked by the cross-encoder")
def hybrid_then_cross_encoder(hybrid_reranked, results):
    """The variant is scored on every ladder question and reorders the hybrid list, not the dense one."""
    require(isinstance(hybrid_reranked, Evaluation), "`hybrid_reranked` should be what `score(...)` returned")
    hybrid = results[HYBRID]
    require([row["id"] for row in hybrid_reranked.per_question] == [row["id"] for row in hybrid.per_question],
            "score your rung with `score`, on the same 56 questions as the ladder")
    require(any(_top(new) != _top(old) for new, old in zip(hybrid_reranked.per_question, hybrid.per_question)),
            "every ranking equals the hybrid's own: did the cross-encoder reorder the hybrid top 20?")
    require(any(_top(new) != _top(old) for new, old in
                zip(hybrid_reranked.per_question, results[DENSE_RERANKED].per_question)),
            "every ranking equals '04 dense → cross-encoder': rerank `hybrid.search(query, k=20)`, not dense")


@exercise("8.2", names=("recall_by_style", "results", "questions"),
          expects="a dict: rung name -> {style: that rung's mean recall@5 over the questions of that style}")
def recall_per_style(recall_by_style, results, questions):
    """Every ladder rung has every style, and the styles' means weighted by their sizes give the rung's mean."""
    sizes = Counter(q.style for q in questions)
    require(recall_by_style, "`recall_by_style` is empty: one entry per rung of `results`")
    for rung, by_style in recall_by_style.items():
        require(rung in results, f"{rung!r} is not a rung of `results`")
        require(set(by_style) == set(sizes), f"{rung!r} has styles {sorted(by_style)}; the questions have "
                                             f"{sorted(sizes)}")
        require(all(0.0 <= value <= 1.0 for value in by_style.values()),
                f"{rung!r}: a recall@5 outside 0..1; store each style's mean, not a count")
        overall = sum(by_style[style] * size for style, size in sizes.items()) / sum(sizes.values())
        require(math.isclose(overall, results[rung].means["recall@5"], abs_tol=1e-9),
                f"{rung!r}: the styles' means, weighted by their question counts, give {overall:.3f}, not the "
                f"rung's recall@5 {results[rung].means['recall@5']:.3f}: is each question counted once?")


@exercise("8.3", names=("my_interval", "results"),
          expects="your bootstrap's 95% interval (low, high) of parent-child's MRR@10 gain over dense")
def bootstrap_by_hand(my_interval, results):
    """The hand-made interval equals ragkit's paired bootstrap with the same seed and resamples."""
    low, high = (float(end) for end in my_interval)
    require(low <= high, f"the interval ({low:+.3f}, {high:+.3f}) is upside down: store (low, high)")
    ragkits = paired_bootstrap(results[PARENT_CHILD], results[DENSE], "mrr@10")
    require(low <= ragkits.mean <= high, f"({low:+.3f}, {high:+.3f}) does not hold the mean difference "
                                         f"{ragkits.mean:+.3f}: resample the per-question differences")
    require(math.isclose(low, ragkits.low, abs_tol=1e-12) and math.isclose(high, ragkits.high, abs_tol=1e-12),
            f"({low:+.3f}, {high:+.3f}) differs from paired_bootstrap's {ragkits}: 2,000 resamples with "
            "numpy.random.default_rng(0), each drawing len(differences) indices, then the 2.5 and 97.5 percentiles")


@exercise("8.4", names=("miss_table", "answered", "answer_sample"),
          expects="a list of rows {'context', 'questions', 'exact', 'retrieval', 'abstained', 'wrong answer'}, "
                  "one per context and language group")
def reader_misses(miss_table, answered, answer_sample):
    """Each context counts every sampled question once, split by the question's language, its exact matches
    are the reader's, and the gold passages never miss on retrieval."""
    contexts = {row["context"] for row in miss_table}
    require(contexts == {"full pipeline", "reader on the gold passages"},
            f"the contexts are {sorted(contexts)}: count 'full pipeline' and 'reader on the gold passages'")
    for context in contexts:
        rows = [row for row in miss_table if row["context"] == context]
        counted = sum(row[kind] for row in rows for kind in KINDS)
        require(counted == len(answer_sample), f"{context}: {counted} answers counted, the sample has "
                                               f"{len(answer_sample)}: count each question once")
        english = sum(q.lang == "en" for q in answer_sample)
        counted_english = sum(row[kind] for row in rows if row["questions"] == "English" for kind in KINDS)
        require(counted_english == english, f"{context}: {counted_english} English answers counted, the sample asks "
                                            f"{english} questions in English (q.lang == 'en')")
        exact = sum(row["exact_match"] == 1.0 for row in answered[context].per_question)
        require(sum(row["exact"] for row in rows) == exact,
                f"{context}: the reader matched {exact} answers exactly, your table says otherwise")
    require(all(row["retrieval"] == 0 for row in miss_table if row["context"] == "reader on the gold passages"),
            "a retrieval miss among the gold passages: the gold context always holds a gold passage")
