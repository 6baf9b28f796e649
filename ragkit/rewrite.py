"""Query rewriting: one cleaned-up query, or several (as JSON) searched together and fused.

Taught in lessons/03_query_rewriting.ipynb.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ragkit import models
from ragkit.corpus import check_query
from ragkit.llm import ChatModel
from ragkit.reasoning import json_items

MAX_QUERIES = 5

REWRITE_PROMPT = [
    {"role": "system", "content": "Rewrite the search query as one clear, complete question in the same "
                                  "language as the query. Restore missing accents. Reply with the question only."},
    {"role": "user", "content": "lam them gio co duoc tra luong khong"},
    {"role": "assistant", "content": "Làm thêm giờ có được trả lương không?"},
    {"role": "user", "content": "wfh laptop rules"},
    {"role": "assistant", "content": "What are the rules for working from home with a company laptop?"},
]

MULTI_QUERY_PROMPT = [
    {"role": "system", "content": "Write up to {n} different search questions that together cover what the "
                                  "user asks. Reply with JSON: {{\"questions\": [...]}}."},
    {"role": "user", "content": "can I expense a taxi to the airport"},
    {"role": "assistant", "content": json.dumps({"questions": [
        "Are taxi rides to the airport reimbursed?", "Which travel costs can be claimed as expenses?",
        "How do I submit a receipt for a taxi?"]})},
]


@dataclass(frozen=True)
class Rewrite:
    """The queries a rewrite produced, the model's raw reply, and anything that went wrong."""

    original: str
    queries: tuple[str, ...]
    raw: str = ""
    warnings: tuple[str, ...] = ()
    seconds: float = 0.0


def questions_schema(n: int = MAX_QUERIES) -> dict:
    """JSON schema for {"questions": [1..n short strings]}: the constrained form of the reply."""
    item = {"type": "string", "minLength": 3, "maxLength": 150}
    questions = {"type": "array", "items": item, "minItems": 1, "maxItems": n}
    return {"type": "object", "properties": {"questions": questions}, "required": ["questions"]}


def rewrite_query(query: str, *, chat: ChatModel | None = None) -> Rewrite:
    """One rewritten query; an empty reply keeps the original query and says so."""
    chat = chat or models.chat_model()
    reply = chat.chat(REWRITE_PROMPT + [{"role": "user", "content": check_query(query)}], max_tokens=32,
                      stop=["\n"])
    text = _strip_quotes(reply.text)
    if not text:
        return Rewrite(query, (query,), reply.text, ("the model returned an empty rewrite; kept the "
                                                     "original query",), reply.seconds)
    return Rewrite(query, (text,), reply.text, (), reply.seconds)


def multi_query(query: str, *, chat: ChatModel | None = None, n: int = MAX_QUERIES,
                constrained: bool = True, keep_original: bool = True) -> Rewrite:
    """Up to n search questions from one query, asked as JSON (schema-constrained if `constrained`)."""
    if not 1 <= n <= MAX_QUERIES:
        raise ValueError(f"n must be between 1 and {MAX_QUERIES}, got {n}")
    chat = chat or models.chat_model()
    prompt = [dict(m, content=m["content"].format(n=n)) if m["role"] == "system" else m
              for m in MULTI_QUERY_PROMPT]
    reply = chat.chat(prompt + [{"role": "user", "content": check_query(query)}], max_tokens=150,
                      json_schema=questions_schema(n) if constrained else None)
    questions, warnings = parse_questions(reply.text, limit=n)
    if not questions:
        warnings.append("no questions could be read from the reply; searching with the original query only")
    queries = _unique(([query] if keep_original or not questions else []) + questions)
    return Rewrite(query, tuple(queries), reply.text, tuple(warnings), reply.seconds)


def parse_questions(text: str, *, limit: int = MAX_QUERIES) -> tuple[list[str], list[str]]:
    """Questions from a JSON reply, or from its lines if the JSON is broken; never raises."""
    warnings: list[str] = []
    items = json_items(text, key="questions")
    if items is None:
        warnings.append("the reply was not valid JSON; read it line by line instead")
        items = [re.sub(r"^\s*(?:[-*•]|\d+[.)]|q\d+:)\s*", "", line, flags=re.I) for line in text.splitlines()]
    questions = _unique(_strip_quotes(str(item)) for item in items if isinstance(item, (str, int, float)))
    if len(questions) < len([i for i in items if str(i).strip()]):
        warnings.append("dropped empty or repeated questions")
    if len(questions) > limit:
        warnings.append(f"kept the first {limit} of {len(questions)} questions")
    return questions[:limit], warnings


def _strip_quotes(text: str) -> str:
    return text.strip().strip("\"'“”`").strip()


def _unique(texts) -> list[str]:
    seen, kept = set(), []
    for text in texts:
        key = text.strip().casefold()
        if key and key not in seen:
            seen.add(key)
            kept.append(text.strip())
    return kept
