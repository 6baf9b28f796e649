"""ragkit.evaluate: retrieval and answer metrics by hand and against trec_eval, and the runners."""

import math
import random
import statistics
import time

import numpy as np
import pytest
import pytrec_eval

from ragkit.corpus import Doc, Hit, Question
from ragkit.evaluate.metrics import (
    all_gold_at_k,
    answers_of,
    contains_gold,
    dcg,
    exact_match,
    grades_of,
    hit_at_k,
    mean,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    roc_auc,
    supporting_evidence_recall,
    token_f1,
)
from ragkit.evaluate.runners import Evaluation, evaluate_answers, evaluate_pipeline, evaluate_retrieval
from ragkit.evaluate.tables import format_seconds, format_table, table_rows
from ragkit.text import normalize_answer

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
        "mrr@2": (1 + 0.5 + 0) / 3,
    })


def test_evaluate_retrieval_asks_for_the_deepest_k():
    depths = []
    evaluate_retrieval(lambda q, k: depths.append(k) or fake_search(q, k), GOLD, ks=(1, 3))
    assert depths == [3, 3, 3]


def test_mrr_only_looks_as_deep_as_the_largest_k():
    late = [Question("late", "q-second", ("y",))]  # "y" is third
    assert evaluate_retrieval(fake_search, late, ks=(2,))["mrr@2"] == 0.0
    assert evaluate_retrieval(fake_search, late, ks=(3,))["mrr@3"] == pytest.approx(1 / 3)


def test_mrr_is_cut_at_the_deepest_k_even_when_the_pipeline_returns_more():
    late = [Question("late", "q-second", ("y",))]  # "y" is third
    result = evaluate_pipeline(lambda q, k: fake_search(q, k + 5), late, metrics=("mrr",), ks=(2,))
    assert result.means == {"mrr@2": 0.0}


def test_evaluate_retrieval_refuses_a_question_without_relevant_ids():
    with pytest.raises(ValueError, match="relevant"):
        evaluate_retrieval(fake_search, [*GOLD, Question("4", "q-first", ())])


def test_evaluating_on_no_questions_is_an_error():
    with pytest.raises(ValueError, match="no gold questions"):
        evaluate_retrieval(lambda query, k: [], [], ks=(5,))


# --- the old functions, on edge cases ------------------------------------------------------------

def test_recall_is_not_fooled_by_a_k_beyond_the_list():
    assert recall_at_k(RETRIEVED, ["d2"], 100) == 1.0


@pytest.mark.parametrize("metric", [hit_at_k, recall_at_k, precision_at_k, ndcg_at_k, all_gold_at_k])
def test_every_cut_off_metric_refuses_a_question_without_relevant_ids(metric):
    with pytest.raises(ValueError, match="relevant"):
        metric(RETRIEVED, [], 5)


def test_reciprocal_rank_refuses_a_question_without_relevant_ids():
    with pytest.raises(ValueError, match="relevant"):
        reciprocal_rank(RETRIEVED, [])


@pytest.mark.parametrize("metric", [hit_at_k, recall_at_k, precision_at_k, ndcg_at_k, all_gold_at_k])
@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_every_cut_off_metric_refuses_a_k_below_one_or_not_whole(metric, k):
    with pytest.raises(ValueError, match="k must be"):
        metric(RETRIEVED, ["d1"], k)


def test_a_numpy_integer_is_a_fine_k():
    assert recall_at_k(RETRIEVED, ["d1"], np.int64(2)) == 1.0


def test_reciprocal_rank_uses_the_first_of_repeated_ids():
    assert reciprocal_rank(["d3", "d3", "d1", "d1"], ["d1"]) == pytest.approx(1 / 3)


def test_a_single_string_is_not_taken_for_a_list_of_ids():
    with pytest.raises(TypeError, match="sequence of ids"):
        recall_at_k(RETRIEVED, "d1", 5)


# --- graded relevance ------------------------------------------------------------------------------

def test_a_list_of_ids_is_grade_one_each_and_grade_zero_is_not_relevant():
    assert grades_of(["a", "b", "a"]) == {"a": 1, "b": 1}
    assert grades_of({"a": 2, "b": 0}) == {"a": 2}
    assert recall_at_k(["b"], {"a": 2, "b": 0}, 1) == 0.0
    assert reciprocal_rank(["b", "a"], {"a": 2, "b": 0}) == 0.5


def test_only_grade_zero_ids_is_a_question_without_relevant_ids():
    with pytest.raises(ValueError, match="relevant"):
        ndcg_at_k(["a"], {"a": 0}, 5)


