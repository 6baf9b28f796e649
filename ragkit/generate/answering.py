"""The last stage of a RAG pipeline: read the retrieved passages and write a short answer.

A reader is the chat model given numbered passages and a question, told to reply with the short answer only,
after one worked example (ChatReader); any other ragkit.generate.reader.Reader (the reader specialist, lesson 09)
can take its place. How its answers are scored: ragkit.evaluate.reading.

Taught in lessons/08_evaluation.ipynb (section 6).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ragkit.corpus import Hit
from ragkit.generate.reader import Reader, ReaderAnswer
from ragkit.models import resolve
from ragkit.models.llm import ChatModel, ChatReply
from ragkit.models.replies import ANSWER_PATTERN
from ragkit.passages import excerpts_text

READER_INSTRUCTION = ("Answer the question from the passages. Reply with the short answer only (a number, a "
                      "name, a place, a time or a short phrase taken from the passages), not a sentence.")
# An invented rule, in no corpus of the course, so the example cannot leak a gold answer.
HANDBOOK_EXAMPLE = [
    {"role": "user", "content": "Passages:\n[1] Bicycle parking: Bicycles may be left in the basement rack "
                                "from 07:00 to 21:00. Ask reception for a key card.\n[2] Car parking: The "
                                "car park is reserved for visitors.\n\nQuestion: Until what time can I leave "
                                "my bike in the basement?"},
    {"role": "assistant", "content": "until 21:00"},
]
NO_PASSAGES = "(no passages)"


@dataclass(frozen=True)
class Reading:
    """The reader's short answer, the passages it was shown (as it saw them), and the call's wall time."""

    answer: str
    context: tuple[Hit, ...]
    context_text: str
    reply: str
    seconds: float


def passages_text(hits: Sequence[Hit], *, max_chars: int = 500) -> str:
    """The passages as the reader sees them: numbered, each cut at max_chars."""
    return excerpts_text(hits, max_chars=max_chars) if hits else NO_PASSAGES


def reader_prompt(question: str, hits: Sequence[Hit], *, examples: Sequence[dict] = tuple(HANDBOOK_EXAMPLE),
                  max_chars: int = 500) -> list[dict]:
    """The few-shot short-answer prompt over numbered passages (each cut at max_chars)."""
    passages = passages_text(hits, max_chars=max_chars)
    return ([{"role": "system", "content": READER_INSTRUCTION}, *examples,
             {"role": "user", "content": f"Passages:\n{passages}\n\nQuestion: {question}"}])


def short_answer(text: str) -> str:
    """The first line of a reply without an 'Answer:' lead, quotes or a final period."""
    line = next((ln for ln in (text or "").splitlines() if ln.strip()), "").strip()
    lead = ANSWER_PATTERN.match(line)
    return line[lead.end() if lead else 0:].strip().strip("\"'“”`*").rstrip(".").strip()


class ChatReader:
    """A chat model as a Reader: the few-shot prompt of reader_prompt, greedy, one line (no score: nan)."""

    def __init__(self, chat: ChatModel, *, examples: Sequence[dict] = tuple(HANDBOOK_EXAMPLE), max_tokens: int = 32):
        self.chat, self.examples, self.max_tokens, self.name = chat, tuple(examples), max_tokens, chat.name

    def reply(self, question: str, hits: Sequence[Hit]) -> ChatReply:
        """The chat model's raw reply to the reader prompt."""
        prompt = reader_prompt(question, hits, examples=self.examples)
        return self.chat.chat(prompt, max_tokens=self.max_tokens, temperature=0.0, stop=["\n"])

    def answer(self, question: str, hits: Sequence[Hit]) -> ReaderAnswer:
        """The short answer of the reply ('' if the reply has none)."""
        started = time.perf_counter()
        text = short_answer(self.reply(question, hits).text)
        return ReaderAnswer(text, None, math.nan, time.perf_counter() - started)


def read(question: str, hits: Sequence[Hit], *, chat: ChatModel | None = None, reader: Reader | None = None,
         examples: Sequence[dict] = tuple(HANDBOOK_EXAMPLE), max_tokens: int = 32) -> Reading:
    """The short answer to question from the passages hits: reader's, else the chat model's prompted few-shot
    (chat, else the chat setting's; examples and max_tokens are for it). Taught in lessons/08_evaluation.ipynb."""
    if not question or not question.strip():
        raise ValueError("the question is empty")
    if chat is not None and reader is not None:
        raise ValueError("give a chat model or a reader, not both")
    reader = reader or ChatReader(chat or resolve.chat_model(), examples=examples, max_tokens=max_tokens)
    started = time.perf_counter()
    if isinstance(reader, ChatReader):
        reply = reader.reply(question, hits).text
        answer = short_answer(reply)
    else:
        reply = answer = reader.answer(question, hits).text
    return Reading(answer, tuple(hits), passages_text(hits), reply, time.perf_counter() - started)


