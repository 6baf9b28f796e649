"""The reader specialist as a Reader: the chat model fine-tuned to answer from numbered passages with a span
copied from them, "yes", "no" or NOT_IN_PASSAGES (lesson 09; built by `make specialists SPECIALISTS=reader`),
its reply made a span of the passages (ragkit.generate.spans); and the reader RAGKIT_READER names (reader_model):
this specialist, else a chat model prompted few-shot.
"""

from __future__ import annotations

import math
import time
from typing import Sequence

from ragkit.config import load_settings
from ragkit.corpus import Hit
from ragkit.generate.answering import ChatReader
from ragkit.generate.reader import Reader, ReaderAnswer
from ragkit.generate.spans import extract
from ragkit.models.jobs import parse_reader, reader_messages
from ragkit.models.llm import (
    ChatModel,
)
from ragkit.models.resolve import chat_model
from ragkit.models.specialists import JOBS, specialist
from ragkit.passages import passage_body


class SpecialistReader:
    """A reader specialist (or any chat model taught the reader's prompt) behind ragkit.generate.reader.Reader."""

    def __init__(self, chat: ChatModel):
        self.chat, self.name = chat, chat.name

    def answer(self, question: str, hits: Sequence[Hit]) -> ReaderAnswer:
        """The reply's span of the hits' passages, 'yes', 'no' or NOT_IN_PASSAGES."""
        if not question or not question.strip():
            raise ValueError("the question is empty")
        passages = [(hit.doc.title, hit.doc.text) for hit in hits]
        started = time.perf_counter()
        reply = self.chat.chat(reader_messages(question, passages), max_tokens=JOBS["reader"].max_tokens,
                               temperature=0.0, stop=["\n"])
        text, passage = reader_reply(reply.text, passages)
        return ReaderAnswer(text, passage, math.nan, time.perf_counter() - started)


def specialist_reader(*, source: str = "auto", threads: int | None = None) -> SpecialistReader:
    """The reader specialist (committed, else built), loaded once per process. Taught in lesson 09."""
    return SpecialistReader(specialist("reader", source=source, threads=threads))


def reader_reply(text: str, passages: Sequence[Sequence[str]]) -> tuple[str, int | None]:
    """A reader reply as the reader keeps it: its first line made a span of the (title, text) passages, and the
    passage it is from (None for yes, no, NOT_IN_PASSAGES or an answer in no passage)."""
    return extract(parse_reader(text), [passage_body(title, body) for title, body in passages])


def reader_model() -> Reader:
    """The reader the reader setting names: the reader specialist, else a chat model (its spec's, else the chat
    model) prompted few-shot."""
    spec = load_settings().reader.strip()
    if spec.lower() == "specialist":
        return specialist_reader()
    return ChatReader(chat_model(spec or None))
