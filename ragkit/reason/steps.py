"""What the reasoning pipelines (CoT-RAG, self-ask, RwR, voting) share: a meter on the chat calls of a run,
the job a specialist behind it serves, the step limit, keyword queries without a model, and retrieval that
never crashes on a junk query.

Taught in lessons/06_cot_rag.ipynb and lessons/07_rethinking_with_retrieval.ipynb.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ragkit.corpus import Hit, Search
from ragkit.errors import EmptyQueryError
from ragkit.models.llm import ChatModel, ChatReply
from ragkit.text import ENGLISH_STOPWORDS, WORD

READER_PASSAGES = 5  # how many of the steps' passages a pipeline's reader reads (CoT-RAG, RwR)


@dataclass(frozen=True, kw_only=True)
class Run:
    """What every reasoning run reports beside its own results: the question, its cost and what went wrong."""

    question: str
    tokens: int
    latency: float
    model: str
    warnings: tuple[str, ...] = ()


class Meter:
    """A chat model that adds up the tokens, calls and seconds of every call made through it."""

    def __init__(self, inner: ChatModel):
        self.inner, self.name, self.model = inner, inner.name, inner.name
        self.tokens, self.calls, self.seconds = 0, 0, 0.0

    def chat(self, messages, **options) -> ChatReply:
        """One chat call to the wrapped model, counted."""
        reply = self.inner.chat(messages, **options)
        self.tokens += reply.prompt_tokens + reply.completion_tokens
        self.calls += 1
        self.seconds += reply.seconds
        self.model = reply.model or self.model
        return reply


def served_job(chat: ChatModel) -> str:
    """The job of the specialist behind a chat model or its meter ('decomposer', 'judge', …), '' for a general one."""
    return getattr(getattr(chat, "inner", chat), "job", "") or ""


def models_used(meter: Meter, **roles: Meter | str) -> str:
    """The main model's name, then each role's model (a meter, or a name) where it differs ('m (plan: p)',
    'm (judge: j, answerer: a)')."""
    names = {role: m if isinstance(m, str) else m.model for role, m in roles.items()}
    others = [f"{role}: {name}" for role, name in names.items() if name != meter.model]
    return f"{meter.model} ({', '.join(others)})" if others else meter.model


def check_max_steps(max_steps: int) -> int:
    """Refuse max_steps below 1."""
    if not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be an integer of at least 1, got {max_steps!r}")
    return max_steps


def keyword_query(text: str) -> str:
    """A search query without an LLM: the text's words minus English stop words ('' if none are left)."""
    return " ".join(w for w in WORD.findall(text) if w.casefold() not in ENGLISH_STOPWORDS)


def safe_search(search: Search, query: str, *, k: int) -> tuple[list[Hit], str]:
    """The top-k hits for a query, and a warning instead of a crash for an empty or junk query."""
    if not query or not query.strip():
        return [], "the search query was empty; skipped retrieval"
    try:
        hits = list(search(query, k=k))[:k]
    except EmptyQueryError as err:
        return [], f"skipped retrieval for the query {query!r}: {err}"
    return hits, "" if hits else f"the retriever returned nothing for {query!r}"


def unique_ids(hit_lists: Sequence[Sequence[Hit]]) -> tuple[str, ...]:
    """Every hit's doc id once, in order of first appearance."""
    return tuple(dict.fromkeys(hit.id for hits in hit_lists for hit in hits))


def unique_hits(hit_lists: Sequence[Sequence[Hit]], *, limit: int = READER_PASSAGES) -> list[Hit]:
    """Each list's hits in turn (the 1st list's in rank order, then the 2nd's, ...), each doc once, the first limit."""
    first: dict[str, Hit] = {}
    for hits in hit_lists:
        for hit in hits:
            first.setdefault(hit.id, hit)
    return list(first.values())[:limit]
