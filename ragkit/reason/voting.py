"""Voting over sampled chains of thought: self-consistency, and the support-weighted vote of the RwR paper.

`rwr_vote`, the paper's own variant (He, Zhang & Roth, 2022): sample N paths at temperature > 0, score every
path by its evidence, vote weighted by that score:

    support(path) = (1/|steps|) · Σ_{step s} max_{e in top-k evidence of s} clip(score(s, e), 0, 1)
                    (a step without evidence scores 0; a path without steps has support 0)
    answer        = argmax_a Σ_{paths i with answer a} support(path_i)
                    (answers compared after SQuAD normalisation, 'yes, …' → 'yes'; ties: more paths,
                    then the earliest path; if every support is 0, the majority answer, with a warning)

The paper scores with an NLI model; here `scorer` picks 'embedding' (cosine of step and evidence),
'cross-encoder' (a Reranker's score, e.g. the course cross-encoder), 'llm' (the chat model's 0-10
score / 10, ragkit.models.rerankers.LLMScorer) or any object with .score(text, docs). `self_consistency` is the same
sampling with a plain majority vote: the baseline the paper measures against. The chain-of-thought prompt
and the step queries are ragkit.reason.chain_of_thought's, as RwR's.
Taught in lessons/07_rethinking_with_retrieval.ipynb.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from ragkit.corpus import Doc, Hit, Search, check_query
from ragkit.models import resolve
from ragkit.models.llm import ChatModel, seeded
from ragkit.models.replies import length_warning
from ragkit.models.rerankers import BiEncoderReranker, LLMScorer
from ragkit.passages import shorten
from ragkit.reason.chain_of_thought import check_options, cot_options, cot_prompt, parse_cot, step_query
from ragkit.reason.steps import Meter, Run, check_max_steps, safe_search
from ragkit.reason.trace import html_table, table_cell, warning_html, warning_lines
from ragkit.text import answer_key

SCORERS = ("embedding", "cross-encoder", "llm")


# --- results -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReasoningPath:
    """One sampled chain of thought, its evidence per step and how well that evidence supports it."""

    number: int
    text: str
    steps: tuple[str, ...]
    answer: str
    evidence: tuple[tuple[Hit, ...], ...] = ()
    step_support: tuple[float, ...] = ()
    support: float = 0.0


@dataclass(frozen=True)
class VoteResult(Run):
    """A vote over sampled paths: the winner, the plain majority, each path's support, the tallies."""

    answer: str
    majority_answer: str
    paths: tuple[ReasoningPath, ...]
    votes: tuple[tuple[str, float, int], ...]  # (answer, total support, paths), best first
    scorer: str

    def trace_markdown(self) -> str:
        """Each path's answer and support, the tallies, and both winners."""
        lines = [f"**Question:** {self.question}", "", "| path | answer | support | step support |",
                 "|---|---|---|---|"]
        for p in self.paths:
            per_step = ", ".join(f"{s:.2f}" for s in p.step_support) or "—"
            lines.append(f"| {p.number} | {table_cell(p.answer)} | {p.support:.3f} | {per_step} |")
        lines += ["", "| answer | total support | paths |", "|---|---|---|"]
        lines += [f"| {table_cell(a)} | {total:.3f} | {n} |" for a, total, n in self.votes]
        lines += ["", f"**Support-weighted vote ({self.scorer}):** {self.answer or '(none)'}",
                  f"**Majority vote:** {self.majority_answer or '(none)'}", "",
                  f"{len(self.paths)} paths · {self.tokens} tokens · {self.latency:.2f} s · model {self.model}"]
        return "\n".join(lines + warning_lines(self.warnings))

    def trace_html(self) -> str:
        """One row per path (the winning answer's paths shaded), for IPython.display.HTML."""
        winner = answer_key(self.answer)
        rows = [(str(p.number), shorten(p.answer, 60), f"{p.support:.3f}",
                 " | ".join(shorten(s, 60) for s in p.steps)) for p in self.paths]
        styles = ["background:#e2f5e2" if winner and answer_key(p.answer) == winner else "" for p in self.paths]
        caption = (f"{self.question} → weighted ({self.scorer}): {self.answer or '(none)'} · "
                   f"majority: {self.majority_answer or '(none)'}")
        return html_table(("path", "answer", "support", "steps"), rows, caption=caption,
                          row_styles=styles) + warning_html(self.warnings)


