"""Lesson 08's exercise checks: a right answer passes, a typical wrong one fails with a pointer."""

import numpy as np
import pytest

from ragkit.corpus import Question
from ragkit.evaluate.runners import Evaluation
from ragkit.exercises import ExerciseFailed, check_exercise

LANGS_AND_STYLES = [("en", "keyword"), ("en", "keyword"), ("vi", "paraphrase"), ("zh", "zh")]
QUESTIONS = [Question(f"q{i}", f"question {i}", (f"d{i}",), lang=lang, style=style)
             for i, (lang, style) in enumerate(LANGS_AND_STYLES)]


def run(tops, hits, seconds=0.01):
    """An Evaluation whose question i retrieved tops[i] and scored hits[i] on every metric."""
    rows = tuple({"id": q.id, "retrieved": tuple(top), "recall@5": hit, "mrr@10": hit}
                 for q, top, hit in zip(QUESTIONS, tops, hits))
    return Evaluation({"recall@5": float(np.mean(hits)), "mrr@10": float(np.mean(hits))}, rows, seconds)


RESULTS = {
    "02 hybrid (BM25 + dense, RRF)": run([["d0", "d1"], ["d1"], ["d2"], ["d3"]], [1, 1, 0, 1]),
    "04 dense → cross-encoder": run([["d1", "d0"], ["d1"], ["d2"], ["d3"]], [0.5, 1, 0, 1], 0.5),
    "02 dense (e5)": run([["d0"], ["d1"], ["d2"], ["d3"]], [1, 0, 0, 1]),
    "05 parent-child (dense children)": run([["d0"], ["d1"], ["d2"], ["d3"]], [1, 1, 0.5, 1]),
}


def test_8_1_a_reranked_hybrid_list_passes_and_the_hybrid_itself_fails(capsys):
    reranked = run([["d1", "d0"], ["d1"], ["d2"], ["d3", "d9"]], [0.5, 1, 0, 1], 0.6)
    assert check_exercise("8.1", {"hybrid_reranked": reranked, "results": RESULTS})
    with pytest.raises(ExerciseFailed, match="did the cross-encoder reorder"):
        check_exercise("8.1", {"hybrid_reranked": RESULTS["02 hybrid (BM25 + dense, RRF)"], "results": RESULTS})
    with pytest.raises(ExerciseFailed, match="rerank `hybrid.search"):
        check_exercise("8.1", {"hybrid_reranked": RESULTS["04 dense → cross-encoder"], "results": RESULTS})


def test_8_2_style_means_that_add_up_pass_and_counts_fail():
    right = {"02 dense (e5)": {"keyword": 0.5, "paraphrase": 0.0, "zh": 1.0}}
    assert check_exercise("8.2", {"recall_by_style": right, "results": RESULTS, "questions": QUESTIONS})
    counts = {"02 dense (e5)": {"keyword": 1, "paraphrase": 0, "zh": 1}}
    with pytest.raises(ExerciseFailed, match="is each question counted once"):
        check_exercise("8.2", {"recall_by_style": counts, "results": RESULTS, "questions": QUESTIONS})
    with pytest.raises(ExerciseFailed, match="the questions have"):
        check_exercise("8.2", {"recall_by_style": {"02 dense (e5)": {"keyword": 0.5}}, "results": RESULTS,
                               "questions": QUESTIONS})


def by_hand():
    """The exercise's bootstrap, written out."""
    difference = np.array([new["mrr@10"] - old["mrr@10"] for new, old in zip(
        RESULTS["05 parent-child (dense children)"].per_question, RESULTS["02 dense (e5)"].per_question)])
    rng = np.random.default_rng(0)
    means = [difference[rng.integers(0, len(difference), len(difference))].mean() for _ in range(2000)]
    return tuple(np.percentile(means, [2.5, 97.5]))


def test_8_3_the_exercises_bootstrap_passes_and_too_few_resamples_fail():
    assert check_exercise("8.3", {"my_interval": by_hand(), "results": RESULTS})
    low, high = by_hand()
    with pytest.raises(ExerciseFailed, match="differs from paired_bootstrap"):
        check_exercise("8.3", {"my_interval": (low - 0.01, high), "results": RESULTS})
    with pytest.raises(ExerciseFailed, match="upside down"):
        check_exercise("8.3", {"my_interval": by_hand()[::-1], "results": RESULTS})


def answered_with(exact_full, exact_gold):
    """The reader's rows of two contexts, with the given exact matches."""
    return {name: Evaluation({}, tuple({"exact_match": float(m)} for m in matches))
            for name, matches in (("full pipeline", exact_full), ("reader on the gold passages", exact_gold))}


def miss_rows(full, gold):
    """Two rows a context (English, other languages) from (exact, retrieval, abstained, wrong) counts."""
    kinds = ("exact", "retrieval", "abstained", "wrong answer")
    return [{"context": name, "questions": group, **dict(zip(kinds, counts))}
            for name, rows in (("full pipeline", full), ("reader on the gold passages", gold))
            for group, counts in zip(("English", "other languages"), rows)]


def test_8_4_counts_of_every_question_pass_and_a_gold_retrieval_miss_fails():
    answered = answered_with([1, 0, 0, 0], [1, 1, 0, 0])
    right = miss_rows([(1, 0, 1, 0), (0, 2, 0, 0)], [(2, 0, 0, 0), (0, 0, 1, 1)])
    assert check_exercise("8.4", {"miss_table": right, "answered": answered, "answer_sample": QUESTIONS})
    gold_miss = miss_rows([(1, 0, 1, 0), (0, 2, 0, 0)], [(2, 0, 0, 0), (0, 1, 0, 1)])
    with pytest.raises(ExerciseFailed, match="gold context always holds"):
        check_exercise("8.4", {"miss_table": gold_miss, "answered": answered, "answer_sample": QUESTIONS})
    twice = miss_rows([(1, 1, 1, 0), (0, 2, 0, 0)], [(2, 0, 0, 0), (0, 0, 1, 1)])
    with pytest.raises(ExerciseFailed, match="count each question once"):
        check_exercise("8.4", {"miss_table": twice, "answered": answered, "answer_sample": QUESTIONS})
    by_style = miss_rows([(1, 0, 0, 0), (0, 2, 1, 0)], [(1, 0, 0, 0), (1, 0, 1, 1)])
    with pytest.raises(ExerciseFailed, match="questions in English"):
        check_exercise("8.4", {"miss_table": by_style, "answered": answered, "answer_sample": QUESTIONS})
