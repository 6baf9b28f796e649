"""The model for each job of the pipelines (decomposer, judge, answerer, rewriter, reader): its setting names a
specialist (lesson 09), another chat model, or nothing (the chat model). Above both the chat backends
(ragkit.models) and the specialists (ragkit.specialists), since it picks between them.

RAGKIT_DECOMPOSER, RAGKIT_JUDGE, RAGKIT_ANSWERER: (empty: the chat model) | specialist | any RAGKIT_LLM value
RAGKIT_REWRITER: the same choices, for lesson 03's query rewriter (rewriter_model)
RAGKIT_READER: the same choices, for the reader (reader_model: a Reader, not a chat model)
RAGKIT_RELEVANCE: the same choices, for the relevance judge (relevance_model: a reranker scoring by P(yes))
Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

from ragkit.answering import ChatReader
from ragkit.config import ROLES, load_settings
from ragkit.errors import ConfigError
from ragkit.llm import ChatModel
from ragkit.models import chat_model
from ragkit.reader import Reader
from ragkit.reader_specialist import specialist_reader
from ragkit.rerank import RelevanceJudge
from ragkit.specialists import specialist

__all__ = ["ROLES", "reader_model", "relevance_model", "rewriter_model", "role_model"]


def role_model(role: str) -> ChatModel:
    """The model for one job: its setting's specialist or chat model, else the chat model."""
    if role not in ROLES:
        raise ConfigError(f"unknown role {role!r}: use one of {', '.join(ROLES)}")
    return _chat_for(role, getattr(load_settings(), role))


def reader_model() -> Reader:
    """The reader the reader setting names: the reader specialist, else a chat model (its spec's, else the chat
    model) prompted few-shot."""
    spec = load_settings().reader.strip()
    if spec.lower() == "specialist":
        return specialist_reader()
    return ChatReader(chat_model(spec or None))


def relevance_model() -> RelevanceJudge:
    """The relevance judge the relevance setting names: the relevance specialist, else a chat model (its spec's,
    else the chat model) asked in the same prompt."""
    return RelevanceJudge(_chat_for("relevance", load_settings().relevance))


def rewriter_model() -> ChatModel:
    """The query rewriter the rewriter setting names: the rewriter specialist (asked in its own format by
    ragkit.rewrite), else a chat model (its spec's, else the chat model) prompted few-shot."""
    return _chat_for("rewriter", load_settings().rewriter)


def _chat_for(job: str, spec: str) -> ChatModel:
    spec = spec.strip()
    return specialist(job) if spec.lower() == "specialist" else chat_model(spec or None)