def test_negative_grades_are_refused():
    with pytest.raises(ValueError, match="grades"):
        ndcg_at_k(["a"], {"a": -1, "b": 1}, 5)


# --- precision@k -----------------------------------------------------------------------------------

@pytest.mark.parametrize("retrieved, relevant, k, expected", [
    (RETRIEVED, ["d1"], 1, 0.0),
    (RETRIEVED, ["d1", "d2"], 2, 0.5),
    (RETRIEVED, ["d1", "d2"], 4, 0.5),
    (RETRIEVED, ["d1", "d2"], 10, 0.2),  # k beyond the list still divides by k, as trec_eval's P_10
    (["d1", "d1"], ["d1"], 2, 0.5),  # a repeated id counts once
    ([], ["d1"], 5, 0.0),
])
def test_precision_at_k(retrieved, relevant, k, expected):
    assert precision_at_k(retrieved, relevant, k) == pytest.approx(expected)


# --- all-gold@k ------------------------------------------------------------------------------------

@pytest.mark.parametrize("relevant, k, expected", [
    (["d1", "d2"], 2, 0.0), (["d1", "d2"], 4, 1.0), (["d1", "d2"], 50, 1.0),
    (["d1", "d9"], 50, 0.0), (["d3"], 1, 1.0), ({"d3": 1, "d9": 0}, 1, 1.0),
])
def test_all_gold_at_k(relevant, k, expected):
    assert all_gold_at_k(RETRIEVED, relevant, k) == expected


# --- nDCG@k ----------------------------------------------------------------------------------------

def test_dcg_discounts_by_log2_of_rank_plus_one():
    assert dcg([3, 2, 0, 1]) == pytest.approx(3 + 2 / math.log2(3) + 0 + 1 / math.log2(5))
    assert dcg([]) == 0.0


@pytest.mark.parametrize("retrieved, relevant, k, expected", [
    # binary: DCG = 1/log2(3) + 1/log2(5) = 1.06161, ideal = 1 + 1/log2(3) = 1.63093
    (RETRIEVED, ["d1", "d2"], 4, 0.6509209298071326),
    (RETRIEVED, ["d1", "d2"], 1, 0.0),
    (RETRIEVED, ["d3"], 4, 1.0),
    (["d1"], ["d1"], 10, 1.0),  # k beyond the list
    (["d1"], ["d1", "d2"], 10, 1 / (1 + 1 / math.log2(3))),  # a missed doc still counts in the ideal
    # graded: DCG = 1 + 3/log2(3) = 2.89279, ideal = 3 + 2/log2(3) + 1/2 = 4.76186
    (["d2", "d1", "d3"], {"d1": 3, "d2": 1, "d9": 2}, 3, 0.6074915180456525),
    # the ideal is cut at k too: ideal@1 = 3, DCG@1 = 1
    (["d2", "d1", "d3"], {"d1": 3, "d2": 1, "d9": 2}, 1, 1 / 3),
    # a repeated id gains nothing the second time: DCG = 1 + 0 + 1/2, ideal = 1.63093
    (["d1", "d1", "d2"], ["d1", "d2"], 3, 0.9197207891481876),
])
def test_ndcg_at_k(retrieved, relevant, k, expected):
    assert ndcg_at_k(retrieved, relevant, k) == pytest.approx(expected, abs=1e-12)


def test_ndcg_of_docs_tied_in_grade_does_not_depend_on_their_order():
    grades = {"a": 2, "b": 2, "c": 1}
    assert ndcg_at_k(["a", "b", "c"], grades, 3) == ndcg_at_k(["b", "a", "c"], grades, 3) == 1.0
    assert ndcg_at_k(["c", "a", "b"], grades, 3) < 1.0


def test_ndcg_never_exceeds_one_even_with_repeats():
    assert ndcg_at_k(["a", "a", "a", "b"], {"a": 1, "b": 3}, 4) <= 1.0


def test_a_list_of_ids_and_grade_one_mapping_agree():
    assert ndcg_at_k(RETRIEVED, ["d1", "d2"], 3) == ndcg_at_k(RETRIEVED, {"d1": 1, "d2": 1}, 3)


# --- against trec_eval (pytrec_eval), on random runs ------------------------------------------------

TREC_MEASURES = {"ndcg_cut.5,10", "recall.5,100", "P.5", "recip_rank"}


