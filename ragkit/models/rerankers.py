"""Rerankers: models that read a query and a document together and score how relevant it is (a cross-
encoder, a bi-encoder, or a chat model asked for 0-10 or for yes).

Taught in lessons/04_reranking.ipynb.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from ragkit.corpus import Doc, check_query, passage_text
from ragkit.errors import BackendError
from ragkit.models.embeddings import local_model_dir
from ragkit.models.llm import ChatModel, ChatReply
from ragkit.passages import PASSAGE_CHARS, passage_body, shorten

RELEVANCE_SCALE = tuple(range(11))
RELEVANCE_SYSTEM = "Does the passage help answer the query? Reply yes or no."


LLM_SCORE_PROMPT = ("Rate how well the document answers the question, from 0 (unrelated) to 10 "
                    "(answers it fully). Reply with JSON: {{\"score\": <0-10>}}.\n\n"
                    "Question: {query}\n\nDocument: {doc}")


def relevance_messages(query: str, title: str, text: str) -> list[dict]:
    """The relevance judge's prompt: 'Query: …\nPassage: title: text' (the passage cut as a reader's is)."""
    passage = shorten(passage_body(title, text), PASSAGE_CHARS)
    return [{"role": "system", "content": RELEVANCE_SYSTEM},
            {"role": "user", "content": f"Query: {' '.join(query.split())}\nPassage: {passage}"}]


class Reranker(Protocol):
    """Anything that scores (query, doc) pairs: higher means more relevant."""

    name: str

    def score(self, query: str, docs: Sequence[Doc]) -> np.ndarray: ...


class CrossEncoderReranker:
    """sentence-transformers' CrossEncoder over a model dir or hub name (e.g. BAAI/bge-reranker-base)."""

    def __init__(self, name_or_path: str | Path, *, max_length: int = 512, threads: int = 2):
        import torch
        from sentence_transformers import CrossEncoder

        torch.set_num_threads(threads)
        path = local_model_dir(name_or_path)
        self._model = CrossEncoder(path, max_length=max_length, device="cpu")
        self.name = Path(path).name

    def score(self, query: str, docs: Sequence[Doc]) -> np.ndarray:
        """Relevance in (0, 1) for each doc (the model's logit through a sigmoid)."""
        if not docs:
            return np.empty(0, dtype=np.float32)
        pairs = [(query, passage_text(doc)) for doc in docs]
        return np.asarray(self._model.predict(pairs, batch_size=16, show_progress_bar=False), dtype=np.float32)

    def tokens(self, text: str) -> list[str]:
        """The word pieces the model reads for text, before its max_length cut (lessons/04, exercise 4.2)."""
        return self._model.tokenizer.tokenize(text)


class FlagCrossEncoderReranker:
    """FlagEmbedding's FlagReranker over the same kind of model dir: the call bge-reranker's card shows."""

    def __init__(self, name_or_path: str | Path, *, max_length: int = 512, threads: int = 2):
        import torch
        from FlagEmbedding import FlagReranker

        torch.set_num_threads(threads)
        path = local_model_dir(name_or_path)
        self._model = FlagReranker(path, use_fp16=False, devices="cpu", max_length=max_length)
        self.name = Path(path).name + " (FlagReranker)"

    def score(self, query: str, docs: Sequence[Doc]) -> np.ndarray:
        """Relevance in (0, 1) for each doc (normalize=True applies the sigmoid)."""
        if not docs:
            return np.empty(0, dtype=np.float32)
        scores = self._model.compute_score([[query, passage_text(doc)] for doc in docs], normalize=True)
        return np.atleast_1d(np.asarray(scores, dtype=np.float32))

    def tokens(self, text: str) -> list[str]:
        """The word pieces the model reads for text, before its max_length cut."""
        return self._model.tokenizer.tokenize(text)


class BiEncoderReranker:
    """A bi-encoder used as a scorer: cosine of query and doc embeddings (doc embeddings cached by id)."""

    def __init__(self, embedder):
        self.embedder, self._cache = embedder, {}
        self.name = f"embedding cosine ({getattr(embedder, 'name', type(embedder).__name__)})"

    def score(self, text: str, docs: Sequence[Doc]) -> np.ndarray:
        """Cosine of the text with each doc."""
        if not docs:
            return np.empty(0, dtype=np.float32)
        missing = [d for d in docs if d.id not in self._cache]
        if missing:
            rows = self.embedder.embed_passages([passage_text(d) for d in missing])
            self._cache.update({d.id: row for d, row in zip(missing, rows)})
        query = self.embedder.embed_queries([text])[0]
        return np.array([float(self._cache[d.id] @ query) for d in docs], dtype=np.float32)