# --- evidence scorers ---------------------------------------------------------------------------------

class EvidenceScorer(Protocol):
    """Scores how well each doc supports a statement; higher is better, read on a 0-1 scale.

    Any Reranker fits (CrossEncoderReranker scores are already in (0, 1)).
    """

    name: str

    def score(self, text: str, docs: Sequence[Doc]) -> np.ndarray: ...


def evidence_scorer(scorer: str | EvidenceScorer = "embedding", *, chat: ChatModel | None = None,
                    embedder=None, reranker=None) -> EvidenceScorer:
    """'embedding', 'cross-encoder' or 'llm' as a scorer (the configured model unless given); objects pass."""
    if not isinstance(scorer, str):
        if not callable(getattr(scorer, "score", None)):
            raise TypeError(f"a scorer needs a .score(text, docs) method; got {type(scorer).__name__}")
        return scorer
    if scorer == "embedding":
        return BiEncoderReranker(embedder or resolve.embedder())  # the cosine scorer lesson 04 reranks with
    if scorer == "cross-encoder":
        return reranker or resolve.reranker()
    if scorer == "llm":
        return LLMScorer(chat or resolve.chat_model())
    raise ValueError(f"scorer must be one of {', '.join(SCORERS)} or an object with .score(); got {scorer!r}")


# --- sampled paths, weighted vote, majority vote ---------------------------------------------------

def sample_paths(question: str, meter: Meter, *, paths: int = 5, temperature: float = 0.7, max_steps: int = 4,
                 constrain: str = "auto", max_tokens: int = 160,
                 seed: int = 0) -> tuple[list[ReasoningPath], list[str]]:
    """N chains of thought, path i sampled with seed + i where the backend takes a seed."""
    if paths < 1:
        raise ValueError(f"paths must be at least 1, got {paths}")
    options = cot_options(meter.inner, max_steps, constrain, max_tokens)
    sampled, warnings = [], []
    for number in range(1, paths + 1):
        with seeded(meter.inner, seed + number - 1):
            reply = meter.chat(cot_prompt(question, max_steps=max_steps), temperature=temperature, **options)
        steps, answer, notes = parse_cot(reply.text, max_steps=max_steps)
        notes = length_warning(reply, "writing the chain of thought") + notes
        warnings += [f"path {number}: {note}" for note in notes]
        sampled.append(ReasoningPath(number, reply.text, tuple(steps), answer))
    if paths > 1 and temperature > 0 and len({p.text for p in sampled}) == 1:
        warnings.append(f"all {paths} sampled paths are identical: the backend may reuse one seed, "
                        "so the vote is over one path")
    return sampled, warnings


def support_of(path: ReasoningPath, search: Search, scorer: EvidenceScorer, meter: Meter, *, k: int = 3,
               query: str = "keywords", cache: dict | None = None) -> tuple[ReasoningPath, list[str]]:
    """The path with its evidence and support: mean over steps of the best evidence score, clipped to [0, 1]."""
    cache = {} if cache is None else cache
    evidence, scores, warnings = [], [], []
    for number, step in enumerate(path.steps, start=1):
        search_query, notes = step_query(step, query, meter)
        if search_query not in cache:
            cache[search_query] = safe_search(search, search_query, k=k)
        hits, note = cache[search_query]
        best = float(np.max(scorer.score(step, [h.doc for h in hits]))) if hits else 0.0
        evidence.append(tuple(hits))
        scores.append(min(max(best, 0.0), 1.0))
        warnings += [f"path {path.number} step {number}: {n}" for n in notes + ([note] if note else [])]
    support = float(np.mean(scores)) if scores else 0.0
    scored = ReasoningPath(path.number, path.text, path.steps, path.answer, tuple(evidence), tuple(scores),
                           support)
    return scored, warnings


