"""Lesson 09's exercise checks: a right answer passes, a typical wrong one fails with a pointer."""

from collections import Counter
from types import SimpleNamespace

import pytest

from ragkit.corpus import Question, read_jsonl
from ragkit.evaluate.runners import Evaluation
from ragkit.exercises import ExerciseFailed, check_exercise
from ragkit.models.specialists import COMMITTED_DIR, specialist_record

HALF = [Question(f"mh{i:02d}", f"question {i}?", (f"d{i}",)) for i in range(4)]


def run(all_gold, tops):
    """An Evaluation whose question i scored all_gold[i] and retrieved tops[i]."""
    rows = tuple({"id": q.id, "all_gold@5": hit, "recall@5": hit, "retrieved": tuple(top)}
                 for q, hit, top in zip(HALF, all_gold, tops))
    return Evaluation({"all_gold@5": sum(all_gold) / len(all_gold), "recall@5": sum(all_gold) / len(all_gold)}, rows)


WITH_QUESTION = run([1, 1, 0, 0], [["d0"], ["d1"], ["x"], ["y"]])
MULTIHOP = {"self-ask, specialist": WITH_QUESTION}
ALONE = run([0, 1, 1, 0], [["a"], ["d1"], ["d2"], ["y"]])


def exercise_9_1(alone, differ):
    return check_exercise("9.1", {"alone_scores": alone, "differ": differ, "multihop": MULTIHOP, "half": HALF})


def test_9_1_the_differing_questions_with_their_winners_pass_by_text_or_id():
    assert exercise_9_1(ALONE, {"question 0?": True, "question 2?": False})
    assert exercise_9_1(ALONE, {"mh00": True, "mh02": False})


def test_9_1_the_run_with_the_question_itself_fails():
    with pytest.raises(ExerciseFailed, match="append_question=False"):
        exercise_9_1(WITH_QUESTION, {})


def test_9_1_a_missing_question_or_a_wrong_winner_fails():
    with pytest.raises(ExerciseFailed, match="all_gold@5 differs on 2"):
        exercise_9_1(ALONE, {"question 0?": True})
    with pytest.raises(ExerciseFailed, match="wrong winner"):
        exercise_9_1(ALONE, {"question 0?": True, "question 2?": True})
    with pytest.raises(ExerciseFailed, match="not a question of `half`"):
        exercise_9_1(ALONE, {"question 9?": True, "question 2?": False})


def test_9_1_a_run_on_other_questions_fails():
    fewer = Evaluation(ALONE.means, ALONE.per_question[:3])
    with pytest.raises(ExerciseFailed, match="same 4 questions"):
        exercise_9_1(fewer, {"question 0?": True, "question 2?": False})


def contradicted_records() -> int:
    return sum(r["answer"] == "contradicts" for r in read_jsonl(COMMITTED_DIR / "judge" / "heldout.jsonl"))


def committed_share() -> float:
    labels = specialist_record(COMMITTED_DIR / "judge")["data"]["counts"]["labels"]
    return labels["contradicts"] / sum(labels.values())


class FakeJudge:
    """A judge that says `contradicts` to the first record it is asked about and `unrelated` to the rest."""

    def __init__(self):
        self.asked = 0

    def chat(self, messages, max_tokens=None):
        self.asked += 1
        return SimpleNamespace(text="contradicts" if self.asked == 1 else "Unrelated.")


def exercise_9_2(share, verdicts, judge_model=None):
    return check_exercise("9.2", {"contradicts_share": share, "contradicted_verdicts": verdicts,
                                  "judge_model": judge_model or FakeJudge()})


def test_9_2_the_committed_share_and_the_judges_verdicts_pass():
    n = contradicted_records()
    assert n > 1
    assert exercise_9_2(committed_share(), Counter({"unverified": n - 1, "corrected": 1}))
    assert exercise_9_2(round(committed_share(), 3), {"unverified": n - 1, "corrected": 1, "confirmed": 0})


def test_9_2_verdicts_that_add_up_but_are_not_the_judges_fail():
    n = contradicted_records()
    with pytest.raises(ExerciseFailed, match="not the judge's"):
        exercise_9_2(committed_share(), {"confirmed": n})
    with pytest.raises(ExerciseFailed, match="not the judge's"):
        exercise_9_2(committed_share(), {"unverified": n - 1, "confirmed": 1})


def test_9_2_a_percent_or_a_count_fails():
    with pytest.raises(ExerciseFailed, match="between 0 and 1"):
        exercise_9_2(committed_share() * 100, {"unverified": contradicted_records()})
    with pytest.raises(ExerciseFailed, match="divide counts"):
        exercise_9_2(0.5, {"unverified": contradicted_records()})


def test_9_2_the_judges_own_labels_or_a_wrong_total_fail():
    with pytest.raises(ExerciseFailed, match="lesson 07's verdict"):
        exercise_9_2(committed_share(), {"unrelated": contradicted_records()})
    with pytest.raises(ExerciseFailed, match="judge each of them once"):
        exercise_9_2(committed_share(), {"unverified": contradicted_records() + 1})
    with pytest.raises(ExerciseFailed, match="non-empty dict"):
        exercise_9_2(committed_share(), {})


def test_9_3_two_models_counted_on_eight_questions_pass():
    assert check_exercise("9.3", {"step_counts": {"few-shot": [1, 2, 2, 2, 3, 2, 2, 2],
                                                  "specialist": [2, 3, 2, 2, 2, 2, 2, 2]}})


def test_9_3_one_model_a_short_list_or_an_impossible_count_fails():
    with pytest.raises(ExerciseFailed, match="two keys"):
        check_exercise("9.3", {"step_counts": {"specialist": [2] * 8}})
    with pytest.raises(ExerciseFailed, match="each of the 8"):
        check_exercise("9.3", {"step_counts": {"few-shot": [1] * 8, "specialist": [2] * 3}})
    with pytest.raises(ExerciseFailed, match="returns 1 to 4"):
        check_exercise("9.3", {"step_counts": {"few-shot": [0] * 8, "specialist": [2] * 8}})


def test_9_3_a_specialist_that_does_not_split_fails():
    with pytest.raises(ExerciseFailed, match="did you decompose with `decomposer`"):
        check_exercise("9.3", {"step_counts": {"few-shot": [2] * 8, "specialist": [1] * 8}})
