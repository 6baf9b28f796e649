"""Scoring a reader: its short answers against the gold ones (exact match, token F1, gold contained) and
how much of each answer the passages it was shown support (groundedness: the share of its content words
found there). A grounded answer can still be wrong; an ungrounded one came from the model, not the context.

Taught in lessons/08_evaluation.ipynb (section 6).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragkit.corpus import Hit, Question
from ragkit.evaluate.metrics import (
    answers_of,
    contains_gold,
    exact_match,
    mean,
    token_f1,
)
from ragkit.evaluate.runners import Evaluation
from ragkit.generate.answering import HANDBOOK_EXAMPLE, ChatReader, read
from ragkit.generate.reader import Reader
from ragkit.models import resolve
from ragkit.models.llm import ChatModel
from ragkit.passages import NOT_IN_PASSAGES
from ragkit.text import tokenize


@dataclass(frozen=True)
class Grounding:
    """The share of an answer's content words found in its context (None without content words), and the rest."""

    share: float | None
    unsupported: tuple[str, ...]


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
    reader = reader or ChatReader(chat or resolve.chat_model(), examples=examples)
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
