"""Lesson 07's exercise checks on small hand-made values: what passes and what fails, with what message."""

from dataclasses import replace

import pytest

from ragkit.corpus import Doc, Question
from ragkit.exercises import ExerciseFailed, check_exercise
from ragkit.reason.steps import Meter
from ragkit.reason.voting import ReasoningPath, VoteResult
from tests.fakes import ScriptedChat

YES_NO = [Question("q1", "Was it built first?", ("d1",), answer="yes", style="yes-no"),
          Question("q2", "Did he live to see it?", ("d2",), answer="no", style="yes-no")]


def path(number, answer, support):
    return ReasoningPath(number, f"chain {number} -> {answer}", ("a step",), answer, support=support)


def vote(answer, *paths):
    return VoteResult(answer, answer, tuple(paths), (), "embedding", question="?", tokens=0, latency=0.0, model="m")


VOTES = {"q1": vote("yes", path(1, "Yes, it was.", 0.80), path(2, "no", 0.85), path(3, "yes", 0.82)),
         "q2": vote("yes", path(1, "yes", 0.70), path(2, "Venice", 0.60), path(3, "no", 0.65))}
RIGHT_WRONG = [(0.80, 0.85), (0.82, 0.85), (0.65, 0.70), (0.65, 0.60)]


def rescored_paths():
    """The same paths with cross-encoder supports: q2's 'no' path now has the most support."""
    supports = {"q1": (0.99, 0.98, 0.97), "q2": (0.90, 0.91, 0.99)}
    return {qid: [replace(p, support=s) for p, s in zip(VOTES[qid].paths, supports[qid])] for qid in VOTES}


def rescoring(**changes):
    values = {"rescored_paths": rescored_paths(), "rescored": {"q1": "Yes, it was.", "q2": "no"}, "changed": 1,
              "votes": VOTES}
    return {**values, **changes}


def test_7_1_passes_on_the_same_paths_rescored(capsys):
    assert check_exercise("7.1", rescoring())
    assert capsys.readouterr().out == "Exercise 7.1: passed.\n"


def test_7_1_says_what_to_define_when_nothing_is_done(capsys):
    assert check_exercise("7.1", {"votes": VOTES}) is False
    assert "Define `rescored_paths`, `rescored`, `changed`" in capsys.readouterr().out


def test_7_1_fails_on_the_embedding_supports():
    kept = {qid: list(v.paths) for qid, v in VOTES.items()}
    with pytest.raises(ExerciseFailed, match="embedding scorer's of section 4"):
        check_exercise("7.1", rescoring(rescored_paths=kept, rescored={"q1": "yes", "q2": "yes"}, changed=0))


def test_7_1_fails_on_newly_sampled_paths():
    sampled = rescored_paths()
    sampled["q2"] = [replace(p, text="another chain") for p in sampled["q2"]]
    with pytest.raises(ExerciseFailed, match="do not sample new ones"):
        check_exercise("7.1", rescoring(rescored_paths=sampled))


def test_7_1_fails_on_the_majority_instead_of_the_weighted_vote():
    with pytest.raises(ExerciseFailed, match=r"weighted_vote over rescored_paths\['q2'\] picks 'no'"):
        check_exercise("7.1", rescoring(rescored={"q1": "yes", "q2": "yes"}, changed=0))


def test_7_1_fails_on_a_wrong_count_of_changes():
    with pytest.raises(ExerciseFailed, match="`changed` is 2; 1 of the 2 answers"):
        check_exercise("7.1", rescoring(changed=2))


PROBES = [("d1", "A was founded in 1703.", "A was founded in 1803."), ("d2", "B was born in Moscow.", "B: Kiev."),
          ("d3", "C was born in Stettin.", "C: Vienna."), ("d4", "D was designed by E.", "D: F.")]
BY_ID = {"kb-en-042": Doc("kb-en-042", "The Moscow Metro opened in 1935.")}
JUDGE_SAYS = ('{"verdict": "unverified", "corrected_step": ""}', '{"verdict": "unverified", "corrected_step": ""}',
              '{"verdict": "corrected", "corrected_step": "C was born in Moscow."}')
