"""ragkit: the small library the RAG course's lessons import, in packages that follow the course.

| module or package | what it holds | taught in |
|---|---|---|
| `errors` | the errors ragkit raises, each saying what to do | 00 |
| `config` | the settings, read once from the environment | 00 |
| `text` | tokenizers, accent folding, sentences, answers compared | 01 |
| `corpus` | documents, questions and hits; the course's data files | 00 |
| `passages` | passages as a model reads them: on one line, cut, numbered | 04 |
| `models/` | chat models, embedders, rerankers, the model cache, specialists | 00-09 |
| `search/` | bag of words, BM25, dense, fusion, rewriting, reranking, parent-child | 01-06 |
| `generate/` | readers: a question and passages in, a short answer out | 06-09 |
| `reason/` | chain of thought, CoT-RAG, self-ask, RwR, the step judge, voting | 06-07 |
| `evaluate/` | metrics, runners, tables, bootstrap intervals, plots | 01-08 |
| `train/` | fine-tuning, the course reranker, specialists (no other package imports it) | 04-09 |
| `exercises/` | each lesson's exercise checks | 00-09 |
"""

from ragkit.config import PROJECT_DIR, load_settings
from ragkit.corpus import (
                           DATA_DIR,
                           Doc,
                           Hit,
                           Question,
                           Search,
                           load_docs,
                           load_questions,
                           passage_text,
                           read_json,
                           read_jsonl,
)
from ragkit.errors import (
                           BackendError,
                           BackendUnreachable,
                           ConfigError,
                           CorpusError,
                           EmptyQueryError,
                           ModelNotFound,
                           RagkitError,
)
from ragkit.passages import NOT_IN_PASSAGES, excerpts_text, shorten
from ragkit.text import (
                           answer_key,
                           fold_diacritics,
                           normalize_answer,
                           search_tokenize,
                           split_sentences,
                           tokenize,
                           whitespace_tokenize,
)

__version__ = "0.1.0"
__all__ = ["PROJECT_DIR", "load_settings", "DATA_DIR", "Doc", "Hit", "Question", "Search", "load_docs",
           "load_questions", "passage_text", "read_json", "read_jsonl", "BackendError", "BackendUnreachable",
           "ConfigError", "CorpusError", "EmptyQueryError", "ModelNotFound", "RagkitError", "NOT_IN_PASSAGES",
           "excerpts_text", "shorten", "answer_key", "fold_diacritics", "normalize_answer", "search_tokenize",
           "split_sentences", "tokenize", "whitespace_tokenize"]
