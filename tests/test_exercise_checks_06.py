"""Lesson 06's exercise checks on small hand-made values: what passes and what fails, with what message."""

import pytest

from ragkit.corpus import Doc, Hit, Question
from ragkit.evaluate.runners import Evaluation
from ragkit.exercises import ExerciseFailed, check_exercise
from ragkit.reason.cot_rag import NOT_FOUND, CoTResult, CoTStep

DOCS = {doc_id: Doc(doc_id, f"text of {doc_id}", lang=doc_id[:2]) for doc_id in ("en1", "en2", "en3", "ru1", "ru2")}
SAMPLE = [Question("b1", "Who built it?", ("en1", "ru1"), style="bridge", extra={"decomposition": ["a?", "b?"]}),
          Question("b2", "Where was he born?", ("en2", "en3"), style="bridge", extra={"decomposition": ["c?", "d?"]}),
          Question("c1", "Which is older?", ("en1", "en2"), style="comparison", extra={"decomposition": ["e?", "f?"]})]
BRIDGE = SAMPLE[:2]


def step(number, thought, found_by, *, finding="It was Rastrelli.", previous=None):
    """A CoT-RAG step whose sub-query carries the previous step's finding when that step found something."""
    sub_query = f"{thought} {previous.finding}" if previous and previous.found else thought
    excerpts = tuple(Hit(DOCS[doc_id], 1.0) for doc_id in found_by)
    return CoTStep(number, thought, sub_query, excerpts, found_by, finding, finding != NOT_FOUND, 0.1)


def run(question, *steps):
    return CoTResult("answer", tuple(steps), (), 0, question=question.query, tokens=0, latency=0.0, model="m")


def carried_runs():
    first = step(1, "Who built it?", ("en1", "en2"))
    return {BRIDGE[0].query: run(BRIDGE[0], first, step(2, "Where was he born?", ("ru1",), previous=first)),
            BRIDGE[1].query: run(BRIDGE[1], step(1, "Who?", ("en2",), finding=NOT_FOUND))}


def evaluation(questions, retrieved):
    rows = tuple({"id": q.id, "all_gold@5": 0.0, "recall@5": 0.5, "retrieved": tuple(ids)}
                 for q, ids in zip(questions, retrieved))
    return Evaluation({"all_gold@5": 0.0, "recall@5": 0.5}, rows)


def carried_results():
    return {"CoT-RAG": evaluation(BRIDGE, [("en1",), ("en3",)]),
            "CoT-RAG, carry findings": evaluation(BRIDGE, [("en1", "ru1"), ("en2",)])}


def test_6_1_passes_on_runs_that_carried_their_findings(capsys):
    assert check_exercise("6.1", {"carried": carried_runs(), "carried_results": carried_results(), "sample": SAMPLE})
    assert capsys.readouterr().out == "Exercise 6.1: passed.\n"


def test_6_1_says_what_to_define_when_nothing_is_done(capsys):
    assert check_exercise("6.1", {"sample": SAMPLE}) is False
    assert "Define `carried`, `carried_results`" in capsys.readouterr().out


def test_6_1_fails_on_runs_without_carry_findings():
    runs = carried_runs()
    first = step(1, "Who built it?", ("en1",))
    runs[BRIDGE[0].query] = run(BRIDGE[0], first, step(2, "Where was he born?", ("ru1",)))
    with pytest.raises(ExerciseFailed, match="carry_findings=True"):
        check_exercise("6.1", {"carried": runs, "carried_results": carried_results(), "sample": SAMPLE})


def test_6_1_fails_on_the_whole_sample_instead_of_its_bridge_questions():
    runs = {**carried_runs(), SAMPLE[2].query: run(SAMPLE[2], step(1, "Which?", ("en1",)))}
    with pytest.raises(ExerciseFailed, match="bridge questions"):
        check_exercise("6.1", {"carried": runs, "carried_results": carried_results(), "sample": SAMPLE})


def test_6_1_fails_when_no_row_scores_the_carried_passages():
    results = {"a": evaluation(BRIDGE, [("en3",), ("en3",)]), "b": evaluation(BRIDGE, [("en3",), ("en1",)])}
    with pytest.raises(ExerciseFailed, match="no row of `carried_results` scores the passages"):
        check_exercise("6.1", {"carried": carried_runs(), "carried_results": results, "sample": SAMPLE})


def test_6_1_fails_beyond_the_passage_budget():
    results = {**carried_results(), "wide": evaluation(BRIDGE, [("en1", "en2", "en3", "ru1", "ru2", "x"), ("en2",)])}
    with pytest.raises(ExerciseFailed, match="more than 5 passages"):
        check_exercise("6.1", {"carried": carried_runs(), "carried_results": results, "sample": SAMPLE})


