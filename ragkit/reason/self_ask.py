"""Iterative CoT-RAG (self-ask): plan the steps, then retrieve them one at a time, each later step's
references to earlier answers (#1, #2) replaced by what those steps found.

What a step "found" is its bridge: a reader's short answer when a reader is given (ragkit.generate.reader, e.g.
reader_model()) and finds one, else the sentence of the step's top hits closest to the step in the
embedder's space (with a warning when a reader found nothing). Appending the question to every step's query
keeps the search on the question's topic. The evidence of a run is the steps' rankings interleaved, cut at
a passage budget, so it compares with plan-first CoT-RAG and with the question alone at the same budget.
Taught in lessons/06_cot_rag.ipynb; with the taught decomposer, in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ragkit.corpus import Hit, Search, check_query
from ragkit.generate.reader import Reader
from ragkit.models import resolve, roles
from ragkit.models.jobs import STEP_REFERENCE
from ragkit.models.llm import ChatModel
from ragkit.passages import shorten
from ragkit.reason.cot_rag import decompose
from ragkit.reason.steps import Meter, Run, check_max_steps, safe_search
from ragkit.reason.trace import warning_lines
from ragkit.search.dense import cosine
from ragkit.search.fusion import lead_then_interleave
from ragkit.text import split_sentences


@dataclass(frozen=True)
class AskedStep:
    """One step as planned, the query it was searched with, its hits and what it found (its bridge)."""

    number: int
    step: str
    query: str
    hits: tuple[Hit, ...]
    bridge: str
    bridge_from: str  # 'reader', 'sentence' or '' (nothing found)
    latency: float


@dataclass(frozen=True)
class SelfAskResult(Run):
    """A self-ask run: the plan, the steps in order, their cost and what went wrong."""

    steps: tuple[AskedStep, ...]
    plan: str
    question_hits: tuple[Hit, ...] = ()  # the question's own ranking, when the evidence leads with it
    question_first: int = 0

    def evidence(self, k: int) -> list[Hit]:
        """The question's top question_first hits, then the steps' hits interleaved (each step's 1st, then each
        one's 2nd, ...), each passage once, top k."""
        return lead_then_interleave(self.question_hits, [list(step.hits) for step in self.steps], k,
                                    first=self.question_first)

    def trace_markdown(self) -> str:
        """The run as markdown: each step as planned, as searched, its top hits and its bridge."""
        lines = [f"**Question:** {self.question}", ""]
        for step in self.steps:
            lines += [f"**{step.number}. {step.step}**", f"- searched: `{shorten(step.query, 200)}`",
                      f"- top hits: {', '.join(f'`{h.id}`' for h in step.hits[:3]) or 'nothing'}",
                      f"- #{step.number} = {shorten(step.bridge, 160) or '(nothing)'}"
                      + (f" ({step.bridge_from})" if step.bridge_from else ""), ""]
        lines.append(f"{len(self.steps)} steps · {self.tokens} tokens · {self.latency:.2f} s · model {self.model}")
        return "\n".join(lines + warning_lines(self.warnings))


def self_ask(question: str, search: Search, *, decomposer: ChatModel | None = None, embedder=None,
             reader: Reader | None = None, max_steps: int = 4, k: int = 5, append_question: bool = True,
             bridge_hits: int = 2, titled_bridges: bool = False, question_first: int = 0,
             constrain: str = "auto") -> SelfAskResult:
    """Plan the steps (decomposer: else the decomposer setting's model), then search them in order, resolving
    #j to step j's bridge; with question_first > 0 the evidence leads with the question's own top hits.

    Taught in lessons/09_specialists.ipynb.
    """
    check_query(question)
    check_max_steps(max_steps)
    if k < 1 or bridge_hits < 1 or question_first < 0:
        raise ValueError(f"k and bridge_hits must be at least 1 and question_first 0 or more, "
                         f"got {k}, {bridge_hits} and {question_first}")
    started, meter = time.perf_counter(), Meter(decomposer or roles.role_model("decomposer"))
    plan_steps, plan, warnings = decompose(question, meter, max_steps=max_steps, constrain=constrain)
    steps, notes = search_in_order(question, plan_steps, search, embedder=embedder or resolve.embedder(),
                                   reader=reader, k=k, append_question=append_question, bridge_hits=bridge_hits,
                                   titled_bridges=titled_bridges)
    question_hits, note = safe_search(search, question, k=k) if question_first else ([], "")
    return SelfAskResult(tuple(steps), plan, tuple(question_hits), question_first, question=question,
                         tokens=meter.tokens, latency=time.perf_counter() - started, model=meter.model,
                         warnings=tuple(warnings + notes + ([f"the question: {note}"] if note else [])))


def search_in_order(question: str, planned: Sequence[str], search: Search, *, embedder, reader: Reader | None = None,
                    k: int = 5, append_question: bool = True, bridge_hits: int = 2,
                    titled_bridges: bool = False) -> tuple[list[AskedStep], list[str]]:
    """The planned steps searched one after another, each #j resolved to step j's bridge; and the warnings.

    Taught in lessons/09_specialists.ipynb.
    """
    steps: list[AskedStep] = []
    warnings: list[str] = []
    for number, step in enumerate(planned, start=1):
        step_started = time.perf_counter()
        resolved, notes = resolve_references(step, [s.bridge for s in steps])
        query = f"{resolved} {question}" if append_question else resolved
        hits, note = safe_search(search, query, k=k)
        bridge, source = find_bridge(resolved, hits[:bridge_hits], embedder, reader, titled=titled_bridges)
        warnings += [f"step {number}: {n}" for n in [*notes, note] if n]
        if reader is not None and source == "sentence":
            warnings.append(f"step {number}: the reader ({reader.name}) found no answer; #{number} is the closest "
                            "sentence")
        if hits and not bridge:
            warnings.append(f"step {number}: found nothing to stand in for #{number}")
        steps.append(AskedStep(number, step, query, tuple(hits), bridge, source, time.perf_counter() - step_started))
    return steps, warnings


def resolve_references(step: str, bridges: Sequence[str]) -> tuple[str, list[str]]:
    """The step with each #j replaced by bridges[j-1]; a reference to no earlier step is dropped, with a note."""
    notes: list[str] = []

    def replace(match: re.Match) -> str:
        number = int(match.group(1))
        if 1 <= number <= len(bridges) and bridges[number - 1]:
            return bridges[number - 1]
        notes.append(f"#{number} refers to no earlier step that found something; dropped it")
        return ""

    return " ".join(STEP_REFERENCE.sub(replace, step).split()), notes


def find_bridge(step: str, hits: Sequence[Hit], embedder, reader: Reader | None = None, *,
                titled: bool = False) -> tuple[str, str]:
    """What a step found: the reader's answer if it finds one, else the hits' sentence closest to the step
    (titled: prefixed with its passage's title, since a sentence may name its subject only as "he")."""
    if not hits:
        return "", ""
    if reader is not None:
        answer = reader.answer(step, hits)
        if answer.found and answer.text.strip():
            return " ".join(answer.text.split()), "reader"
    titles = [hit.doc.title for hit in hits] if titled else None
    sentence = closest_sentence(step, [hit.doc.text for hit in hits], embedder, titles=titles)
    return sentence, "sentence" if sentence else ""


def closest_sentence(query: str, texts: Sequence[str], embedder, *, titles: Sequence[str] | None = None) -> str:
    """The sentence of the texts whose passage embedding is closest (cosine) to the query's, as 'Title: sentence'
    when the texts' titles are given; '' if none."""
    titles = titles or [""] * len(texts)
    pairs = list(dict.fromkeys((title, s) for title, text in zip(titles, texts) for s in split_sentences(text)))
    if not pairs or not query.strip():
        return ""
    scores = cosine(embedder.embed_passages([s for _, s in pairs]), embedder.embed_queries([query]))[:, 0]
    title, sentence = pairs[int(np.argmax(scores))]
    return f"{title}: {sentence}" if title else sentence
