"""The chat model for each job of the pipelines (decomposer, judge, answerer, rewriter, relevance judge): its setting
names a specialist (lesson 09), another chat model, or nothing (the chat model). Above both the chat backends
(ragkit.models.resolve) and the specialists (ragkit.models.specialists), since it picks between them.

RAGKIT_DECOMPOSER, RAGKIT_JUDGE, RAGKIT_ANSWERER: (empty: the chat model) | specialist | any RAGKIT_LLM value
RAGKIT_REWRITER: the same choices, for lesson 03's query rewriter (rewriter_model)
RAGKIT_READER: the same choices, for the reader (ragkit.generate.reader_specialist.reader_model: a Reader)
RAGKIT_RELEVANCE: the same choices, for the relevance judge (relevance_model: a reranker scoring by P(yes))
Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

from ragkit.config import ROLES, load_settings
from ragkit.errors import ConfigError
from ragkit.models.llm import ChatModel
from ragkit.models.rerankers import RelevanceJudge
from ragkit.models.resolve import chat_model
from ragkit.models.specialists import specialist

__all__ = ["ROLES", "relevance_model", "rewriter_model", "role_model"]


def role_model(role: str) -> ChatModel:
    """The model for one job: its setting's specialist or chat model, else the chat model."""
    if role not in ROLES:
        raise ConfigError(f"unknown role {role!r}: use one of {', '.join(ROLES)}")
    return _chat_for(role, getattr(load_settings(), role))


def relevance_model() -> RelevanceJudge:
    """The relevance judge the relevance setting names: the relevance specialist, else a chat model (its spec's,
    else the chat model) asked in the same prompt."""
    return RelevanceJudge(_chat_for("relevance", load_settings().relevance))


def rewriter_model() -> ChatModel:
    """The query rewriter the rewriter setting names: the rewriter specialist (asked in its own format by
    ragkit.search.rewrite), else a chat model (its spec's, else the chat model) prompted few-shot."""
    return _chat_for("rewriter", load_settings().rewriter)


def _chat_for(job: str, spec: str) -> ChatModel:
    spec = spec.strip()
    return specialist(job) if spec.lower() == "specialist" else chat_model(spec or None)
