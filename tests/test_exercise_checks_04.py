"""Lesson 04's exercise checks: a right answer passes, a typical wrong one fails with a pointer."""

import pytest

from ragkit.corpus import Doc, Hit, Question
from ragkit.evaluate.runners import evaluate_pipeline
from ragkit.exercises import ExerciseFailed, check_exercise

DOCS = {f"d{i}": Doc(f"d{i}", f"document {i}") for i in range(6)}
QUESTIONS = [Question("q0", "sick leave", ("d0",), lang="en"), Question("q1", "laptop", ("d3",), lang="en"),
             Question("q2", "nghỉ ốm", ("d2",), lang="vi")]
# stage 1: d0..d5 in order for every question; the cross-encoder's scores per question, by document
CE_SCORES = {"q0": [0.4, 0.9, 0.3, 0.2, 0.1, 0.95], "q1": [0.1, 0.2, 0.3, 0.9, 0.5, 0.6],
             "q2": [0.5, 0.50003, 0.1, 0.2, 0.3, 0.4]}  # d0 and d1 near-tied for q2
STAGE1 = {q.query: [Hit(DOCS[f"d{i}"], 1 - i / 10) for i in range(6)] for q in QUESTIONS}
STAGE2 = {q.query: sorted((Hit(DOCS[f"d{i}"], s) for i, s in enumerate(CE_SCORES[q.id])), key=lambda h: -h.score)
          for q in QUESTIONS}
SCORED = {q.query: {hit.id: hit.score for hit in STAGE2[q.query]} for q in QUESTIONS}


def run_of(search):
    return evaluate_pipeline(search, QUESTIONS, metrics=("ndcg", "mrr"), ks=(5,))


def reranked_top(depth, scored=SCORED):
    return lambda query, k: sorted(STAGE1[query][:depth], key=lambda h: -scored[query][h.id])[:k]


BY_DEPTH = {depth: run_of(reranked_top(depth)) for depth in (5, 10, 20)}


def exercise_4_1(**changes):
    return check_exercise("4.1", {"by_depth": BY_DEPTH, "questions": QUESTIONS, "stage1": STAGE1, "stage2": STAGE2,
                                  **changes})


def test_4_1_each_depth_reranking_only_its_top_passes():
    assert exercise_4_1()
    rescored = {**SCORED, "nghỉ ốm": {**SCORED["nghỉ ốm"], "d0": 0.50005}}  # scored in another batch: d0 above d1
    swapped = {depth: run_of(reranked_top(depth, rescored)) for depth in (5, 10, 20)}
    assert swapped[5].per_question[2]["retrieved"][:2] == ("d0", "d1")
    assert exercise_4_1(by_depth=swapped)


@pytest.mark.parametrize("changes, message", [
    ({"by_depth": {depth: run_of(lambda query, k: STAGE2[query][:k]) for depth in (5, 10, 20)}},
     r"at depth 5, q0's list .*: d5 is not among the 5 candidates"),
    ({"by_depth": {depth: run_of(lambda query, k: STAGE1[query][:k]) for depth in (5, 10, 20)}},
     "not in the order of the cross-encoder's scores"),
    ({"by_depth": {**BY_DEPTH, 10: run_of(lambda query, k: reranked_top(10)(query, k + 1)[1:])}},
     "leaves out a candidate the cross-encoder scored higher"),
    ({"by_depth": {depth: run.means for depth, run in BY_DEPTH.items()}}, "an Evaluation"),
    ({"by_depth": {5: BY_DEPTH[5], 10: BY_DEPTH[10]}}, "should map the depths 5, 10 and 20"),
    ({"by_depth": {**BY_DEPTH, 20: evaluate_pipeline(reranked_top(20), QUESTIONS[:2], metrics=("ndcg", "mrr"),
                                                     ks=(5,))}}, "evaluated on the 3 gold questions"),
    ({"by_depth": {**BY_DEPTH, 20: evaluate_pipeline(reranked_top(20), QUESTIONS, metrics=("recall",), ks=(5,))}},
     "no nDCG@5 or no MRR"),
])
def test_4_1_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_4_1(**changes)