def oracle(k_step):
    """Each question of SAMPLE (2 sub-questions) with k_step passages per sub-question."""
    per_step = {1: [("en1", "ru1"), ("en2", "en3"), ("en1", "en2")],
                2: [("en1", "ru1", "en2"), ("en2", "en3", "en1", "ru2"), ("en1", "en2", "ru1")]}
    return evaluation(SAMPLE, per_step[k_step])


def test_6_2_passes_with_one_and_two_passages_per_sub_question():
    assert check_exercise("6.2", {"oracle_by_k": {1: oracle(1), 2: oracle(2)}, "questions": SAMPLE})


def test_6_2_fails_without_k_1():
    with pytest.raises(ExerciseFailed, match="keys 1 and 2"):
        check_exercise("6.2", {"oracle_by_k": {2: oracle(2), 3: oracle(2)}, "questions": SAMPLE})


def test_6_2_fails_on_more_passages_than_k_per_step():
    with pytest.raises(ExerciseFailed, match=r"more passages than 1 per sub-question"):
        check_exercise("6.2", {"oracle_by_k": {1: oracle(2), 2: oracle(2)}, "questions": SAMPLE})


def test_6_2_fails_on_the_question_searched_alone():
    alone = evaluation(SAMPLE, [("en1",), ("en2",), ("en1",)])
    with pytest.raises(ExerciseFailed, match="one passage a step for only 0 of 3"):
        check_exercise("6.2", {"oracle_by_k": {1: alone, 2: oracle(2)}, "questions": SAMPLE})


def test_6_2_fails_on_a_sample_instead_of_every_question():
    with pytest.raises(ExerciseFailed, match="evaluate on all 3"):
        check_exercise("6.2", {"oracle_by_k": {1: evaluation(BRIDGE, [("en1", "ru1"), ("en2", "en3")]), 2: oracle(2)},
                               "questions": SAMPLE})


HOP_RESULTS = {"question only": evaluation(SAMPLE, [("en1", "en2"), ("en2",), ("en1", "en2")]),
               "iterative, no LLM": evaluation(SAMPLE, [("en1", "ru1"), ("en2", "en3"), ("en2",)])}
FOUND_BY = {
    "question only": {("first hop", "en"): (3, 3), ("later hop", "ru"): (0, 1), ("later hop", "en"): (1, 2)},
    "iterative, no LLM": {("first hop", "en"): (2, 3), ("later hop", "ru"): (1, 1), ("later hop", "en"): (2, 2)},
}


def hop_values(found_by):
    return {"found_by": found_by, "results": HOP_RESULTS, "questions": SAMPLE, "by_id": DOCS}


def test_6_3_passes_on_the_counts_of_each_hop_and_language():
    assert check_exercise("6.3", hop_values(FOUND_BY))


def test_6_3_fails_without_the_iteration():
    with pytest.raises(ExerciseFailed, match="no 'iterative, no LLM'"):
        check_exercise("6.3", hop_values({"question only": FOUND_BY["question only"]}))


def test_6_3_fails_on_other_keys():
    by_position = {name: {(i, "en"): value for i, value in enumerate(counts.values())}
                   for name, counts in FOUND_BY.items()}
    with pytest.raises(ExerciseFailed, match="'first hop' for q.relevant"):
        check_exercise("6.3", hop_values(by_position))


def test_6_3_fails_on_a_wrong_count():
    wrong = {name: dict(counts) for name, counts in FOUND_BY.items()}
    wrong["iterative, no LLM"][("later hop", "ru")] = (0, 1)
    with pytest.raises(ExerciseFailed, match=r"has 1 of 1 such gold passages"):
        check_exercise("6.3", hop_values(wrong))


def test_6_3_fails_when_a_passage_is_counted_twice():
    twice = {name: dict(counts) for name, counts in FOUND_BY.items()}
    twice["question only"][("first hop", "en")] = (3, 4)
    with pytest.raises(ExerciseFailed, match="add up to 7; each of the 6 gold passages"):
        check_exercise("6.3", hop_values(twice))


def test_6_3_fails_on_a_share_instead_of_a_count_pair():
    shares = {name: {kind: found / total for kind, (found, total) in counts.items()}
              for name, counts in FOUND_BY.items()}
    with pytest.raises(ExerciseFailed, match=r"\(found, total\)\} of whole numbers"):
        check_exercise("6.3", hop_values(shares))


def test_6_1_fails_on_answer_scores_instead_of_retrieval_scores():
    answers = {name: Evaluation({"exact_match": 0.0, "f1": 0.1}, tuple({"id": q.id, "f1": 0.1} for q in BRIDGE))
               for name in ("CoT-RAG", "CoT-RAG, carry findings")}
    with pytest.raises(ExerciseFailed, match="not what evaluate_pipeline returns"):
        check_exercise("6.1", {"carried": carried_runs(), "carried_results": answers, "sample": SAMPLE})
