"""ragkit.search: finding the passages a question needs, from bag of words to reranking.

| module | what it holds | taught in |
|---|---|---|
| `lexical` | bag-of-words cosine and BM25 over an inverted index | 01 |
| `store` | the vector store: Qdrant in memory, in a folder or on a server | 02 |
| `dense` | dense search over embeddings, and hybrid search (dense + BM25) | 02 |
| `fusion` | merging rankings: reciprocal rank fusion, interleaving | 02 |
| `rewrite` | a chat model rewrites the query: keywords, several search questions | 03 |
| `rerank` | a reranker reorders the first stage's hits | 04 |
| `parent_child` | search small chunks, return their parent documents | 05 |
| `follow_up` | search again with what the first hits name | 06 |
"""

from ragkit.search.dense import DenseIndex, HybridIndex, cosine
from ragkit.search.follow_up import follow_up_search
from ragkit.search.fusion import RRF_K, fuse_queries, interleave, lead_then_interleave, reciprocal_rank_fusion
from ragkit.search.lexical import BagOfWordsIndex, BM25Index, bag_of_words_cosine
from ragkit.search.parent_child import ParentChildIndex, child_docs
from ragkit.search.rerank import rerank
from ragkit.search.rewrite import REWRITE_PROMPT, multi_query, parse_questions, questions_schema, rewrite_query
from ragkit.search.store import VectorStore

__all__ = ["DenseIndex", "HybridIndex", "cosine", "follow_up_search", "RRF_K", "fuse_queries", "interleave",
           "lead_then_interleave", "reciprocal_rank_fusion", "BagOfWordsIndex", "BM25Index", "bag_of_words_cosine",
           "ParentChildIndex", "child_docs", "rerank", "REWRITE_PROMPT", "multi_query", "parse_questions",
           "questions_schema", "rewrite_query", "VectorStore"]
