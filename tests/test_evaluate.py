"""ragkit.evaluate: recall@k, hit@k, reciprocal rank, and a run over gold questions."""

import pytest

from ragkit.corpus import Doc, Hit, Question
from ragkit.evaluate import evaluate_retrieval, hit_at_k, recall_at_k, reciprocal_rank

RETRIEVED = ["d3", "d1", "d7", "d2"]


@pytest.mark.parametrize("relevant, k, expected", [
    (["d1"], 1, 0.0),
    (["d1"], 2, 1.0),
    (["d1", "d2"], 2, 0.5),
    (["d1", "d2"], 4, 1.0),
    (["d1", "d2", "d9"], 4, 2 / 3),
    (["d9"], 10, 0.0),
])
def test_recall_at_k(relevant, k, expected):
    assert recall_at_k(RETRIEVED, relevant, k) == pytest.approx(expected)


def test_recall_counts_a_relevant_id_once_even_if_retrieved_twice():
    assert recall_at_k(["d1", "d1"], ["d1", "d2"], 2) == 0.5


@pytest.mark.parametrize("relevant, k, expected", [(["d1"], 1, 0.0), (["d1"], 2, 1.0),
                                                    (["d9", "d2"], 4, 1.0), (["d9"], 4, 0.0)])
def test_hit_at_k(relevant, k, expected):
    assert hit_at_k(RETRIEVED, relevant, k) == expected


@pytest.mark.parametrize("relevant, expected", [(["d3"], 1.0), (["d1"], 0.5), (["d2", "d7"], 1 / 3),
                                                (["d9"], 0.0)])
def test_reciprocal_rank(relevant, expected):
    assert reciprocal_rank(RETRIEVED, relevant) == pytest.approx(expected)


def test_recall_of_a_question_without_relevant_ids_is_an_error():
    with pytest.raises(ValueError, match="relevant"):
        recall_at_k(RETRIEVED, [], 5)


RANKINGS = {"q-first": ["a", "b", "c"], "q-second": ["x", "b", "y"], "q-missed": ["x", "y", "z"]}
GOLD = [Question("1", "q-first", ("a",)), Question("2", "q-second", ("b", "c")), Question("3", "q-missed", ("a",))]


def fake_search(query: str, k: int) -> list[Hit]:
    """Returns the fixed ranking for the query, cut at k, as a real search would."""
    return [Hit(Doc(doc_id, f"text of {doc_id}"), 1.0 / rank) for rank, doc_id in enumerate(RANKINGS[query][:k], 1)]


def test_evaluate_retrieval_averages_over_questions():
    scores = evaluate_retrieval(fake_search, GOLD, ks=(1, 2))
    assert scores == pytest.approx({
        "recall@1": (1 + 0 + 0) / 3,
        "recall@2": (1 + 0.5 + 0) / 3,
        "mrr": (1 + 0.5 + 0) / 3,
    })


def test_evaluate_retrieval_asks_for_the_deepest_k():
    depths = []
    evaluate_retrieval(lambda q, k: depths.append(k) or fake_search(q, k), GOLD, ks=(1, 3))
    assert depths == [3, 3, 3]


def test_mrr_only_looks_as_deep_as_the_largest_k():
    late = [Question("late", "q-second", ("y",))]  # "y" is third
    assert evaluate_retrieval(fake_search, late, ks=(2,))["mrr"] == 0.0
    assert evaluate_retrieval(fake_search, late, ks=(3,))["mrr"] == pytest.approx(1 / 3)


def test_evaluate_retrieval_refuses_a_question_without_relevant_ids():
    with pytest.raises(ValueError, match="relevant"):
        evaluate_retrieval(fake_search, [*GOLD, Question("4", "q-first", ())])


def test_evaluating_on_no_questions_is_an_error():
    with pytest.raises(ValueError, match="no gold questions"):
        evaluate_retrieval(lambda query, k: [], [], ks=(5,))
