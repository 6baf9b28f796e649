"""The reader specialist as a Reader: the chat model fine-tuned to answer from numbered passages with a span
copied from them, "yes", "no" or NOT_IN_PASSAGES (lesson 09; built by `make specialists SPECIALISTS=reader`),
its reply made a span of the passages (ragkit.spans). RAGKIT_READER=specialist picks it (ragkit.roles).
"""

from __future__ import annotations

import math
import time
from typing import Sequence

from ragkit.corpus import Hit
from ragkit.jobs import reader_messages
from ragkit.llm import ChatModel
from ragkit.reader import ReaderAnswer
from ragkit.specialists import JOBS, reader_reply, specialist


class SpecialistReader:
    """A reader specialist (or any chat model taught the reader's prompt) behind ragkit.reader.Reader."""

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