JUDGED = {"A was founded in 1703.": "unverified", "B was born in Moscow.": "unverified",
          "C was born in Stettin.": "corrected"}


def wrong_place(verdicts, probes=PROBES):
    """The names exercise 7.2 checks, with a judge that replies JUDGE_SAYS in turn."""
    return {"wrong_place": verdicts, "probes": probes, "by_id": BY_ID, "meter": Meter(ScriptedChat(*JUDGE_SAYS))}


def test_7_2_passes_on_the_judges_verdict_for_each_of_the_first_three_true_statements():
    names = wrong_place(dict(JUDGED))
    assert check_exercise("7.2", names)
    asked = [messages[-1]["content"] for messages, _ in names["meter"].inner.calls]
    assert len(asked) == 3 and all("Moscow Metro" in text for text in asked)
    assert names["meter"].calls == 0  # the learner's meter counts none of the check's calls


def test_7_2_fails_on_verdicts_written_by_hand_that_the_judge_did_not_give():
    with pytest.raises(ExerciseFailed, match="differ for .*C was born in Stettin"):
        check_exercise("7.2", wrong_place({statement: "unverified" for statement in JUDGED}))


def test_7_2_fails_on_the_false_statements():
    verdicts = {false: "unverified" for _, _, false in PROBES[:3]}
    with pytest.raises(ExerciseFailed, match="first 3 true statements"):
        check_exercise("7.2", wrong_place(verdicts))


def test_7_2_fails_on_a_count_instead_of_verdicts():
    with pytest.raises(ExerciseFailed, match="should be a dict"):
        check_exercise("7.2", wrong_place(3))


def test_7_2_fails_on_something_that_is_not_a_verdict():
    verdicts = {true: ("unverified", "", []) for _, true, _ in PROBES[:3]}
    with pytest.raises(ExerciseFailed, match="are not verdicts"):
        check_exercise("7.2", wrong_place(verdicts))


def test_7_3_passes_on_every_right_wrong_pair_in_any_order():
    pairs = list(reversed(RIGHT_WRONG))
    assert check_exercise("7.3", {"support_pairs": pairs, "votes": VOTES, "yes_no": YES_NO})


def test_7_3_passes_on_no_pairs_when_every_question_has_one_answer():
    agreed = {"q1": vote("yes", path(1, "yes", 0.8)), "q2": vote("no", path(1, "no", 0.7))}
    assert check_exercise("7.3", {"support_pairs": [], "votes": agreed, "yes_no": YES_NO})


def test_7_3_fails_on_pairs_the_wrong_way_round():
    with pytest.raises(ExerciseFailed, match="other way round"):
        check_exercise("7.3", {"support_pairs": [(w, r) for r, w in RIGHT_WRONG], "votes": VOTES, "yes_no": YES_NO})


def test_7_3_fails_on_pairs_across_questions():
    across = [(0.80, 0.85), (0.82, 0.85), (0.65, 0.70), (0.65, 0.60), (0.80, 0.60), (0.82, 0.70)]
    with pytest.raises(ExerciseFailed, match="`support_pairs` has 6 pairs; the sampled paths give 4"):
        check_exercise("7.3", {"support_pairs": across, "votes": VOTES, "yes_no": YES_NO})


def test_7_3_fails_on_other_supports():
    with pytest.raises(ExerciseFailed, match="not the supports of votes"):
        check_exercise("7.3", {"support_pairs": [(1.0, 0.0)] * 4, "votes": VOTES, "yes_no": YES_NO})


def test_7_3_fails_on_answers_compared_without_answer_key():
    literal = [(0.82, 0.80), (0.82, 0.85), (0.65, 0.70), (0.65, 0.60)]  # 'Yes, it was.' counted wrong
    with pytest.raises(ExerciseFailed):
        check_exercise("7.3", {"support_pairs": literal, "votes": VOTES, "yes_no": YES_NO})
