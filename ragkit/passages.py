"""Passages as prompts show them: on one line, cut to a length, numbered as excerpts."""

from __future__ import annotations

from typing import Sequence

from ragkit.corpus import Hit, passage_text


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