RU = Doc("ru-office-01", "Ежегодный отпуск", lang="ru")
VI = Doc("vi-leave-01", "Nghỉ phép năm", lang="vi")
BY_ID = {**DOCS, RU.id: RU, VI.id: VI}
TOKEN_COUNTS = {"vi-leave-01": (3, 6), "ru-office-01": (14, 15)}
MOVED_DOWN = [QUESTIONS[0], QUESTIONS[2]]  # answers d0 (1 -> 3) and d2 (3 -> 6); q1's d3 rose from 4 to 1


def exercise_4_2(**changes):
    names = {"moved_down": MOVED_DOWN, "token_counts": TOKEN_COUNTS, "questions": QUESTIONS, "stage1": STAGE1,
             "stage2": STAGE2, "by_id": BY_ID}
    return check_exercise("4.2", {**names, **changes})


def test_4_2_the_questions_moved_down_and_possible_token_counts_pass():
    assert exercise_4_2()
    assert exercise_4_2(moved_down=MOVED_DOWN[::-1], token_counts={**TOKEN_COUNTS, "d0": (0, 2)})


@pytest.mark.parametrize("changes, message", [
    ({"moved_down": QUESTIONS}, "has q1, whose answer did not rank lower"),
    ({"moved_down": MOVED_DOWN[:1]}, "leaves out q2"),
    ({"moved_down": MOVED_DOWN * 2}, "lists a question twice"),
    ({"moved_down": ["q0", "q2"]}, "Question objects"),
    ({"token_counts": {"vi-leave-01": (0, 6), "ru-office-01": (0, 15)}}, "count the pieces whose text without '##'"),
    ({"token_counts": {"ru-office-01": (14, 15)}}, "a Vietnamese and a Russian document"),
    ({"token_counts": {**TOKEN_COUNTS, "vi-leave-01": (3, 100)}}, "between those many tokens, not 100"),
    ({"token_counts": {**TOKEN_COUNTS, "vi-leave-01": (9, 6)}}, "counts 9 odd tokens of 6"),
    ({"token_counts": {**TOKEN_COUNTS, "vi-leave-01": 0.5}}, "two whole numbers"),
    ({"token_counts": {**TOKEN_COUNTS, "ru-office-99": (1, 2)}}, "no handbook document id"),
    ({"token_counts": {}}, "should map document ids"),
    ({"stage2": {**STAGE2, "laptop": STAGE2["laptop"][:5]}}, "stage2 should hold stage 1's candidates for q1"),
])
def test_4_2_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_4_2(**changes)


LANG_OF = {q.query: q.lang for q in QUESTIONS}
ENGLISH_ONLY = evaluate_pipeline(lambda query, k: (STAGE2 if LANG_OF[query] == "en" else STAGE1)[query][:k],
                                 QUESTIONS, metrics=("ndcg", "recall", "mrr"), ks=(1, 5))


def exercise_4_3(**changes):
    return check_exercise("4.3", {"english_only": ENGLISH_ONLY, "questions": QUESTIONS, "stage1": STAGE1,
                                  "stage2": STAGE2, **changes})


def test_4_3_reranking_only_the_english_questions_passes():
    assert exercise_4_3()


@pytest.mark.parametrize("changes, message", [
    ({"english_only": run_of(lambda query, k: STAGE2[query][:k])}, "q2 is in 'vi', so the pipeline keeps stage 1"),
    ({"english_only": run_of(lambda query, k: STAGE1[query][:k])}, "q0 is English, so the pipeline reranks it"),
    ({"english_only": run_of(lambda query, k: (STAGE1 if LANG_OF[query] == "en" else STAGE2)[query][:k])},
     "q0 is English"),
    ({"english_only": ENGLISH_ONLY.means}, "an Evaluation"),
])
def test_4_3_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_4_3(**changes)
