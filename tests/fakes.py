"""Small stand-ins for models in unit tests: a scripted chat model, a scripted reader and a hashing embedder."""

from __future__ import annotations

import time
import zlib
from typing import Sequence

import numpy as np

from ragkit.generate.reader import ReaderAnswer
from ragkit.models.llm import ChatReply
from ragkit.text import tokenize


class ScriptedChat:
    """A chat model that replies with the given texts (or ChatReply objects) in turn, the last one
    again and again, and records what it was asked; each reply takes pause seconds of wall time."""

    name = "scripted"

    def __init__(self, *replies: str | ChatReply, pause: float = 0.0):
        self.replies = [r if isinstance(r, ChatReply) else
                        ChatReply(text=r, model=self.name, completion_tokens=len(r.split()), seconds=0.001)
                        for r in replies]
        self.calls = []
        self.pause = pause

    def chat(self, messages, **options) -> ChatReply:
        self.calls.append((messages, options))
        time.sleep(self.pause)
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


class JobChat(ScriptedChat):
    """A scripted specialist: a chat model with a job, as ragkit.models.specialists.Specialist has."""

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


# A tiny HotpotQA: eight paragraphs and four dev rows (two bridge, typed by position; two comparison).
HOTPOT_PARAGRAPHS = [
    ("p0", "Kiss and Tell (1945 film)", "Kiss and Tell is a 1945 American comedy film starring Shirley Temple as "
                                        "Corliss Archer. It was directed by Richard Wallace."),
    ("p1", "Shirley Temple", "Shirley Temple was an American actress. As an adult she served as Chief of Protocol "
                             "of the United States."),
    ("p2", "Meet Corliss Archer", "Meet Corliss Archer was a radio program that ran from 1943 to 1956."),
    ("p3", "Lake Baikal", "Lake Baikal in Siberia is the deepest lake in the world, 1,642 metres deep."),
    ("p4", "Lake Ladoga", "Lake Ladoga near Saint Petersburg is the largest lake in Europe, 230 metres deep."),
    ("p5", "Koala", "The koala is a marsupial of eastern Australia that eats eucalyptus leaves."),
    ("p6", "Emu", "The emu is a large flightless bird of Australia."),
    ("p7", "Kiwi", "The kiwi is a small flightless bird of New Zealand."),
]
HOTPOT_ROWS = [
    {"id": "b1", "question": "What government position was held by the woman who portrayed Corliss Archer in "
                             "the film Kiss and Tell?", "answer": "Chief of Protocol", "answer_aliases": [],
     "supporting_pids": ["p0", "p1"]},
    {"id": "b2", "question": "Which continent is home to the marsupial that eats eucalyptus leaves?",
     "answer": "Australia", "answer_aliases": ["Oceania"], "supporting_pids": ["p5"]},
    {"id": "c1", "question": "Which lake is deeper, Lake Baikal or Lake Ladoga?", "answer": "Lake Baikal",
     "supporting_pids": ["p3", "p4"], "type": "comparison"},
    {"id": "c2", "question": "Are the emu and the kiwi both flightless birds?", "answer": "yes",
     "supporting_pids": ["p6", "p7"], "type": "comparison"},
]


def stub_setting(patcher, name: str, fake) -> None:
    """Stub the backend a setting names (chat_model, embedder, reranker) both where lessons and benchmarks reach it,
    the ragkit.models face, and where ragkit's own code does, ragkit.models.resolve."""
    import ragkit.models
    from ragkit.models import resolve

    patcher.setattr(ragkit.models, name, fake)
    patcher.setattr(resolve, name, fake)
