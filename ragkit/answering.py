"""The last stage of a RAG pipeline: read the retrieved passages, write a short answer, and check how much
of the answer the passages support.

A reader is the chat model given numbered passages and a question, told to reply with the short answer
only, after one worked example (ChatReader); any other ragkit.reader.Reader (the reader specialist, lesson
09) can take its place. Its answer is scored against the gold answer (exact match, token F1) and
for groundedness: the share of its content words that occur in the passages it was shown, the others
listed. A grounded answer can still be wrong; an ungrounded one came from the model, not the context.

Taught in lessons/08_evaluation.ipynb (section 6).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragkit import models
from ragkit.corpus import Hit, Question
from ragkit.evaluate import Evaluation, answers_of, contains_gold, exact_match, mean, token_f1
from ragkit.llm import ChatModel, ChatReply
from ragkit.passages import excerpts_text
from ragkit.reader import NOT_IN_PASSAGES, Reader, ReaderAnswer
from ragkit.replies import ANSWER_PATTERN
from ragkit.text import tokenize

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


@dataclass(frozen=True)
class Grounding:
    """The share of an answer's content words found in its context (None without content words), and the rest."""

    share: float | None
    unsupported: tuple[str, ...]


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
    reader = reader or ChatReader(chat or models.chat_model(), examples=examples, max_tokens=max_tokens)
    started = time.perf_counter()
    if isinstance(reader, ChatReader):
        reply = reader.reply(question, hits).text
        answer = short_answer(reply)
    else:
        reply = answer = reader.answer(question, hits).text
    return Reading(answer, tuple(hits), passages_text(hits), reply, time.perf_counter() - started)


def content_words(text: str) -> list[str]:
    """Lowercased, folded, stemmed word tokens without English stop words (CJK as bigrams)."""
    return tokenize(text, fold=True, stem=True, stopwords=True)


def groundedness(answer: str, context: str) -> Grounding:
    """How much of answer the context supports: the share of its content words found there, and the others."""
    words = list(dict.fromkeys(content_words(answer)))
    if not words:
        return Grounding(None, ())
    known = set(content_words(context))
    unsupported = tuple(word for word in words if word not in known)
    return Grounding(1 - len(unsupported) / len(words), unsupported)


def evaluate_reader(context_of: Callable[[Question], Sequence[Hit]], gold: Sequence[Question], *,
                    chat: ChatModel | None = None, reader: Reader | None = None,
                    examples: Sequence[dict] = tuple(HANDBOOK_EXAMPLE)) -> Evaluation:
    """Give the reader (else chat, prompted few-shot) context_of(question) for every gold question; mean exact
    match, token F1, gold contained in the answer, and groundedness (over the answers that have content words;
    NOT_IN_PASSAGES has none). Taught in lessons/08_evaluation.ipynb."""
    if not gold:
        raise ValueError("no gold questions to evaluate on")
    if chat is not None and reader is not None:
        raise ValueError("give a chat model or a reader, not both")
    reader = reader or ChatReader(chat or models.chat_model(), examples=examples)
    rows = []
    for question in gold:
        started = time.perf_counter()
        reading = read(question.query, list(context_of(question)), reader=reader)
        grounding = (groundedness(reading.answer, reading.context_text) if reading.answer != NOT_IN_PASSAGES
                     else Grounding(None, ()))
        answers = answers_of(question)
        rows.append({"id": question.id, "exact_match": exact_match(reading.answer, answers),
                     "f1": token_f1(reading.answer, answers),
                     "contains_gold": contains_gold(reading.answer, answers), "grounded": grounding.share,
                     "unsupported": grounding.unsupported, "prediction": reading.answer,
                     "context": tuple(hit.id for hit in reading.context), "seconds": time.perf_counter() - started})
    shares = [row["grounded"] for row in rows if row["grounded"] is not None]
    means = {metric: mean([row[metric] for row in rows]) for metric in ("exact_match", "f1", "contains_gold")}
    means["grounded"] = mean(shares)
    return Evaluation(means, tuple(rows), mean([row["seconds"] for row in rows]))
