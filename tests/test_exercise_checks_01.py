"""Lesson 01's exercise checks: a right answer passes, a typical wrong one fails with a pointer."""

import dataclasses
from functools import partial

import pytest

from ragkit.corpus import Doc, Question
from ragkit.evaluate.runners import evaluate_retrieval
from ragkit.exercises import ExerciseFailed, check_exercise
from ragkit.search.lexical import BM25Index
from ragkit.text import tokenize

DOCS = [
    Doc("annual", "Annual leave is 25 days a year; paid time off you just get, no need to ask", title="Annual leave"),
    Doc("sick", "Report sick days on Slack before 09:30; a doctor's note after three days.", title="Sick leave"),
    Doc("laptop", "Your laptop is encrypted; lock the screen and use the VPN at home.", title="Equipment"),
    Doc("travel", "Book hotels through the travel desk and keep every receipt.", title="Travel"),
    Doc("parental", "Parents get 16 weeks of parental leave after a birth or an adoption.", title="Parental leave"),
    Doc("security", "Report phishing emails to the security team within one hour.", title="Security"),
    Doc("desk", "Ask the help desk for equipment.", title="Help desk"),  # outscores "laptop" until titles count more
]
BY_ID = {doc.id: doc for doc in DOCS}
# BM25 puts "annual" first for the paraphrase, on its shared everyday words; its answer shares only "get"
MISSED = Question("q1", "My girlfriend just had our baby, how much paid time off do I get?", ("parental",),
                  style="paraphrase")
QUESTIONS = [MISSED, Question("q2", "When do I need a doctor's note?", ("sick",), style="keyword"),
             Question("q3", "Which equipment do I get?", ("laptop",), style="keyword")]
STEMS = partial(tokenize, fold=True, stopwords=True, stem=True)


def scores(recall_1, recall_5, recall_10, mrr_10):
    return {"recall@1": recall_1, "recall@5": recall_5, "recall@10": recall_10, "mrr@10": mrr_10}


LADDER = {"whitespace": scores(0.375, 0.536, 0.554, 0.431), "+ folding": scores(0.5, 0.571, 0.643, 0.534),
          "+ stop words, stems": scores(0.482, 0.589, 0.625, 0.530)}


def grid(default=LADDER["+ stop words, stems"]):
    """The 12 rows of exercise 1.1, the default pair's scores given, the others a little lower."""
    return [{"k1": k1, "b": b, **(default if (k1, b) == (1.5, 0.75) else scores(0.46, 0.57, 0.6, 0.51))}
            for k1 in (0.9, 1.2, 1.5, 2.0) for b in (0.3, 0.75, 1.0)]


def test_1_1_a_grid_whose_default_scores_as_a_best_rung_passes():
    assert check_exercise("1.1", {"grid": grid(), "ladder_results": LADDER})
    assert check_exercise("1.1", {"grid": grid(LADDER["+ folding"]), "ladder_results": LADDER})


@pytest.mark.parametrize("rows, message", [
    (grid(LADDER["whitespace"]), "best tokenizer"),
    (grid()[:-1], "the exercise asks for each of"),
    (grid() + grid()[:1], r"\(some twice\)"),
    ([{**row, "mrr@10": 1.3} for row in grid()], "shares between 0 and 1"),
    ([{key: value for key, value in row.items() if key != "mrr@10"} for row in grid()], "has no mrr@10"),
    ({(1.5, 0.75): 0.53}, "a list of dicts"),
    ([], "a list of dicts"),
])
def test_1_1_wrong_grids_fail_with_a_pointer(rows, message):
    with pytest.raises(ExerciseFailed, match=message):
        check_exercise("1.1", {"grid": rows, "ladder_results": LADDER})


def exercise_1_2(**changes):
    names = {"missed": MISSED, "top": BY_ID["annual"], "shared_with_answer": {"get"},
             "shared_with_top": {"get", "just", "off", "paid", "time"}, "docs": DOCS}
    return check_exercise("1.2", {**names, **changes})


def test_1_2_the_miss_its_first_hit_and_the_shared_tokens_pass():
    assert exercise_1_2()
    assert exercise_1_2(shared_with_answer=["get"], shared_with_top=["get", "just", "off", "paid", "time"])


@pytest.mark.parametrize("changes, message", [
    ({"missed": QUESTIONS[1]}, "pick a paraphrase"),
    ({"missed": MISSED.query}, "the gold question itself"),
    ({"top": BY_ID["parental"]}, "answers `missed`"),
    ({"top": BY_ID["laptop"]}, "not the document the best BM25 ranks first"),
    ({"top": BM25Index(DOCS).search(MISSED.query, k=1)[0]}, "not the hit"),
    ({"shared_with_top": {"get"}}, "`shared_with_top` is not the set of tokens"),
    ({"shared_with_top": {"just", "paid", "time", "off", "get?"}}, "`shared_with_top` is not the set of tokens"),
    ({"shared_with_answer": "get"}, "a set of strings"),
])
def test_1_2_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_1_2(**changes)


BOOSTED = [dataclasses.replace(doc, text=f"{doc.title} {doc.title} {doc.text}") for doc in DOCS]


def exercise_1_3(boosted_docs=BOOSTED, boosted_results=None):
    if boosted_results is None:
        boosted_results = evaluate_retrieval(BM25Index(boosted_docs, tokenizer=STEMS).search, QUESTIONS, ks=(1, 5, 10))
    return check_exercise("1.3", {"boosted_docs": boosted_docs, "boosted_results": boosted_results, "docs": DOCS,
                                  "questions": QUESTIONS})


def test_1_3_the_boosted_documents_and_their_index_scores_pass():
    assert exercise_1_3()
    titled = [dataclasses.replace(doc, title=f"{doc.title} {doc.title} {doc.title}") for doc in DOCS]
    assert exercise_1_3(titled)


@pytest.mark.parametrize("changes, message", [
    ({"boosted_docs": DOCS}, "does not hold its title three times"),
    ({"boosted_docs": BOOSTED[:-1]}, "every document of `docs` once"),
    ({"boosted_docs": [dataclasses.replace(doc, text=f"{doc.title} {doc.title}") for doc in DOCS]},
     "its whole text"),
    ({"boosted_results": evaluate_retrieval(BM25Index(DOCS, tokenizer=STEMS).search, QUESTIONS, ks=(1, 5, 10))},
     "not the scores of a BM25 index over `boosted_docs`"),
    ({"boosted_results": evaluate_retrieval(BM25Index(BOOSTED, tokenizer=STEMS).search, QUESTIONS, ks=(1, 5))},
     "with recall@1 and mrr@10"),
])
def test_1_3_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_1_3(**changes)
