"""Shared parts of the reasoning pipelines: reading steps from a reply, metering chat calls, retrieval
that never crashes on a junk query, and the markdown/HTML pieces of a trace.

Taught in lessons/06_cot_rag.ipynb and lessons/07_rethinking_with_retrieval.ipynb.
"""

from __future__ import annotations

import json
import re
from typing import Collection, Sequence

from ragkit.corpus import Hit, Search, passage_text
from ragkit.errors import EmptyQueryError
from ragkit.llm import ChatModel, ChatReply, LlamaCppChat
from ragkit.text import ENGLISH_STOPWORDS

CONSTRAINTS = ("auto", "grammar", "json", "none")
MAX_REPEAT_WARNINGS = 3  # a looping reply repeats a line dozens of times: name a few, count the rest

# "Step 2:", "2.", "2)", "(2)", "S2:", "- ", "* ", "• " at the start of a line
_MARKER = re.compile(r"^\s*(?:(?:step|s)\s*\d+\s*[:.)\-]|\(?\d+\s*[.):]|[-*•·])\s*", re.I)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


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


def models_used(meter: Meter, **roles: Meter) -> str:
    """The main model's name, then each role's model where it differs ('m (plan: p)', 'm (judge: j, answerer: a)')."""
    others = [f"{role}: {m.model}" for role, m in roles.items() if m.model != meter.model]
    return f"{meter.model} ({', '.join(others)})" if others else meter.model


def pick_constraint(chat: ChatModel, constrain: str, *, otherwise: str = "json") -> str:
    """'auto' becomes 'grammar' for a llama.cpp model (GBNF works there) and `otherwise` for the rest."""
    if constrain not in CONSTRAINTS:
        raise ValueError(f"constrain must be one of {', '.join(CONSTRAINTS)}, got {constrain!r}")
    if constrain != "auto":
        return constrain
    return "grammar" if isinstance(chat, LlamaCppChat) else otherwise


def check_max_steps(max_steps: int) -> int:
    """Refuse max_steps below 1."""
    if not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be an integer of at least 1, got {max_steps!r}")
    return max_steps


def json_items(text: str, key: str = "steps") -> tuple[list[str] | None, str]:
    """The strings of the reply's JSON list (or of its object's `key` list), and what was wrong with it.

    (None, "") if the reply holds no JSON; (None, warning) if its JSON is not a list of strings.
    A bare JSON string is read as text, and a list in chatter only counts if it holds strings.
    """
    shape = ""
    for value, whole in _json_values(text or ""):
        found = _keyed_list(value, key)
        strings = [v for v in found if isinstance(v, str)] if isinstance(found, list) else []
        if isinstance(found, list) and (strings or not found):
            return [clean_item(s) for s in strings], _dropped_note(found)
        if (whole and not isinstance(value, str)) or isinstance(value, dict):
            shape = shape or _shape(value, key)
    return None, shape and f"the reply was valid JSON of the wrong shape: {shape}, not a list of strings"


def _json_values(text: str):
    """(value, whole?) for the text parsed whole, then for each {...} or [...] in it that parses."""
    candidates = [(text, True)] + [(c, False) for c in re.findall(r"\{.*\}|\[.*\]", text, flags=re.S)]
    for candidate, whole in candidates:
        try:
            yield json.loads(candidate), whole
        except (json.JSONDecodeError, RecursionError):
            continue


def _keyed_list(value, key: str):
    """The object's `key` value (or its first list), the value itself if it is not an object."""
    if not isinstance(value, dict):
        return value
    return value.get(key, next((v for v in value.values() if isinstance(v, list)), value))


_KINDS = {bool: ("true/false", "true/false values"), int: ("a number", "numbers"), float: ("a number", "numbers"),
          str: ("a string", "strings"), dict: ("an object", "objects"), list: ("a list", "lists"),
          type(None): ("null", "nulls")}


def _kind(value) -> str:
    """What a JSON value is, in words: 'a number', 'a list of numbers and objects'."""
    if isinstance(value, list):
        return f"a list of {_kinds(value)}" if value else "an empty list"
    return _KINDS[type(value)][0]


def _kinds(values: list) -> str:
    """What the values of a JSON list are, in words: 'numbers and objects'."""
    return " and ".join(sorted({_KINDS[type(v)][1] for v in values}))


def _shape(value, key: str) -> str:
    """The shape of JSON that holds no list of strings, for a warning."""
    if isinstance(value, dict) and key in value:
        return f'"{key}" is {_kind(value[key])}'
    if isinstance(value, dict):
        keys = ", ".join(f'"{k}"' for k in list(value)[:5]) or "none"
        return f'an object without a "{key}" list (keys: {keys})'
    return _kind(value)


