"""ragkit: the small library the RAG course's lessons import."""

from ragkit.corpus import Doc, Hit, Question, Search, load_docs, load_questions
from ragkit.errors import (
                           BackendError,
                           BackendUnreachable,
                           ConfigError,
                           CorpusError,
                           EmptyQueryError,
                           ModelNotFound,
                           RagkitError,
)

__version__ = "0.1.0"
__all__ = ["Doc", "Hit", "Question", "Search", "load_docs", "load_questions", "RagkitError", "CorpusError",
           "EmptyQueryError", "ConfigError", "BackendError", "BackendUnreachable", "ModelNotFound"]