class LLMReranker:
    """A chat model asked for a 0-10 relevance score per doc, in schema-constrained JSON."""

    def __init__(self, chat: ChatModel, *, max_doc_chars: int = 1200):
        self.chat, self.max_doc_chars = chat, max_doc_chars
        self.name = f"{chat.name} (0-10 scorer)"
        self.unreadable = 0  # replies with no score in them, counted as 0
        self.seconds = 0.0

    def score(self, query: str, docs: Sequence[Doc]) -> np.ndarray:
        """The model's 0-10 score for each doc."""
        return np.array([self._score_one(query, doc) for doc in docs], dtype=np.float32)

    def _score_one(self, query: str, doc: Doc) -> float:
        prompt = LLM_SCORE_PROMPT.format(query=query, doc=passage_text(doc)[: self.max_doc_chars])
        schema = {"type": "object", "properties": {"score": {"enum": list(RELEVANCE_SCALE)}}, "required": ["score"]}
        started = time.perf_counter()
        reply = self.chat.chat(prompt, max_tokens=12, json_schema=schema)
        self.seconds += time.perf_counter() - started
        score = parse_score(reply.text)
        if score is None:
            self.unreadable += 1
        return score or 0.0


def parse_score(text: str) -> float | None:
    """The 0-10 score in a reply like {"score": 7} or "7/10"; None if there is none."""
    try:
        value = json.loads(text).get("score")
    except (json.JSONDecodeError, AttributeError):
        value = next(iter(re.findall(r"\d+(?:\.\d+)?", text or "")), None)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if 0 <= value <= 10 else None


class LLMScorer(LLMReranker):
    """LLMReranker's 0-10 score divided by 10: a 0-1 support score (ragkit.reason.voting's 'llm' scorer)."""

    def __init__(self, chat: ChatModel, *, max_doc_chars: int = 1200):
        super().__init__(chat, max_doc_chars=max_doc_chars)
        self.name = f"LLM 0-10 score ({chat.name})"

    def score(self, query: str, docs: Sequence[Doc]) -> np.ndarray:
        """The model's score of each doc for the statement, on 0-1."""
        return super().score(query, docs) / 10.0


class RelevanceJudge:
    """A chat model asked whether each passage helps answer the query, in the relevance specialist's prompt
    (ragkit.models.jobs): the score is P(yes) of its first reply token. Taught in lessons/04_reranking.ipynb."""

    TOP = 10  # first-token alternatives asked for: a model that answers yes or no has both among them

    PROBE = relevance_messages("Is the sky blue?", "Sky", "The sky is blue.")  # a first token that is a whole word

    def __init__(self, chat: ChatModel):
        self.chat, self.name = chat, f"P(yes) relevance ({chat.name})"
        self.unreadable = 0  # replies that ended at once or hold neither yes nor no among their first tokens: 0.5
        self.seconds = 0.0
        self.gives_probabilities: bool | None = None  # whether the backend returns them; None until known

    def score(self, query: str, docs: Sequence[Doc]) -> np.ndarray:
        """P(yes) in [0, 1] for each doc; 0.5 (counted as unreadable) where a reply gives no probabilities or
        neither word, as one that ends at once or starts with part of a character does."""
        check_query(query)
        replies = [self.chat.chat(relevance_messages(query, doc.title, doc.text), max_tokens=1, logprobs=self.TOP)
                   for doc in docs]
        self.seconds += sum(reply.seconds for reply in replies)
        self._check_backend(replies)
        scores, unreadable = yes_scores(replies)
        self.unreadable += unreadable
        return np.array(scores, dtype=np.float32)

    def _check_backend(self, replies: Sequence[ChatReply]) -> None:
        """Raise if the backend returns no token probabilities at all. Replies without them may only start with
        part of a character (a Chinese query's, all of them at times): one English probe tells the two apart."""
        if any(reply.top_logprobs for reply in replies):
            self.gives_probabilities = True
        elif self.gives_probabilities is None and any(reply.text for reply in replies):
            self.gives_probabilities = bool(self.chat.chat(self.PROBE, max_tokens=1, logprobs=self.TOP).top_logprobs)
        if self.gives_probabilities is False:
            raise BackendError(f"{self.chat.name} returned no token probabilities, which the relevance judge "
                               "scores by: use llama.cpp or an OpenAI-compatible endpoint that returns logprobs, "
                               "or the 0-10 LLMReranker")


def yes_scores(replies: Sequence[ChatReply]) -> tuple[list[float], int]:
    """Each reply's P(yes), 0.5 where its first tokens hold neither word, and how many such replies there were."""
    probabilities = [yes_probability(reply.top_logprobs) for reply in replies]
    return [0.5 if p is None else p for p in probabilities], sum(p is None for p in probabilities)


def yes_probability(top_logprobs: Sequence[Sequence]) -> float | None:
    """P(yes) / (P(yes) + P(no)) over a first token's (token, log probability) alternatives, any case and spacing;
    None when neither word is among them."""
    mass = {"yes": 0.0, "no": 0.0}
    for token, logprob in top_logprobs:
        word = str(token).strip().lower()
        if word in mass:
            mass[word] += math.exp(logprob)
    total = mass["yes"] + mass["no"]
    return mass["yes"] / total if total else None


