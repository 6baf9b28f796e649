import pytest

from ragkit.corpus import Doc
from ragkit.errors import CorpusError
from ragkit.search.lexical import BM25Index
from ragkit.search.parent_child import ParentChildIndex, ParentHit, child_docs

PARENTS = [Doc("sick", "Report sick in Slack before 9:30. From day four you need a doctor's note.", "Sick",
               lang="en", topic="sick"),
           Doc("vpn", "Use the VPN at home. Lock your screen when you leave your desk.", "Security", topic="sec")]


def test_children_are_sentences_that_point_to_their_parent():
    children = child_docs(PARENTS)
    assert [c.id for c in children] == ["sick#0", "sick#1", "vpn#0", "vpn#1"]
    assert children[1].text == "From day four you need a doctor's note."
    assert children[1].parent_id == "sick" and children[1].title == "Sick" and children[1].topic == "sick"


def test_children_of_several_sentences():
    assert [c.text.count(".") for c in child_docs(PARENTS, sentences_per_child=2)] == [2, 2]
    with pytest.raises(ValueError):
        child_docs(PARENTS, sentences_per_child=0)


def test_a_text_without_sentence_ends_is_one_child():
    assert child_docs([Doc("x", "no full stop here")])[0].text == "no full stop here"


def test_search_returns_each_parent_once_with_its_best_child():
    index = ParentChildIndex(PARENTS, BM25Index)
    hits = index.search("doctor note", k=5)
    assert isinstance(hits[0], ParentHit)
    assert hits[0].doc == PARENTS[0] and hits[0].child.id == "sick#1"
    assert len({h.id for h in hits}) == len(hits)


def test_search_children_shows_what_the_index_sees():
    index = ParentChildIndex(PARENTS, BM25Index)
    assert index.search_children("lock screen", k=1)[0].id == "vpn#1"


def test_empty_parents_are_refused():
    with pytest.raises(CorpusError):
        ParentChildIndex([], BM25Index)


class ScriptedIndex:
    """A child index that returns fixed hits, best first, whatever the query."""

    def __init__(self, children, ranked):
        self.by_id = {child.id: child for child in children}
        self.ranked = ranked

    def search(self, query, *, k):
        from ragkit.corpus import Hit

        return [Hit(self.by_id[child_id], score) for child_id, score in self.ranked][:k]


def test_a_parent_keeps_its_best_childs_score_and_child_not_a_later_one():
    ranked = [("sick#1", 0.9), ("vpn#0", 0.7), ("sick#0", 0.2), ("vpn#1", 0.1)]
    index = ParentChildIndex(PARENTS, lambda children: ScriptedIndex(children, ranked))
    hits = index.search("any", k=2)
    assert [(h.id, h.child.id, h.score) for h in hits] == [("sick", "sick#1", 0.9), ("vpn", "vpn#0", 0.7)]
