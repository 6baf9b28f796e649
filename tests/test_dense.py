import numpy as np
import pytest

from ragkit.corpus import Doc, passage_text
from ragkit.errors import CorpusError, EmptyQueryError
from ragkit.search.dense import DenseIndex, HybridIndex, cosine
from ragkit.search.lexical import BM25Index
from tests.fakes import HashingEmbedder

DOCS = [Doc("sick", "Report sick leave in Slack before 9:30.", "Sick leave", lang="en", topic="sick"),
        Doc("vpn", "Connect to the VPN before opening the wiki.", "VPN", lang="en", topic="security"),
        Doc("trip", "Book hotels for business trips in Navan.", "Travel", lang="en", topic="travel")]


@pytest.fixture
def index():
    return DenseIndex(DOCS, embedder=HashingEmbedder())


def test_cosine_of_rows():
    a = np.array([[1.0, 0.0], [1.0, 1.0]])
    assert np.allclose(cosine(a, a), [[1.0, 0.70711], [0.70711, 1.0]], atol=1e-5)
    assert np.allclose(cosine([[3.0, 4.0]], [[6.0, 8.0], [-4.0, 3.0]]), [[1.0, 0.0]], atol=1e-6)


def test_a_zero_row_has_cosine_zero_not_nan():
    assert cosine([[0.0, 0.0]], [[1.0, 2.0]]).tolist() == [[0.0]]


def test_passage_text_puts_the_title_first():
    assert passage_text(DOCS[0]) == "Sick leave\nReport sick leave in Slack before 9:30."
    assert passage_text(Doc("x", "body")) == "body"


def test_dense_index_finds_the_nearest_doc_and_keeps_fields(index):
    top = index.search("sick leave slack", k=1)[0]
    assert top.doc == DOCS[0]
    assert index.store.count(index.collection) == 3
    assert index.vectors.shape == (3, HashingEmbedder.dim)


def test_dense_index_filters_on_payload(index):
    hits = index.search("sick leave slack", k=3, where={"topic": "travel"})
    assert [h.id for h in hits] == ["trip"]


def test_dense_index_refuses_bad_input(index):
    with pytest.raises(EmptyQueryError):
        index.search("  ")
    with pytest.raises(ValueError, match="k must be"):
        index.search("vpn", k=0)
    with pytest.raises(CorpusError, match="empty"):
        DenseIndex([], embedder=HashingEmbedder())


def test_hybrid_fuses_keyword_and_dense(index):
    hybrid = HybridIndex([BM25Index(DOCS).search, index.search], depth=3)
    hits = hybrid.search("vpn wiki", k=2)
    assert hits[0].id == "vpn" and len(hits) == 2


def test_hybrid_with_a_query_keywords_cannot_match_falls_to_dense(index):
    bm25 = BM25Index(DOCS)
    thai = "ลาป่วย"  # a script the tokenizer has no rules for: one unknown token, no keyword match
    assert bm25.search(thai) == []
    hits = HybridIndex([bm25.search, index.search]).search(thai, k=3)
    assert [h.id for h in hits] == [h.id for h in index.search(thai, k=3)]


def test_hybrid_needs_retrievers_and_a_query(index):
    with pytest.raises(ValueError, match="at least one"):
        HybridIndex([])
    with pytest.raises(EmptyQueryError):
        HybridIndex([index.search]).search("")


@pytest.mark.model
def test_dense_index_with_e5_matches_across_languages(e5):
    docs = [Doc("vi", "Nhân viên văn phòng Hà Nội được 12 ngày nghỉ phép năm."),
            Doc("en", "Laptops are replaced every four years.")]
    top = DenseIndex(docs, embedder=e5).search("How many days of annual leave in Hanoi?", k=1)[0]
    assert top.id == "vi"