def random_question(rng: random.Random, pool: list[str]) -> tuple[dict[str, int], list[str]]:
    """Graded qrels with at least one relevant doc, and a ranking without repeats (1 to 150 ids, often < 5)."""
    judged = rng.sample(pool, rng.randint(1, 12))
    qrels = {doc_id: rng.choice([0, 1, 1, 2, 3]) for doc_id in judged}
    qrels[judged[0]] = rng.randint(1, 3)
    ranking = rng.sample(pool, rng.choice([rng.randint(1, 4), rng.randint(5, 150)]))
    if rng.random() < 0.5:  # make hits likelier near the top
        ranking = list(dict.fromkeys(rng.sample(judged, rng.randint(1, len(judged))) + ranking))
    return qrels, ranking


def test_metrics_agree_with_trec_eval_on_300_random_runs():
    rng = random.Random(1234)
    pool = [f"doc{i}" for i in range(400)]
    questions = {f"q{i}": random_question(rng, pool) for i in range(300)}
    qrels = {qid: grades for qid, (grades, _) in questions.items()}
    run = {qid: {doc_id: float(len(ranking) - rank) for rank, doc_id in enumerate(ranking)}  # no tied scores
           for qid, (_, ranking) in questions.items()}
    trec = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES).evaluate(run)
    assert trec.keys() == questions.keys()
    for qid, (grades, ranking) in questions.items():
        ours = {
            "ndcg_cut_5": ndcg_at_k(ranking, grades, 5), "ndcg_cut_10": ndcg_at_k(ranking, grades, 10),
            "recall_5": recall_at_k(ranking, grades, 5), "recall_100": recall_at_k(ranking, grades, 100),
            "P_5": precision_at_k(ranking, grades, 5), "recip_rank": reciprocal_rank(ranking, grades),
        }
        for measure, value in ours.items():
            assert value == pytest.approx(trec[qid][measure], abs=1e-9), (qid, measure)
    # the runs are not trivial: some hits, some misses, some graded gains
    assert 0.1 < statistics.mean(t["ndcg_cut_10"] for t in trec.values()) < 0.9
    assert any(t["recall_5"] == 0 for t in trec.values()) and any(t["recall_5"] == 1 for t in trec.values())


# --- supporting evidence ---------------------------------------------------------------------------

def test_supporting_evidence_recall_over_a_set_of_retrieved_ids():
    assert supporting_evidence_recall({"a", "b", "x"}, ["a", "c"]) == 0.5
    assert supporting_evidence_recall({"a", "c"}, ("a", "c", "a")) == 1.0
    assert supporting_evidence_recall(set(), ["a"]) == 0.0


def test_supporting_evidence_recall_over_a_ranked_list_cut_at_k():
    assert supporting_evidence_recall(["x", "a", "c"], ["a", "c"], k=2) == 0.5
    assert supporting_evidence_recall(["x", "a", "c"], ["a", "c"], k=30) == 1.0
    assert supporting_evidence_recall(["x", "a", "c"], ["a", "c"]) == 1.0


def test_supporting_evidence_recall_refuses_what_it_cannot_score():
    with pytest.raises(ValueError, match="supporting"):
        supporting_evidence_recall({"a"}, [])
    with pytest.raises(TypeError, match="ranked list"):
        supporting_evidence_recall({"a"}, ["a"], k=1)
    with pytest.raises(ValueError, match="k must be"):
        supporting_evidence_recall(["a"], ["a"], k=0)


# --- answers: exact match and token F1 -------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("The Cat!", "cat"),
    ("  a  quick,   brown fox. ", "quick brown fox"),
    ("An apple and THE pear", "apple and pear"),
    ("theory of another", "theory of another"),  # articles only as whole words
    ("don't", "dont"),  # punctuation is dropped, not spaced
    ("«ba ngày»。", "ba ngày"),  # non-ASCII punctuation too; diacritics stay
    ("", ""),
])
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


@pytest.mark.parametrize("prediction, gold, expected", [
    ("The cat.", "cat", 1.0),
    ("a cat", "the dog", 0.0),
    ("three days", ["3 days", "Three days!"], 1.0),  # best over the aliases
    ("three consecutive days", "three days", 0.0),
    ("", "", 1.0),
])
def test_exact_match(prediction, gold, expected):
    assert exact_match(prediction, gold) == expected


@pytest.mark.parametrize("prediction, gold, expected", [
    ("the quick brown fox", "A quick fox", 0.8),  # p = 2/3, r = 1
    ("cat cat dog", "cat dog dog", 2 / 3),  # shared tokens are counted with multiplicity: 1 cat + 1 dog
    ("three consecutive days", "three days", 0.8),
    ("nothing shared", "three days", 0.0),
    ("three consecutive days", ["3 days", "three days"], 0.8),  # best alias
    ("", "three days", 0.0),
    ("the", "a", 1.0),  # both normalise to nothing: they agree (SQuAD 2.0's rule)
])
def test_token_f1(prediction, gold, expected):
    assert token_f1(prediction, gold) == pytest.approx(expected)


