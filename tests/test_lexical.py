"""ragkit.search.lexical: bag-of-words cosine and BM25 over rank-bm25."""

import math

import pytest
from rank_bm25 import BM25Okapi

from ragkit import load_docs, load_questions
from ragkit.corpus import Doc
from ragkit.errors import CorpusError, EmptyQueryError
from ragkit.search.lexical import BagOfWordsIndex, BM25Index, bag_of_words_cosine
from ragkit.text import search_tokenize, tokenize

DOCS = [
    Doc("leave", "Annual leave is 25 days per year; request leave in Personio.", title="Annual leave"),
    Doc("sick", "Report sick days on Slack before 09:30; a doctor's note after three days.", title="Sick leave"),
    Doc("laptop", "Your laptop is encrypted; lock the screen and use the VPN at home.", title="Equipment"),
    Doc("travel", "Book hotels through the travel desk and keep every receipt.", title="Travel"),
    Doc("parental", "Parents get 16 weeks of paid leave; tell People Ops early.", title="Parental leave"),
    Doc("security", "Report phishing emails to the security team within one hour.", title="Security"),
]


@pytest.mark.parametrize("query, doc, expected", [
    (["a", "b"], ["a", "a", "c"], 2 / math.sqrt(10)),   # dot 1*2, norms sqrt(2) * sqrt(5)
    (["a", "b"], ["b", "a"], 1.0),                      # same counts, any order
    (["a"], ["b", "c"], 0.0),                           # no shared word
    (["a", "a", "b"], ["a", "b", "b"], 4 / 5),          # (2*1 + 1*2) / (sqrt(5) * sqrt(5))
    ([], ["a"], 0.0),                                   # nothing to compare: 0, not a division error
])
def test_bag_of_words_cosine_matches_hand_computed_values(query, doc, expected):
    assert bag_of_words_cosine(query, doc) == pytest.approx(expected)


def test_bm25_scores_equal_rank_bm25_on_the_same_tokens():
    index = BM25Index(DOCS)
    reference = BM25Okapi([tokenize(f"{d.title} {d.text}") for d in DOCS])
    query = "how many days of annual leave"
    assert index.scores(query).tolist() == pytest.approx(reference.get_scores(tokenize(query)).tolist())


@pytest.mark.parametrize("tokenizer", [tokenize, search_tokenize])
def test_bm25_scores_are_rank_bm25s_to_the_last_bit_on_the_course_corpus(tokenizer):
    # exact, not approx: records built from BM25's ranking (the specialists' negatives) must not move
    docs = load_docs()
    index = BM25Index(docs, tokenizer=tokenizer)
    reference = BM25Okapi([tokenizer(f"{d.title} {d.text}") or [""] for d in docs])
    queries = [q.query for q in load_questions()] + ["leave leave leave days", "zzzunknown leave", "nghỉ phép 年假"]
    for query in queries:
        assert index.scores(query).tolist() == reference.get_scores(tokenizer(query)).tolist(), query


def test_bm25_passes_k1_and_b_through():
    index = BM25Index(DOCS, k1=0.9, b=0.4)
    reference = BM25Okapi([tokenize(f"{d.title} {d.text}") for d in DOCS], k1=0.9, b=0.4)
    assert index.scores("sick days").tolist() == pytest.approx(reference.get_scores(["sick", "days"]).tolist())


def test_bm25_ranks_the_doc_on_the_exact_topic_first():
    hits = BM25Index(DOCS).search("VPN on my laptop at home", k=2)
    assert hits[0].id == "laptop"
    assert hits[0].score > (hits[1].score if len(hits) > 1 else 0)


def test_hits_are_sorted_best_first():
    scores = [h.score for h in BM25Index(DOCS).search("leave days", k=4)]
    assert scores == sorted(scores, reverse=True)


def test_ties_are_broken_by_corpus_order():
    twins = [Doc("b", "expenses and receipts"), Doc("a", "expenses and receipts"), *DOCS]
    assert [h.id for h in BM25Index(twins).search("receipts", k=3)] == ["b", "a"]
    assert [h.id for h in BagOfWordsIndex(twins).search("receipts", k=3)] == ["b", "a"]


def test_docs_with_a_zero_score_are_not_returned():
    hits = BM25Index(DOCS).search("hotel receipt", k=4)
    assert [h.id for h in hits] == ["travel"]


def test_a_query_with_no_known_word_returns_nothing():
    assert BM25Index(DOCS).search("zebra", k=3) == []


def test_k_limits_the_number_of_hits():
    assert len(BM25Index(DOCS).search("leave days laptop hotels", k=4)) == 4
    assert len(BM25Index(DOCS).search("leave days laptop hotels", k=2)) == 2


def test_an_empty_corpus_is_refused():
    with pytest.raises(CorpusError):
        BM25Index([])


@pytest.mark.parametrize("query", ["", "   \n\t", "?!.,;", "—"])
def test_a_query_without_words_is_refused(query):
    with pytest.raises(EmptyQueryError):
        BM25Index(DOCS).search(query)


def test_a_stopword_only_query_is_refused_when_stopwords_are_dropped():
    index = BM25Index(DOCS, tokenizer=lambda text: tokenize(text, stopwords=True))
    with pytest.raises(EmptyQueryError, match="no words left"):
        index.search("what is the")


@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_is_refused(k):
    with pytest.raises(ValueError, match="k must be at least 1"):
        BM25Index(DOCS).search("leave", k=k)


def test_bag_of_words_index_uses_whitespace_tokens_by_default():
    index = BagOfWordsIndex([Doc("d", "Leave, please."), Doc("e", "leave please")])
    assert [h.id for h in index.search("leave please")] == ["e"]  # "leave," is not "leave"


def test_bm25_finds_chinese_by_bigrams():
    docs = [Doc("zh", "员工每年有二十五天年假"), *DOCS]
    assert [h.id for h in BM25Index(docs).search("年假", k=2)] == ["zh"]
    assert BM25Index(docs, tokenizer=str.split).search("年假", k=2) == []
