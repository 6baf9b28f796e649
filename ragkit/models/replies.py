"""Reading chat-model replies, and constraining them where the backend allows: the strings of a JSON list,
the lines of a numbered or bulleted list, a list of steps from either (never raising), the warnings a reply
earns (cut off, repeats, copied examples), and the GBNF grammars and JSON schemas that shape replies.
Taught in lessons/03_query_rewriting.ipynb (JSON lists of questions) and lessons/06_cot_rag.ipynb (steps).
"""

from __future__ import annotations

import json
import re
from typing import Collection, Sequence

from ragkit.models.llm import ChatModel, ChatReply, LlamaCppChat
from ragkit.text import WORD

CONSTRAINTS = ("auto", "grammar", "json", "none")
ANSWER_LEAD = "So the answer is"  # how a chain of thought's last line starts
# "So the answer is", "the answer is:", "Answer:", "The short answer is" before an answer
ANSWER_PATTERN = re.compile(r"(?:(?:so\s*,?\s*)?the\s+)?(?:short\s+)?answer\b(?:\s+is)?\s*[:\-]?\s*", re.I)
MAX_REPEAT_WARNINGS = 3  # a looping reply repeats a line dozens of times: name a few, count the rest

# "Step 2:", "2.", "2)", "(2)", "S2:", "- ", "* ", "• " at the start of a line
_MARKER = re.compile(r"^\s*(?:(?:step|s)\s*\d+\s*[:.)\-]|\(?\d+\s*[.):]|[-*•·])\s*", re.I)


def pick_constraint(chat: ChatModel, constrain: str, *, otherwise: str = "json") -> str:
    """'auto' becomes 'grammar' for a llama.cpp model (GBNF works there) and `otherwise` for the rest."""
    if constrain not in CONSTRAINTS:
        raise ValueError(f"constrain must be one of {', '.join(CONSTRAINTS)}, got {constrain!r}")
    if constrain != "auto":
        return constrain
    return "grammar" if isinstance(chat, LlamaCppChat) else otherwise


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
    return text if WORD.search(text) else ""


def step_key(text: str) -> str:
    """What two steps must share to count as the same step: their words, case-folded."""
    return " ".join(WORD.findall(text.casefold()))


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


def list_grammar(max_items: int, *, prefix: str = "{n}. ", tail: str = "", max_chars: int = 150) -> str:
    """GBNF for 1..max_items lines numbered in order ('1. …', '2. …'), then an optional tail rule."""
    items = ""
    for n in range(max_items, 0, -1):
        line = f'"{prefix.format(n=n)}" line'
        items = f"{line} ({items})?" if items else line
    root = f"root ::= {items}" + (" tail" if tail else "")
    rules = [root, f'line ::= [^\\n]{{3,{max_chars}}} "\\n"']
    return "\n".join(rules + ([f"tail ::= {tail}"] if tail else [])) + "\n"


def steps_schema(max_steps: int) -> dict:
    """JSON schema for {"steps": [1..max_steps short strings]}."""
    item = {"type": "string", "minLength": 3, "maxLength": 150}
    steps = {"type": "array", "items": item, "minItems": 1, "maxItems": max_steps}
    return {"type": "object", "properties": {"steps": steps}, "required": ["steps"]}


def parse_steps(text: str, *, max_steps: int) -> tuple[list[str], list[str]]:
    """Steps from JSON, a numbered or bulleted list, broken JSON or bare question lines; never raises."""
    items, problem = json_items(text)
    warnings = [problem] if problem else []
    if items is None and not problem:
        items, warnings = _steps_without_json(text or "")
    steps, notes = drop_repeats(items or [])
    if len(steps) > max_steps:
        notes.append(f"kept the first {max_steps} of {len(steps)} steps")
    return steps[:max_steps], warnings + notes


def _steps_without_json(text: str) -> tuple[list[str], list[str]]:
    """Steps from a reply without valid JSON: its marked lines, else its quoted strings, else its questions."""
    items = marked_lines(text)
    if not items and '"' in text:
        items = [clean_item(s) for s in re.findall(r'"((?:[^"\\\n]|\\.){3,})"', text) if s != "steps"]
        if items:
            return items, ["the reply was broken JSON; read the quoted strings in it as steps"]
    if not items:
        items = [clean_item(line) for line in text.splitlines() if line.strip().endswith("?")]
        if items:
            return items, ["the reply had no numbered list; read each question line in it as a step"]
    return items, []