def test_answer_metrics_refuse_an_empty_list_of_gold_answers():
    with pytest.raises(ValueError, match="answer"):
        exact_match("x", [])
    with pytest.raises(ValueError, match="answer"):
        token_f1("x", [])


def test_answers_of_a_question_are_its_answer_then_its_answer_aliases():
    question = Question("1", "q", ("a",), answer="3 days", extra={"answer_aliases": ["three days", "3 days"]})
    assert answers_of(question) == ("3 days", "three days")
    assert answers_of(Question("2", "q", ("a",), extra={"answer_aliases": "three"})) == ("three",)
    with pytest.raises(ValueError, match="'3' has no gold answer"):
        answers_of(Question("3", "q", ("a",)))
    with pytest.raises(ValueError, match="'4' has no gold answer"):
        answers_of(Question("4", "q", ("a",), extra={"answer_aliases": [], "aliases": None}))


def test_answers_of_still_reads_the_legacy_aliases_key_after_answer_aliases():
    # benchmarks/hotpotqa_data.py keeps HotpotQA's aliases under "aliases"
    assert answers_of(Question("1", "q", ("a",), answer="Australia", extra={"aliases": ["Oceania"]})) == \
        ("Australia", "Oceania")
    both = Question("2", "q", ("a",), answer="x", extra={"answer_aliases": ["y", "x"], "aliases": ["z", "y"]})
    assert answers_of(both) == ("x", "y", "z")


# --- runners ---------------------------------------------------------------------------------------

def slow_search(query: str, k: int) -> list[Hit]:
    """fake_search taking 5 ms of wall time, so a runner's timings have something to measure."""
    time.sleep(0.005)
    return fake_search(query, k)


def test_evaluate_pipeline_returns_means_and_each_question():
    result = evaluate_pipeline(slow_search, GOLD, metrics=("recall", "precision", "all_gold", "mrr"), ks=(1, 2))
    assert list(result.means) == ["recall@1", "recall@2", "precision@1", "precision@2",
                                  "all_gold@1", "all_gold@2", "mrr@2"]
    assert result.means == pytest.approx({
        "recall@1": 1 / 3, "recall@2": 1.5 / 3, "precision@1": 1 / 3, "precision@2": (0.5 + 0.5 + 0) / 3,
        "all_gold@1": 1 / 3, "all_gold@2": 1 / 3, "mrr@2": 1.5 / 3,
    })
    assert [row["id"] for row in result.per_question] == ["1", "2", "3"]
    assert result.per_question[1]["retrieved"] == ("x", "b")
    assert result.per_question[1]["recall@2"] == 0.5
    assert all(row["seconds"] >= 0.005 for row in result.per_question)
    assert result.seconds_per_query == pytest.approx(sum(row["seconds"] for row in result.per_question) / 3)


def test_evaluate_pipeline_defaults_to_recall_ndcg_and_mrr_at_1_5_10():
    depths = []
    result = evaluate_pipeline(lambda q, k: depths.append(k) or fake_search(q, k), GOLD)
    assert depths == [10, 10, 10]
    assert list(result.means) == ["recall@1", "recall@5", "recall@10", "ndcg@1", "ndcg@5", "ndcg@10", "mrr@10"]


def test_evaluate_pipeline_scores_graded_questions_with_their_grades():
    graded = [Question("g", "q-first", ("a", "c"), extra={"grades": {"a": 1, "c": 3}})]
    ndcg = evaluate_pipeline(fake_search, graded, metrics=("ndcg",), ks=(3,)).means["ndcg@3"]
    assert ndcg == pytest.approx((1 + 3 / 2) / (3 + 1 / math.log2(3)))


