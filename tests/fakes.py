"""Small stand-ins for models in unit tests: a scripted chat model, a scripted reader and a hashing embedder."""

from __future__ import annotations

import zlib
from typing import Sequence

import numpy as np

from ragkit.llm import ChatReply
from ragkit.reader import ReaderAnswer
from ragkit.text import tokenize


class ScriptedChat:
    """A chat model that replies with the given texts (or ChatReply objects) in turn, the last one
    again and again, and records what it was asked."""

    name = "scripted"

    def __init__(self, *replies: str | ChatReply):
        self.replies = [r if isinstance(r, ChatReply) else
                        ChatReply(text=r, model=self.name, completion_tokens=len(r.split()), seconds=0.001)
                        for r in replies]
        self.calls = []

    def chat(self, messages, **options) -> ChatReply:
        self.calls.append((messages, options))
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


class JobChat(ScriptedChat):
    """A scripted specialist: a chat model with a job, as ragkit.specialists.Specialist has."""

    def __init__(self, job, *replies):
        self.job, self.name = job, f"{job} specialist"
        super().__init__(*replies)


class ScriptedReader:
    """A reader that gives the given answers (text, or (text, passage)) in turn, the last one again and again, and
    records each question with the ids of the passages it was given."""

    name = "scripted reader"

    def __init__(self, *answers: str | tuple[str, int | None]):
        self.answers = [a if isinstance(a, tuple) else (a, None) for a in answers]
        self.calls = []

    def answer(self, question, hits) -> ReaderAnswer:
        self.calls.append((question, [hit.id for hit in hits]))
        text, passage = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return ReaderAnswer(text, passage, 1.0, 0.001)


class HashingEmbedder:
    """Bag of hashed words as a unit vector: similar wording, similar vectors (no meaning at all)."""

    name, dim = "hashing", 64

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """One unit row per text."""
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in zip(rows, texts):
            for token in tokenize(text, fold=True) or ["<empty>"]:
                row[zlib.crc32(token.encode()) % self.dim] += 1.0
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    embed_passages = embed_queries