def _dropped_note(items: list) -> str:
    """A warning naming the JSON list items that were not strings ('' if all were)."""
    others = [v for v in items if not isinstance(v, str)]
    if not others:
        return ""
    return f"dropped {len(others)} of {len(items)} JSON items that were not strings ({_kinds(others)})"


def marked_lines(text: str) -> list[str]:
    """The content of the lines that start with a number, 'Step N:' or a bullet (other lines ignored)."""
    return [clean_item(_MARKER.sub("", line, count=1)) for line in (text or "").splitlines()
            if _MARKER.match(line)]


def clean_item(text: str) -> str:
    """One step's text without surrounding quotes and spaces; '' if it holds no word at all."""
    text = text.strip().strip("\"'“”`").strip()
    return text if _WORD.search(text) else ""


def step_key(text: str) -> str:
    """What two steps must share to count as the same step: their words, case-folded."""
    return " ".join(_WORD.findall(text.casefold()))


def drop_repeats(items: Sequence[str], *, label: str = "step") -> tuple[list[str], list[str]]:
    """Items without empty ones and repeats (same words, any case), with a warning per repeat."""
    first: dict[str, int] = {}
    kept, warnings, repeats = [], [], 0
    for number, item in enumerate(items, start=1):
        key = step_key(item)
        if not key:
            continue
        if key in first:
            repeats += 1
            if repeats <= MAX_REPEAT_WARNINGS:
                warnings.append(f"{label} {number} repeated {label} {first[key]}; dropped it")
            continue
        first[key] = number
        kept.append(item.strip())
    if repeats > MAX_REPEAT_WARNINGS:
        warnings.append(f"... and {repeats - MAX_REPEAT_WARNINGS} more repeated {label}s dropped")
    return kept, warnings


def copy_warnings(question: str, steps: Sequence[str], examples: Sequence[str],
                  markers: Collection[str] = ()) -> list[str]:
    """Warnings for steps that copy a few-shot example (its text, or a marker word the question lacks)."""
    copied = {step_key(text) for text in examples}
    asked = set(step_key(question).split())
    warnings = []
    for number, step in enumerate(steps, start=1):
        borrowed = sorted(set(step_key(step).split()) & set(markers) - asked)
        if step_key(step) in copied:
            warnings.append(f"step {number} copies the prompt's example ({step!r}), not the question")
        elif borrowed:
            warnings.append(f"step {number} copies the prompt's example: {step!r} uses "
                            f"{', '.join(map(repr, borrowed))} from the example, not from the question")
        elif step_key(step) == step_key(question) and len(steps) > 1:
            warnings.append(f"step {number} repeats the question verbatim")
    return warnings


def length_warning(reply: ChatReply, doing: str) -> list[str]:
    """A warning if the reply stopped at the token limit (a loop, or a budget too small)."""
    if reply.finish_reason == "length":
        return [f"the model hit the token limit while {doing}: its reply was cut off"]
    return []


def keyword_query(text: str) -> str:
    """A search query without an LLM: the text's words minus English stop words ('' if none are left)."""
    return " ".join(w for w in _WORD.findall(text) if w.casefold() not in ENGLISH_STOPWORDS)


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


def shorten(text: str, limit: int) -> str:
    """The text on one line, cut to at most `limit` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def passage_line(doc) -> str:
    """A passage on one line: 'title: text' (its text alone if it has no title)."""
    return passage_text(doc).replace("\n", ": ", 1)


def excerpts_text(hits: Sequence[Hit], *, max_chars: int = 500) -> str:
    """Hits as numbered excerpts for a prompt: '[1] title: text'."""
    return "\n".join(f"[{i}] {shorten(passage_line(hit.doc), max_chars)}"
                     for i, hit in enumerate(hits, start=1))


def list_grammar(max_items: int, *, prefix: str = "{n}. ", tail: str = "", max_chars: int = 150) -> str:
    """GBNF for 1..max_items lines numbered in order ('1. …', '2. …'), then an optional tail rule."""
    items = ""
    for n in range(max_items, 0, -1):
        line = f'"{prefix.format(n=n)}" line'
        items = f"{line} ({items})?" if items else line
    root = f"root ::= {items}" + (" tail" if tail else "")
    rules = [root, f'line ::= [^\\n]{{3,{max_chars}}} "\\n"']
    return "\n".join(rules + ([f"tail ::= {tail}"] if tail else [])) + "\n"
