"""What every record builder reads the same way: passages cut to length, SQuAD text in windows of whole
sentences, HotpotQA paragraphs, and StrategyQA's fields."""

from __future__ import annotations

import ast

from ragkit.passages import PASSAGE_CHARS
from ragkit.text import split_sentences

WINDOW_CHARS = 400  # a SQuAD window: whole sentences up to about this long




def cut(text: str, limit: int = PASSAGE_CHARS) -> str:
    """The text on one line, cut at the last whole word before limit characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0]


def windows(text: str, limit: int = WINDOW_CHARS) -> list[tuple[int, str]]:
    """Consecutive whole sentences grouped up to about limit characters: (start offset, window text)."""
    found, start, current = [], 0, ""
    cursor = 0
    for sentence in split_sentences(text):
        at = text.find(sentence, cursor)
        cursor = at + len(sentence) if at >= 0 else cursor
        if current and len(current) + len(sentence) > limit:
            found.append((start, current))
            current = ""
        if not current:
            start = max(at, 0)
        current = f"{current} {sentence}".strip()
    return found + ([(start, current)] if current else [])


def paragraphs_of(item: dict) -> tuple[dict[str, str], list[str]]:
    """A HotpotQA question's paragraphs by title, and its supporting titles: from the distractor setting's
    context and supporting_facts, or from a copy that lists supporting and distractor paragraphs apart."""
    if "context" in item:
        paragraphs = {title: cut("".join(sentences)) for title, sentences in listed_field(item["context"])}
        return paragraphs, list(dict.fromkeys(title for title, _ in listed_field(item["supporting_facts"])))
    listed = [*listed_field(item["supporting"]), *listed_field(item["distractors"])]
    return ({p["title"]: cut(p["text"]) for p in listed},
            list(dict.fromkeys(p["title"] for p in listed_field(item["supporting"]))))


def listed_field(value):
    """A field that some copies store as a Python-literal string (HippoRAG's sample) and others as a list."""
    if isinstance(value, str):
        return ast.literal_eval(value)
    return value


def is_true(value) -> bool:
    """Whether a StrategyQA answer field (True, "True", "yes") says yes."""
    return value is True or str(value).strip().lower() in ("true", "yes")