def test_evaluate_pipeline_scores_the_order_returned_even_when_scores_tie():
    def tied(query, k):
        return [Hit(Doc(doc_id, "t"), 0.5) for doc_id in ("x", "b", "a")][:k]

    result = evaluate_pipeline(tied, [GOLD[0]], metrics=("mrr",), ks=(3,))
    assert result.means["mrr@3"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("options, message", [
    ({"ks": (0, 5)}, "k must be"), ({"ks": ()}, "at least one cut-off"),
    ({"metrics": ("recall", "map")}, "unknown metrics"), ({"metrics": ()}, "unknown metrics"),
])
def test_evaluate_pipeline_refuses_bad_options(options, message):
    with pytest.raises(ValueError, match=message):
        evaluate_pipeline(fake_search, GOLD, **options)


def test_evaluate_pipeline_names_the_question_without_relevant_ids():
    with pytest.raises(ValueError, match="question '4'.*relevant"):
        evaluate_pipeline(fake_search, [*GOLD, Question("4", "q-first", ())])


def test_evaluate_pipeline_on_no_questions_is_an_error():
    with pytest.raises(ValueError, match="no gold questions"):
        evaluate_pipeline(fake_search, [])


def test_evaluate_retrieval_is_evaluate_pipelines_means_for_recall_and_mrr():
    assert evaluate_retrieval(fake_search, GOLD, ks=(1, 3)) == \
        evaluate_pipeline(fake_search, GOLD, metrics=("recall", "mrr"), ks=(1, 3)).means


ANSWERED = [
    Question("1", "how long?", ("a",), answer="three days", extra={"answer_aliases": ["3 days"]}),
    Question("2", "where?", ("b",), answer="the #absences channel"),
]
REPLIES = {"how long?": "3 days.", "where?": "in the absences channel on Slack"}


def test_evaluate_answers_averages_exact_match_and_f1():
    result = evaluate_answers(REPLIES.get, ANSWERED)
    assert list(result.means) == ["exact_match", "f1"]
    # q2: "in absences channel on slack" vs "absences channel": p = 2/5, r = 1, f1 = 4/7
    assert result.means == pytest.approx({"exact_match": 0.5, "f1": (1 + 4 / 7) / 2})
    assert result.per_question[0]["prediction"] == "3 days."
    assert [row["exact_match"] for row in result.per_question] == [1.0, 0.0]


def test_evaluate_answers_refuses_no_questions_no_answers_and_non_strings():
    with pytest.raises(ValueError, match="no gold questions"):
        evaluate_answers(REPLIES.get, [])
    with pytest.raises(ValueError, match="no gold answer"):
        evaluate_answers(REPLIES.get, [Question("9", "where?", ("b",))])
    with pytest.raises(TypeError, match="must return a string"):
        evaluate_answers(lambda query: None, ANSWERED)


def test_table_rows_line_up_results_for_format_table():
    results = {
        "BM25": Evaluation({"recall@5": 0.5, "mrr": 0.25}, seconds_per_query=0.002),
        "dense": {"recall@5": 0.75, "ndcg@5": 0.5},
    }
    rows = table_rows(results, label="retriever", timing=True)
    assert rows == [
        {"retriever": "BM25", "recall@5": 0.5, "mrr": 0.25, "ndcg@5": "", "time/query": "2 ms"},
        {"retriever": "dense", "recall@5": 0.75, "mrr": "", "ndcg@5": 0.5, "time/query": ""},
    ]
    assert format_table(rows).splitlines()[1].split() == ["BM25", "0.500", "0.250", "2", "ms"]
    assert table_rows({"x": {"mrr": 1.0}}) == [{"pipeline": "x", "mrr": 1.0}]


def test_format_seconds_keeps_a_unit_the_nbval_sanitizer_knows():
    assert format_seconds(0.0004) == "0 ms" and format_seconds(1.2345) == "1,234 ms"
    assert format_seconds(12.34) == "12.3 s" and format_seconds(1234.5) == "1,234.5 s"


def test_the_mean_of_nothing_is_nan_not_a_score():
    assert mean([1.0, 2.0]) == 1.5 and mean(x for x in (3, 5)) == 4.0
    assert math.isnan(mean([]))


def test_contains_gold_takes_whole_words_of_any_alias():
    assert contains_gold("She was the Chief of Protocol.", ["chief of protocol"]) == 1.0
    assert contains_gold("Oceania and more", ["Australia", "Oceania"]) == 1.0
    assert contains_gold("not in the passages", ["no"]) == 0.0  # "not" is not "no"
    assert contains_gold("", "yes") == 0.0
    with pytest.raises(ValueError):
        contains_gold("x", [])


def test_roc_auc_is_the_share_of_positive_negative_pairs_ranked_right_ties_counting_half():
    assert roc_auc([0.9, 0.2, 0.5, 0.5], [True, False, True, False]) == pytest.approx((1 + 1 + 1 + 0.5) / 4)
    assert roc_auc([0.1, 0.9], [True, False]) == 0.0
    assert math.isnan(roc_auc([0.3], [True]))  # no negative to rank against
    with pytest.raises(ValueError, match="2 scores for 1 labels"):
        roc_auc([0.1, 0.2], [True])
