"""Query rewriting: one cleaned-up query, or several (as JSON) searched together and fused.

Taught in lessons/03_query_rewriting.ipynb.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ragkit.corpus import check_query
from ragkit.models import resolve
from ragkit.models.jobs import rewriter_messages
from ragkit.models.llm import ChatModel
from ragkit.models.replies import clean_item, drop_repeats, json_items, length_warning

MAX_QUERIES = 5
SPECIALIST_TOKENS = 96  # the rewriter specialist's keyword reply: room for a restored Vietnamese question
_LIST_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)]|q\d+:)\s*", re.I)  # "- ", "1.", "2)", "Q3:" before a question

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
    """The queries a rewrite produced, the raw reply, what went wrong, and if it was cut at the token limit."""

    original: str
    queries: tuple[str, ...]
    raw: str = ""
    warnings: tuple[str, ...] = ()
    seconds: float = 0.0
    truncated: bool = False


def questions_schema(n: int = MAX_QUERIES) -> dict:
    """JSON schema for {"questions": [1..n short strings]}: the constrained form of the reply."""
    item = {"type": "string", "minLength": 3, "maxLength": 150}
    questions = {"type": "array", "items": item, "minItems": 1, "maxItems": n}
    return {"type": "object", "properties": {"questions": questions}, "required": ["questions"]}


def rewrite_query(query: str, *, chat: ChatModel | None = None) -> Rewrite:
    """One rewritten query (the rewriter specialist's is a keyword query); an empty reply keeps the original
    query, and a cut-off one is flagged."""
    chat = chat or resolve.chat_model()
    # the specialist restores a whole Vietnamese question, whose accented letters take several tokens each
    reply = chat.chat(prompt_for(chat, "keywords", REWRITE_PROMPT, query), stop=["\n"],
                      max_tokens=SPECIALIST_TOKENS if is_rewriter(chat) else 32)
    cut = length_warning(reply, "rewriting the query")
    text = clean_item(reply.text)
    if not text:
        return Rewrite(query, (query,), reply.text, (*cut, "the model returned an empty rewrite; kept the "
                                                           "original query"), reply.seconds, bool(cut))
    return Rewrite(query, (text,), reply.text, tuple(cut), reply.seconds, bool(cut))


def multi_query(query: str, *, chat: ChatModel | None = None, n: int = MAX_QUERIES,
                constrained: bool = True, keep_original: bool = True) -> Rewrite:
    """Up to n search questions from one query, asked as JSON (schema-constrained if `constrained`)."""
    if not 1 <= n <= MAX_QUERIES:
        raise ValueError(f"n must be between 1 and {MAX_QUERIES}, got {n}")
    chat = chat or resolve.chat_model()
    prompt = [dict(m, content=m["content"].format(n=n)) if m["role"] == "system" else m
              for m in MULTI_QUERY_PROMPT]
    reply = chat.chat(prompt_for(chat, "questions", prompt, query), max_tokens=150,
                      json_schema=questions_schema(n) if constrained else None)
    cut = length_warning(reply, "writing the search questions")
    questions, warnings = parse_questions(reply.text, limit=n)
    if not questions:
        warnings.append("no questions could be read from the reply; searching with the original query only")
    # a question that repeats the original query (or another question) is searched once, without a warning
    queries, _ = drop_repeats(([query] if keep_original or not questions else []) + questions)
    return Rewrite(query, tuple(queries), reply.text, tuple(cut + warnings), reply.seconds, bool(cut))


def is_rewriter(chat: ChatModel) -> bool:
    """Whether chat is the rewriter specialist (ragkit.models.specialists), which has a prompt of its own."""
    return getattr(chat, "job", None) == "rewriter"


def prompt_for(chat: ChatModel, form: str, few_shot: list[dict], query: str) -> list[dict]:
    """The rewriter specialist's prompt for the form ('keywords: …' / 'questions: …'), else the few-shot one."""
    if is_rewriter(chat):
        return rewriter_messages(form, check_query(query))
    return few_shot + [{"role": "user", "content": check_query(query)}]


def parse_questions(text: str, *, limit: int = MAX_QUERIES) -> tuple[list[str], list[str]]:
    """Questions from a JSON reply (none if its JSON has the wrong shape), else from its lines; never raises."""
    items, problem = json_items(text, key="questions")
    warnings = [problem] if problem else []
    if items is None and not problem:
        warnings.append("the reply was not valid JSON; read it line by line instead")
        items = [clean_item(_LIST_MARKER.sub("", line)) for line in (text or "").splitlines()]
    questions, repeats = drop_repeats(items or [], label="question")
    if len(questions) > limit:
        repeats.append(f"kept the first {limit} of {len(questions)} questions")
    return questions[:limit], warnings + repeats
