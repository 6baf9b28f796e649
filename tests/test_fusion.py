import pytest

from ragkit.corpus import Doc, Hit
from ragkit.errors import EmptyQueryError
from ragkit.search.fusion import fuse_queries, interleave, lead_then_interleave, reciprocal_rank_fusion
from ragkit.search.lexical import BM25Index
from ragkit.text import search_tokenize


def hits(*ids: str) -> list[Hit]:
    return [Hit(Doc(doc_id, f"text of {doc_id}"), 1.0 / rank) for rank, doc_id in enumerate(ids, 1)]


def test_rrf_scores_are_sums_of_reciprocal_ranks():
    fused = reciprocal_rank_fusion([hits("a", "b"), hits("b", "c")], k=60)
    assert [h.id for h in fused] == ["b", "a", "c"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1].score == pytest.approx(1 / 61)


def test_rrf_breaks_ties_by_first_sighting():
    fused = reciprocal_rank_fusion([hits("a", "b"), hits("b", "a")])
    assert [h.id for h in fused] == ["a", "b"]


def test_rrf_limit_and_empty_lists():
    assert reciprocal_rank_fusion([]) == []
    assert [h.id for h in reciprocal_rank_fusion([[], hits("x")])] == ["x"]
    assert [h.id for h in reciprocal_rank_fusion([hits("a", "b", "c")], limit=2)] == ["a", "b"]


def test_rrf_refuses_a_negative_constant():
    with pytest.raises(ValueError, match="RRF constant"):
        reciprocal_rank_fusion([hits("a")], k=-1)


def test_fuse_queries_runs_each_query_and_fuses():
    asked = []

    def search(query, *, k):
        asked.append((query, k))
        return hits(*query.split())

    fused = fuse_queries(search, ["a b", "b c"], k=2, depth=7)
    assert asked == [("a b", 7), ("b c", 7)]
    assert [h.id for h in fused] == ["b", "a"]


def test_fuse_queries_needs_a_query():
    with pytest.raises(ValueError, match="no queries"):
        fuse_queries(lambda q, k: [], [])


def test_interleave_takes_each_rankings_first_then_second_without_repeats_and_cuts_at_the_limit():
    rankings = [hits("d1", "d2", "d3"), hits("d4", "d1", "d5"), hits("d6")]
    assert [h.id for h in interleave(rankings, 5)] == ["d1", "d4", "d6", "d2", "d3"]
    assert [h.id for h in interleave([hits("d1", "d2", "d3", "d4", "d5", "d6")], 5)] == ["d1", "d2", "d3", "d4", "d5"]
    assert interleave([], 5) == [] and interleave([[], []], 5) == []


def test_lead_then_interleave_keeps_the_leads_top_then_fills_from_the_others():
    lead, others = hits("q1", "q2", "q3"), [hits("s1", "q1", "s2"), hits("t1", "t2")]
    assert [h.id for h in lead_then_interleave(lead, others, 5, first=2)] == ["q1", "q2", "s1", "t1", "t2"]
    assert [h.id for h in lead_then_interleave(lead, others, 5, first=0)] == [h.id for h in interleave(others, 5)]
    assert [h.id for h in lead_then_interleave(lead, others, 2, first=3)] == ["q1", "q2"]
    with pytest.raises(ValueError, match="first"):
        lead_then_interleave(lead, others, 5, first=-1)


def test_weighted_rrf_lets_the_heavier_list_lead():
    fused = reciprocal_rank_fusion([hits("a", "b"), hits("b", "a")], weights=[1, 2])
    assert [h.id for h in fused] == ["b", "a"]
    assert fused[0].score == pytest.approx(2 / 61 + 1 / 62)


def test_weights_of_one_are_plain_rrf_and_a_weight_of_zero_drops_its_list():
    lists = [hits("a", "b"), hits("c", "a")]
    assert reciprocal_rank_fusion(lists, weights=[1, 1]) == reciprocal_rank_fusion(lists)
    assert [h.id for h in reciprocal_rank_fusion(lists, weights=[1, 0])] == ["a", "b"]


@pytest.mark.parametrize("weights, message", [([1], "one weight a ranking"), ([1, -1], "0 or more"),
                                               ([1, float("nan")], "0 or more")])
def test_bad_weights_are_clear_errors(weights, message):
    with pytest.raises(ValueError, match=message):
        reciprocal_rank_fusion([hits("a"), hits("b")], weights=weights)


def test_fuse_queries_leaves_out_a_query_with_nothing_to_search_but_not_every_query():
    docs = [Doc("d1", "sick leave rules"), Doc("d2", "office hours"), Doc("d3", "expense claims"), Doc("d4", "laptops")]
    index = BM25Index(docs, tokenizer=search_tokenize)
    fused = fuse_queries(index.search, ["sick leave", "What can I do for you?"], k=2)
    assert [hit.id for hit in fused] == ["d1"]
    with pytest.raises(EmptyQueryError):
        fuse_queries(index.search, ["What can I do for you?", "Is it?"], k=2)
