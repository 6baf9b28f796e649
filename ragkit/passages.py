"""Passages as prompts show them: on one line, cut to a length, numbered as excerpts.

Taught in lessons/04_reranking.ipynb (a chat model reads a passage).
"""

from __future__ import annotations

from typing import Sequence

from ragkit.corpus import Hit

NOT_IN_PASSAGES = "not in the passages"  # what a reader replies when no passage holds the answer
PASSAGE_CHARS = 600  # a passage a model reads is cut here (a reader's, a relevance judge's), in training and in use


def shorten(text: str, limit: int) -> str:
    """The text on one line, cut to at most `limit` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def passage_body(title: str, text: str) -> str:
    """A passage on one line, as a model reads it: 'title: text', or the text alone."""
    text = " ".join(str(text).split())
    return f"{title}: {text}" if title else text


def excerpts_text(hits: Sequence[Hit], *, max_chars: int = 500) -> str:
    """Hits as numbered excerpts for a prompt: '[1] title: text'."""
    return "\n".join(f"[{i}] {shorten(passage_body(hit.doc.title, hit.doc.text), max_chars)}"
                     for i, hit in enumerate(hits, start=1))
