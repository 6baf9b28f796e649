"""Lesson 03's exercise checks: a right answer passes, a typical wrong one fails with a pointer."""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from ragkit.corpus import Doc, Hit, Question
from ragkit.evaluate.runners import evaluate_retrieval
from ragkit.exercises import ExerciseFailed, check_exercise
from ragkit.search.rewrite import Rewrite

QUESTIONS = [Question(f"q{i}", f"question {i}", (f"d{i}",), style="paraphrase" if i % 2 else "keyword")
             for i in range(6)]
REWRITES = {q.id: Rewrite(q.query, (f"better {q.query}",)) for q in QUESTIONS}


def bm25_with_tops(tops):
    """A stand-in for BM25Index: each question's scores, whose maximum is its top score."""
    return SimpleNamespace(scores=lambda query: np.array([0.0, tops[query]]))


BM25 = bm25_with_tops({q.query: float(i + 1) for i, q in enumerate(QUESTIONS)})  # median 3.5: q0, q1, q2 are weak
SELECTIVE = [replace(q, query=REWRITES[q.id].queries[0]) if i < 3 else q for i, q in enumerate(QUESTIONS)]


def exercise_3_1(**changes):
    names = {"selective": SELECTIVE, "calls": 3, "questions": QUESTIONS, "bm25": BM25, "rewrites": REWRITES}
    return check_exercise("3.1", {**names, **changes})


def test_3_1_rewriting_exactly_the_weak_questions_passes():
    assert exercise_3_1()
    assert exercise_3_1(selective=SELECTIVE[::-1], calls=np.int64(3))


def test_3_1_a_question_at_the_median_may_go_either_way():
    tied = bm25_with_tops({q.query: top for q, top in zip(QUESTIONS, (1.0, 2.0, 3.0, 3.0, 4.0, 5.0))})  # median 3
    kept = [replace(q, query=REWRITES[q.id].queries[0]) if i < 2 else q for i, q in enumerate(QUESTIONS)]
    assert exercise_3_1(bm25=tied, selective=kept, calls=2)
    assert exercise_3_1(bm25=tied, selective=SELECTIVE, calls=3)


@pytest.mark.parametrize("changes, message", [
    ({"selective": [replace(q, query=REWRITES[q.id].queries[0]) for q in QUESTIONS]}, "q3 is not weak"),
    ({"selective": QUESTIONS}, "q0 is weak .* give it its rewrite from section 4"),
    ({"selective": [replace(q, query="another text") if i < 3 else q for i, q in enumerate(QUESTIONS)]},
     "give it its rewrite"),
    ({"calls": 6}, "3 of the 6 questions score below the median"),
    ({"calls": 3.0}, "a whole number"),
    ({"selective": SELECTIVE[:5]}, "each of the 6 gold questions once"),
    ({"selective": SELECTIVE + SELECTIVE[:1]}, "each of the 6 gold questions once"),
    ({"selective": [q.query for q in SELECTIVE]}, "Question objects"),
])
def test_3_1_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_3_1(**changes)


DOCS = {f"d{i}": Doc(f"d{i}", f"document {i}") for i in range(6)}
PARAPHRASES = [q for q in QUESTIONS if q.style == "paraphrase"]  # q1, q3, q5
HYDE_HITS = {q.query: [Hit(DOCS[f"d{(int(q.id[1:]) + shift) % 6}"], 1.0 - shift / 10) for shift in (1, 0, 2, 3, 4)]
             for q in PARAPHRASES}  # the answer at rank 2 for each


def exercise_3_2(**changes):
    names = {"paraphrases": PARAPHRASES, "hyde_hits": HYDE_HITS, "questions": QUESTIONS, "by_id": DOCS,
             "hyde_scores": evaluate_retrieval(lambda query, k: HYDE_HITS[query][:k], PARAPHRASES, ks=(1, 5))}
    return check_exercise("3.2", {**names, **changes})


def test_3_2_the_paraphrases_searched_with_a_passage_pass():
    assert exercise_3_2()
    assert exercise_3_2(hyde_scores={"recall@1": 0.0, "recall@5": 1.0, "mrr@5": 0.5})


@pytest.mark.parametrize("changes, message", [
    ({"hyde_scores": {"recall@1": 1.0, "recall@5": 1.0, "mrr@5": 1.0}}, "the hits in `hyde_hits` give 0.500"),
    ({"hyde_scores": {"recall@1": 0.0, "mrr@5": 0.5}}, "no recall@5"),
    ({"hyde_scores": 0.5}, "what evaluate_retrieval returns"),
    ({"paraphrases": QUESTIONS}, "only paraphrase questions"),
    ({"paraphrases": PARAPHRASES[:2]}, "each of the 3 paraphrase questions"),
    ({"hyde_hits": {query: hits for query, hits in list(HYDE_HITS.items())[:2]}}, "no hits for q5"),
    ({"hyde_hits": {**HYDE_HITS, "question 1": [Hit(Doc("other", "x"), 1.0)]}}, "should be handbook documents"),
    ({"hyde_hits": {**HYDE_HITS, "question 1": [Hit(DOCS["d1"], 1.0)] * 2}}, "a document twice"),
    ({"hyde_hits": list(HYDE_HITS.values())}, "should map each question's text"),
])
def test_3_2_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_3_2(**changes)


DENSE = {"recall@1": 0.679, "recall@5": 0.821, "mrr@5": 0.741}
BY_COUNT = {0: dict(DENSE), 1: {"recall@1": 0.375, "recall@5": 0.679, "mrr@5": 0.486},
            2: {"recall@1": 0.339, "recall@5": 0.518, "mrr@5": 0.410},
            5: {"recall@1": 0.304, "recall@5": 0.500, "mrr@5": 0.371}}


EXPANSIONS = {"q1": Rewrite("q", ("q", "a generated question"), "", ()), "q2": Rewrite("r", ("r",), "", ())}


def exercise_3_3(**changes):
    return check_exercise("3.3", {"by_count": BY_COUNT, "baseline": {"dense": {"retriever": "dense", **DENSE}},
                                  "expansions": EXPANSIONS, **changes})


def test_3_3_one_row_per_count_starting_at_dense_search_passes():
    assert exercise_3_3()
    assert exercise_3_3(by_count={**BY_COUNT, 3: BY_COUNT[2]})
    only_the_original = {n: dict(DENSE) for n in (0, 1, 2, 5)}  # right when the model generated nothing
    assert exercise_3_3(by_count=only_the_original, expansions={"q2": EXPANSIONS["q2"]})


@pytest.mark.parametrize("changes, message", [
    ({"by_count": {n: row for n, row in BY_COUNT.items() if n}}, "should map 0, 1, 2 and 5"),
    ({"by_count": {**BY_COUNT, 0: {"recall@1": 0.482, "recall@5": 0.589, "mrr@5": 0.525}}},
     "which is dense search on the question"),
    ({"by_count": {**BY_COUNT, 2: {"recall@1": 0.339}}}, r"`by_count\[2\]` has no recall@5, mrr@5"),
    ({"by_count": {**BY_COUNT, 5: {"recall@5": 50.0, "mrr@5": 37.1}}}, "between 0 and 1"),
    ({"by_count": list(BY_COUNT.values())}, "should map 0, 1, 2 and 5"),
    ({"by_count": {n: dict(DENSE) for n in (0, 1, 2, 5)}}, "all score as the original alone, though 1 of the 2"),
])
def test_3_3_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_3_3(**changes)
