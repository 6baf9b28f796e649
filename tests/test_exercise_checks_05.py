"""Lesson 05's exercise checks: a right answer passes, a typical wrong one fails with a pointer."""

from types import SimpleNamespace

import pytest

from ragkit.corpus import Doc, Hit, Question
from ragkit.evaluate.runners import evaluate_pipeline
from ragkit.exercises import ExerciseFailed, check_exercise
from ragkit.search.lexical import BM25Index
from ragkit.search.parent_child import ParentChildIndex, ParentHit, child_docs
from ragkit.text import search_tokenize

DOCS = [Doc("sick", "Report sick in Slack before 9:30. From day four you need a doctor's note. Rest at home.", "Sick"),
        Doc("vpn", "Use the VPN at home. Lock your screen when you leave your desk. Report a lost laptop.", "Security"),
        Doc("leave", "You get 25 days of leave. Unused days carry over until March. Ask your manager first.", "Leave")]
BY_ID = {doc.id: doc for doc in DOCS}
QUESTIONS = [Question("q0", "when do I need a doctor's note", ("sick",), answer="day four"),
             Question("q1", "lock the screen", ("vpn",), answer="Lock your screen"),
             Question("q2", "how many leave days", ("leave",), answer="25 days")]


def run_of(lists):
    """An evaluation whose search returns the given parent ids, question by question."""
    by_query = {q.query: ids for q, ids in zip(QUESTIONS, lists)}
    return evaluate_pipeline(lambda query, k: [Hit(BY_ID[i], 1.0) for i in by_query[query]][:k], QUESTIONS,
                             metrics=("hit", "mrr"), ks=(1, 5))


ONE = [["sick", "vpn", "leave"], ["vpn", "sick", "leave"], ["vpn", "leave", "sick"]]
BIGGER = {2: run_of([["sick", "leave", "vpn"], ["vpn", "sick", "leave"], ["leave", "vpn", "sick"]]),
          3: run_of([["sick", "vpn", "leave"], ["vpn", "leave", "sick"], ["leave", "sick", "vpn"]])}


def exercise_5_1(**changes):
    names = {"bigger": BIGGER, "results": {"children -> parents": run_of(ONE)}, "questions": QUESTIONS,
             "by_id": BY_ID}
    return check_exercise("5.1", {**names, **changes})


def test_5_1_two_new_indexes_returning_parents_pass():
    assert exercise_5_1()


@pytest.mark.parametrize("changes, message", [
    ({"bigger": {2: run_of(ONE), 3: BIGGER[3]}}, "build a new ParentChildIndex with sentences_per_child=2"),
    ({"bigger": {2: BIGGER[2], 3: BIGGER[2]}}, "its own collection name"),
    ({"bigger": {**BIGGER, 3: evaluate_pipeline(lambda query, k: [Hit(Doc("sick#1", "x"), 1.0)], QUESTIONS,
                                                metrics=("hit", "mrr"), ks=(1, 5))}}, "not children"),
    ({"bigger": {**BIGGER, 3: run_of([["sick", "sick"], ["vpn"], ["leave"]])}}, "lists a parent twice for q0"),
    ({"bigger": {n: run.means for n, run in BIGGER.items()}}, "an Evaluation"),
    ({"bigger": {2: BIGGER[2]}}, "should map 2 and 3"),
    ({"bigger": {**BIGGER, 2: evaluate_pipeline(lambda query, k: [Hit(DOCS[0], 1.0)], QUESTIONS,
                                                metrics=("recall",), ks=(1,))}}, "no hit@1 or no MRR"),
])
def test_5_1_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_5_1(**changes)


CHILDREN = child_docs(DOCS)
CHILD_BY_ID = {child.id: child for child in CHILDREN}


def window(child, size=1, separator=" "):
    parent_id, number = child.id.rsplit("#", 1)
    ids = [f"{parent_id}#{i}" for i in range(int(number) - size, int(number) + size + 1)]
    return separator.join(CHILD_BY_ID[i].text for i in ids if i in CHILD_BY_ID)