def tally(paths: Sequence[ReasoningPath], weights: Sequence[float]) -> list[tuple[str, float, int]]:
    """(answer, total weight, paths) per distinct answer, best first; ties: more paths, then first seen."""
    totals: dict[str, list] = {}
    for order, (path, weight) in enumerate(zip(paths, weights)):
        key = answer_key(path.answer)
        if key:
            entry = totals.setdefault(key, [path.answer, 0.0, 0, order])
            entry[1] += weight
            entry[2] += 1
    ranked = sorted(totals.values(), key=lambda e: (-e[1], -e[2], e[3]))
    return [(answer, round(total, 6), count) for answer, total, count, _ in ranked]


def weighted_vote(paths: Sequence[ReasoningPath]) -> tuple[str, str, list[tuple[str, float, int]], list[str]]:
    """(weighted winner, majority winner, tallies, warnings): argmax_a Σ_i [a_i = a] · support_i."""
    warnings = [f"path {p.number} gave no answer; left out of the vote" for p in paths if not answer_key(p.answer)]
    majority = tally(paths, [1.0] * len(paths))
    votes = tally(paths, [p.support for p in paths])
    if not votes:
        return "", "", [], warnings + ["no path gave an answer: there is nothing to vote on"]
    if votes[0][1] <= 0:
        warnings.append("no path had any supporting evidence: the weighted vote fell back to the majority answer")
        return majority[0][0], majority[0][0], votes, warnings
    return votes[0][0], majority[0][0], votes, warnings


def rwr_vote(question: str, search: Search, *, chat: ChatModel | None = None, paths: int = 5,
             temperature: float = 0.7, scorer: str | EvidenceScorer = "embedding", k: int = 3,
             max_steps: int = 4, query: str = "keywords", constrain: str = "auto", max_tokens: int = 160,
             seed: int = 0, embedder=None, reranker=None) -> VoteResult:
    """Sample paths, score each by its evidence, vote weighted by support.

    Taught in lessons/07_rethinking_with_retrieval.ipynb.
    """
    check_query(question)
    check_max_steps(max_steps)
    check_options(k=k, query=query)
    started, meter = time.perf_counter(), Meter(chat or resolve.chat_model())
    judge_model = evidence_scorer(scorer, chat=meter, embedder=embedder, reranker=reranker)
    sampled, warnings = sample_paths(question, meter, paths=paths, temperature=temperature, max_steps=max_steps,
                                     constrain=constrain, max_tokens=max_tokens, seed=seed)
    scored, cache = [], {}
    for path in sampled:
        path, notes = support_of(path, search, judge_model, meter, k=k, query=query, cache=cache)
        scored.append(path)
        warnings += notes
    if not any(p.steps for p in scored):
        warnings.append("no path had readable steps: nothing could be checked against evidence")
    answer, majority, votes, notes = weighted_vote(scored)
    return VoteResult(answer, majority, tuple(scored), tuple(votes), judge_model.name, question=question,
                      tokens=meter.tokens, latency=time.perf_counter() - started, model=meter.model,
                      warnings=tuple(warnings + notes))


def self_consistency(question: str, *, chat: ChatModel | None = None, paths: int = 5, temperature: float = 0.7,
                     max_steps: int = 4, constrain: str = "auto", max_tokens: int = 160,
                     seed: int = 0) -> VoteResult:
    """Sample paths and take the majority answer, no evidence: the baseline.

    Taught in lessons/07_rethinking_with_retrieval.ipynb.
    """
    check_query(question)
    check_max_steps(max_steps)
    started, meter = time.perf_counter(), Meter(chat or resolve.chat_model())
    sampled, warnings = sample_paths(question, meter, paths=paths, temperature=temperature, max_steps=max_steps,
                                     constrain=constrain, max_tokens=max_tokens, seed=seed)
    sampled = [ReasoningPath(p.number, p.text, p.steps, p.answer, support=1.0) for p in sampled]
    votes = tally(sampled, [1.0] * len(sampled))
    warnings += [f"path {p.number} gave no answer; left out of the vote"
                 for p in sampled if not answer_key(p.answer)]
    if not votes:
        warnings.append("no path gave an answer: there is nothing to vote on")
    answer = votes[0][0] if votes else ""
    return VoteResult(answer, answer, tuple(sampled), tuple(votes), "majority (no evidence)", question=question,
                      tokens=meter.tokens, latency=time.perf_counter() - started, model=meter.model,
                      warnings=tuple(warnings))
