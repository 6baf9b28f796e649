"""A reader: question + passages -> a short answer taken from them, "yes"/"no", or NOT_IN_PASSAGES.

Two kinds answer the same call: the chat model prompted few-shot (ragkit.generate.answering) and the reader
specialist, the chat model fine-tuned to copy answers (ragkit.generate.reader_specialist, lesson 09). RAGKIT_READER
picks one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from ragkit.corpus import Hit
from ragkit.passages import NOT_IN_PASSAGES


@dataclass(frozen=True)
class ReaderAnswer:
    """A reader's answer; the hit (0-based) its span came from (None for yes/no/none), its score and time."""

    text: str
    passage: int | None
    score: float
    seconds: float

    @property
    def found(self) -> bool:
        """Whether the reader gave an answer rather than NOT_IN_PASSAGES."""
        return bool(self.text) and self.text != NOT_IN_PASSAGES


class Reader(Protocol):
    """Anything that answers a question from retrieved passages (hits, in the order given; titles count)."""

    name: str

    def answer(self, question: str, hits: Sequence[Hit]) -> ReaderAnswer:
        """The short answer to question from the hits' passages."""
        ...