# the top hit of each question: its child, as section 4 measured it, and the window around that child
TOP = [CHILD_BY_ID["sick#1"], CHILD_BY_ID["vpn#1"], CHILD_BY_ID["sick#0"]]  # q2's top parent is the wrong one
SECTION_4 = {"child_has": [True, True, False], "parent_has": [True, True, False],
             "child_words": [len(child.text.split()) for child in TOP]}


def exercise_5_2(**changes):
    names = {"window": window, "window_has": [True, True, False],
             "window_words": [len(window(child).split()) for child in TOP], "questions": QUESTIONS,
             "parent_child": SimpleNamespace(children=CHILDREN), **SECTION_4}
    return check_exercise("5.2", {**names, **changes})


def test_5_2_the_sentence_and_its_neighbours_pass():
    assert exercise_5_2()
    assert exercise_5_2(window=lambda child: window(child, separator="\n"))


@pytest.mark.parametrize("changes, message", [
    ({"window": lambda child: child.text}, r"window\(sick#0\) leaves out sick#1"),
    ({"window": lambda child: window(child, size=2)}, r"window\(sick#0\) holds more than the child"),
    ({"window": lambda child: BY_ID[child.parent_id].text + " More."}, "holds more than the child"),
    ({"window": "the sentence window"}, "should be a function"),
    ({"window": lambda child: [child.text]}, "should return text"),
    ({"window_has": [False, True, False]}, "q0: the top child contains the answer but its window does not"),
    ({"window_has": [True, True, True]}, "q2: the window contains the answer but the top parent does not"),
    ({"window_words": [3, 30, 30]}, "q0: the window has 3 words, fewer than its child's"),
    ({"window_words": [30, 30]}, "one value for each of the 3 gold questions"),
])
def test_5_2_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_5_2(**changes)


def bm25_run(index):
    return evaluate_pipeline(index.search, QUESTIONS, metrics=("hit", "mrr"), ks=(1, 5))


WHOLE = bm25_run(BM25Index(DOCS, tokenizer=search_tokenize))
CHILD_RUN = bm25_run(ParentChildIndex(DOCS, lambda kids: BM25Index(kids, tokenizer=search_tokenize)))


def exercise_5_3(**changes):
    return check_exercise("5.3", {"bm25_whole": WHOLE, "bm25_children": CHILD_RUN, "questions": QUESTIONS,
                                  "docs": DOCS, **changes})


def test_5_3_bm25_over_documents_and_over_children_pass():
    assert exercise_5_3()


@pytest.mark.parametrize("changes, message", [
    ({"bm25_whole": bm25_run(BM25Index(DOCS))}, r"`bm25_whole` ranks .* where BM25Index\(docs, tokenizer="),
    ({"bm25_children": bm25_run(ParentChildIndex(DOCS, BM25Index, sentences_per_child=3))},
     "`bm25_children` ranks"),
    ({"bm25_children": evaluate_pipeline(ParentChildIndex(DOCS, BM25Index).search_children, QUESTIONS,
                                         metrics=("hit", "mrr"), ks=(1, 5))}, "`bm25_children` ranks"),
    ({"bm25_whole": WHOLE.means}, "an Evaluation"),
])
def test_5_3_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_5_3(**changes)


def test_5_3_catches_a_parent_child_index_that_ranks_a_parent_by_its_worst_child(monkeypatch):
    def by_worst_child(self, query, *, k=5):
        ranked: dict = {}
        for hit in self.search_children(query, k=k * self.depth_per_parent):
            parent_id = hit.doc.parent_id or hit.id
            ranked.pop(parent_id, None)  # the bug: a later (worse) child moves its parent down
            ranked[parent_id] = ParentHit(self.parents[parent_id], hit.score, hit.doc)
        return list(ranked.values())[:k]

    monkeypatch.setattr(ParentChildIndex, "search", by_worst_child)
    broken = bm25_run(ParentChildIndex(DOCS, lambda kids: BM25Index(kids, tokenizer=search_tokenize)))
    assert [row["retrieved"] for row in broken.per_question] != [row["retrieved"] for row in CHILD_RUN.per_question]
    with pytest.raises(ExerciseFailed, match="`bm25_children` ranks"):
        exercise_5_3(bm25_children=broken)
