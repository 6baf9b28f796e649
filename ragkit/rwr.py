"""Rethinking with Retrieval (He, Zhang & Roth, 2022, "Rethinking with Retrieval: Faithful Large
Language Model Inference"): check a chain of thought step by step against retrieved evidence.

`rwr`: one chain of thought ('Step N: …' lines, then 'So the answer is X'); a search query per step
(`query`: 'keywords' = the step minus stop words, no LLM; 'step' = the step as written, as in the
paper; 'llm' = a short query the model writes); top-k evidence per step from any retriever; a verdict
per step (confirmed / corrected / unverified, JSON-schema constrained, plus a corrected step) given
the evidence and the steps verified so far; a final answer from the revised steps. A step without
evidence stays unverified without asking the model.

`rwr_vote`, the paper's own variant: sample N paths at temperature > 0, score every path by its
evidence, vote weighted by that score:

    support(path) = (1/|steps|) · Σ_{step s} max_{e in top-k evidence of s} clip(score(s, e), 0, 1)
                    (a step without evidence scores 0; a path without steps has support 0)
    answer        = argmax_a Σ_{paths i with answer a} support(path_i)
                    (answers compared after SQuAD normalisation, 'yes, …' → 'yes'; ties: more paths,
                    then the earliest path; if every support is 0, the majority answer, with a warning)

The paper scores with an NLI model; here `scorer` picks 'embedding' (cosine of step and evidence),
'cross-encoder' (a Reranker's score, e.g. the course cross-encoder), 'llm' (the chat model's 0-10
score / 10) or any object with .score(text, docs). `self_consistency` is the same sampling with a
plain majority vote: the baseline the paper measures against.
Taught in lessons/07_rethinking_with_retrieval.ipynb.
"""

from __future__ import annotations

import html
import json
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from ragkit import models
from ragkit.corpus import Doc, Hit, check_query
from ragkit.evaluate import normalize_answer
from ragkit.llm import ChatModel
from ragkit.reasoning import (Meter, Search, check_max_steps, clean_item, copy_warnings, drop_repeats,
                              excerpts_text, html_table, keyword_query, length_warning, list_grammar, marked_lines,
                              pick_constraint, safe_search, shorten, step_key, unique_ids)
from ragkit.rerank import BiEncoderReranker as EmbeddingScorer  # the same cosine scorer lesson 04 uses
from ragkit.rerank import LLMReranker
from ragkit.text import split_sentences

VERDICTS = ("confirmed", "corrected", "unverified")
QUERY_MODES = ("keywords", "step", "llm")
SCORERS = ("embedding", "cross-encoder", "llm")
ANSWER_LEAD = "So the answer is"

# Few-shot examples about animals: a domain far from the course data, so a copied entity is visible.
COT_EXAMPLES = (
    ("Could a koala swim from Australia to New Zealand in one day?",
     ("Koalas live in eastern Australia.", "New Zealand is about 2,000 km from Australia across the sea.",
      "Koalas can swim only short distances."), "no"),
    ("What do the young of the animal that eats eucalyptus leaves drink?",
     ("The koala eats eucalyptus leaves.", "Young koalas drink their mother's milk."), "milk"),
)
# Words only the examples' domain uses: a step with one the question lacks copied an example's pattern.
EXAMPLE_MARKERS = frozenset({"koala", "koalas", "eucalyptus", "joey", "marsupial", "kiwi", "zealand"})
COT_SYSTEM = ("Think step by step. Write each step as 'Step N: <one fact>' on its own line, at most {n} "
              f"steps, then a last line '{ANSWER_LEAD} <short answer>.'")

QUERY_PROMPT = [
    {"role": "system", "content": "Write a short search query (3 to 8 words) to check the statement. "
                                  "Reply with the query only."},
    {"role": "user", "content": "New Zealand is about 2,000 km from Australia across the sea."},
    {"role": "assistant", "content": "distance Australia New Zealand km"},
    {"role": "user", "content": "Young koalas drink their mother's milk."},
    {"role": "assistant", "content": "koala joey diet milk"},
]

VERIFY_SYSTEM = ("Check one reasoning step against the evidence. Verdicts: 'confirmed' if the evidence "
                 "supports the step; 'corrected' if the evidence contradicts it (then write the step "
                 "corrected by the evidence); 'unverified' if the evidence does not mention it. Reply "
                 'with JSON: {"verdict": "...", "corrected_step": "..."}.')
VERIFY_EXAMPLES = (
    ((), "[1] Koala: The koala lives in the eucalyptus forests of eastern Australia.",
     "Koalas live in eastern Australia.", "confirmed", ""),
    (("Koalas live in eastern Australia.",), "[1] Koala: Koalas sleep up to 20 hours a day.",
     "Koalas sleep about 8 hours a day.", "corrected", "Koalas sleep up to 20 hours a day."),
    (("Koalas live in eastern Australia.",), "[1] Kiwi: The kiwi is a flightless bird of New Zealand.",
     "Koalas can swim only short distances.", "unverified", ""),
)

ANSWER_PROMPT = [
    {"role": "system", "content": f"Answer the question from the facts. Reply with one line: {ANSWER_LEAD} "
                                  "<short answer>."},
    {"role": "user", "content": "Question: Could a koala swim from Australia to New Zealand in one day?\n"
                                "Facts:\n1. Koalas live in eastern Australia.\n2. New Zealand is about "
                                "2,000 km from Australia across the sea.\n3. Koalas can swim only short "
                                "distances."},
    {"role": "assistant", "content": f"{ANSWER_LEAD} no."},
    {"role": "user", "content": "Question: What do the young of the animal that eats eucalyptus leaves drink?\n"
                                "Facts:\n1. The koala eats eucalyptus leaves.\n2. Young koalas drink their "
                                "mother's milk."},
    {"role": "assistant", "content": f"{ANSWER_LEAD} milk."},
]

_ANSWER = re.compile(r"(?:so\s*,?\s*)?the answer is\s*[:\-]?\s*", re.I)


# --- results -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class RwRStep:
    """One reasoning step: as written, the query and evidence for it, and the verdict on it."""

    number: int
    original: str
    query: str
    evidence: tuple[Hit, ...]
    verdict: str
    corrected: str
    latency: float

    @property
    def text(self) -> str:
        """The step after rethinking: the correction if it was corrected, else as written."""
        return self.corrected if self.verdict == "corrected" else self.original

    @property
    def sources(self) -> tuple[str, ...]:
        """Ids of the evidence."""
        return tuple(hit.id for hit in self.evidence)


@dataclass(frozen=True)
class RwRResult:
    """A rethinking-with-retrieval run: the checked steps, both answers, cost and what went wrong."""

    question: str
    steps: tuple[RwRStep, ...]
    cot_answer: str
    answer: str
    tokens: int
    latency: float
    model: str
    warnings: tuple[str, ...] = ()
    raw: str = ""

    @property
    def corrected(self) -> int:
        """How many steps the evidence corrected."""
        return sum(step.verdict == "corrected" for step in self.steps)

    @property
    def total_steps(self) -> int:
        """How many steps were checked."""
        return len(self.steps)

    @property
    def sources(self) -> tuple[str, ...]:
        """Every evidence id once, in order."""
        return unique_ids([step.evidence for step in self.steps])

    def trace_markdown(self) -> str:
        """The whole run as markdown: each step, its evidence and verdict, then both answers."""
        lines = [f"**Question:** {self.question}", ""]
        for step in self.steps:
            lines += [f"**Step {step.number}** — {_VERDICT_MARK[step.verdict]} {step.verdict}: {step.original}",
                      f"- query: `{shorten(step.query, 200)}`",
                      f"- evidence: {', '.join(f'`{h.id}` ({h.score:.3g})' for h in step.evidence) or 'nothing'}"]
            lines += [f"  > [{h.id}] {shorten(h.doc.text, 160)}" for h in step.evidence]
            if step.verdict == "corrected":
                lines.append(f"- corrected to: {step.corrected}")
            lines += [f"- {step.latency:.2f} s", ""]
        lines += [f"**Chain-of-thought answer:** {self.cot_answer or '(none)'}",
                  f"**Answer after rethinking:** {self.answer or '(none)'}", "",
                  f"corrected {self.corrected} of {self.total_steps} steps · {self.tokens} tokens · "
                  f"{self.latency:.2f} s · model {self.model}"]
        return "\n".join(lines + _warning_lines(self.warnings))

    def trace_html(self) -> str:
        """A compact HTML table, one row per step, coloured by verdict, for IPython.display.HTML."""
        rows = [(str(s.number), shorten(s.original, 100), shorten(s.query, 60), ", ".join(s.sources) or "—",
                 s.verdict, shorten(s.corrected, 100) if s.verdict == "corrected" else "") for s in self.steps]
        caption = f"{self.question} → CoT: {self.cot_answer or '(none)'} · RwR: {self.answer or '(none)'}"
        table = html_table(("step", "as written", "query", "evidence", "verdict", "correction"), rows,
                           caption=caption, row_styles=[_VERDICT_STYLE[s.verdict] for s in self.steps])
        return table + _warning_html(self.warnings)


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
class VoteResult:
    """A vote over sampled paths: the winner, the plain majority, each path's support, the tallies."""

    question: str
    answer: str
    majority_answer: str
    paths: tuple[ReasoningPath, ...]
    votes: tuple[tuple[str, float, int], ...]  # (answer, total support, paths), best first
    scorer: str
    tokens: int
    latency: float
    model: str
    warnings: tuple[str, ...] = ()

    def trace_markdown(self) -> str:
        """Each path's answer and support, the tallies, and both winners."""
        lines = [f"**Question:** {self.question}", "", "| path | answer | support | step support |",
                 "|---|---|---|---|"]
        for p in self.paths:
            per_step = ", ".join(f"{s:.2f}" for s in p.step_support) or "—"
            lines.append(f"| {p.number} | {_md(p.answer)} | {p.support:.3f} | {per_step} |")
        lines += ["", "| answer | total support | paths |", "|---|---|---|"]
        lines += [f"| {_md(a)} | {total:.3f} | {n} |" for a, total, n in self.votes]
        lines += ["", f"**Support-weighted vote ({self.scorer}):** {self.answer or '(none)'}",
                  f"**Majority vote:** {self.majority_answer or '(none)'}", "",
                  f"{len(self.paths)} paths · {self.tokens} tokens · {self.latency:.2f} s · model {self.model}"]
        return "\n".join(lines + _warning_lines(self.warnings))

    def trace_html(self) -> str:
        """One row per path (the winning answer's paths shaded), for IPython.display.HTML."""
        winner = answer_key(self.answer)
        rows = [(str(p.number), shorten(p.answer, 60), f"{p.support:.3f}",
                 " | ".join(shorten(s, 60) for s in p.steps)) for p in self.paths]
        styles = ["background:#e2f5e2" if winner and answer_key(p.answer) == winner else "" for p in self.paths]
        caption = (f"{self.question} → weighted ({self.scorer}): {self.answer or '(none)'} · "
                   f"majority: {self.majority_answer or '(none)'}")
        return html_table(("path", "answer", "support", "steps"), rows, caption=caption,
                          row_styles=styles) + _warning_html(self.warnings)


_VERDICT_MARK = {"confirmed": "✔", "corrected": "✎", "unverified": "?"}
_VERDICT_STYLE = {"confirmed": "background:#e2f5e2", "corrected": "background:#fff3cd", "unverified": ""}


def _warning_lines(warnings: Sequence[str]) -> list[str]:
    return ["", "**Warnings:**", *[f"- {w}" for w in warnings]] if warnings else []


def _warning_html(warnings: Sequence[str]) -> str:
    items = "".join(f"<li>{html.escape(w)}</li>" for w in warnings)
    return f"<ul style='color:#a33'>{items}</ul>" if items else ""


def _md(text: str) -> str:
    return shorten(text, 80).replace("|", "\\|") or "(none)"


# --- one chain of thought, checked step by step ----------------------------------------------------

def rwr(question: str, search: Search, *, chat: ChatModel | None = None, max_steps: int = 4, k: int = 3,
        query: str = "keywords", constrain: str = "auto", max_tokens: int = 160,
        max_chars: int = 400) -> RwRResult:
    """Chain of thought; per step a query, evidence, a verdict; then a final answer.

    Taught in lessons/07_rethinking_with_retrieval.ipynb.
    """
    check_query(question)
    check_max_steps(max_steps)
    _check_options(k=k, query=query)
    started, meter = time.perf_counter(), Meter(chat or models.chat_model())
    reply = meter.chat(cot_prompt(question, max_steps=max_steps),
                       **cot_options(meter.inner, max_steps, constrain, max_tokens))
    texts, cot_answer, warnings = parse_cot(reply.text, max_steps=max_steps)
    examples = [text for _, steps_, _ in COT_EXAMPLES for text in steps_]
    warnings = (length_warning(reply, "writing the chain of thought") + warnings
                + copy_warnings(question, texts, examples, EXAMPLE_MARKERS))
    if not texts:
        warnings.append("no reasoning steps could be read from the reply: nothing was verified, and the "
                        "answer is the unverified chain-of-thought answer")
        return RwRResult(question, (), cot_answer, cot_answer, meter.tokens, time.perf_counter() - started,
                         meter.model, tuple(warnings), reply.text)
    steps: list[RwRStep] = []
    for number, text in enumerate(texts, start=1):
        step, notes = check_step(number, text, [s.text for s in steps], search, meter, k=k, query=query,
                                 max_chars=max_chars)
        steps.append(step)
        warnings += [f"step {number}: {note}" for note in notes]
    answer, notes = final_answer(question, steps, meter, cot_answer=cot_answer, constrain=constrain)
    return RwRResult(question, tuple(steps), cot_answer, answer, meter.tokens, time.perf_counter() - started,
                     meter.model, tuple(warnings + notes), reply.text)


def _check_options(*, k: int, query: str) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if query not in QUERY_MODES:
        raise ValueError(f"query must be one of {', '.join(QUERY_MODES)}, got {query!r}")


def cot_prompt(question: str, *, max_steps: int) -> list[dict]:
    """The few-shot chain-of-thought prompt ('Step N:' lines, then 'So the answer is X.')."""
    messages = [{"role": "system", "content": COT_SYSTEM.format(n=max_steps)}]
    for example, steps, answer in COT_EXAMPLES:
        if len(steps) <= max_steps:
            reply = "".join(f"Step {i}: {s}\n" for i, s in enumerate(steps, start=1)) + f"{ANSWER_LEAD} {answer}."
            messages += [{"role": "user", "content": example}, {"role": "assistant", "content": reply}]
    return messages + [{"role": "user", "content": question}]


def cot_grammar(max_steps: int) -> str:
    """GBNF: 'Step 1: …' up to 'Step max_steps: …', then 'So the answer is …'."""
    return list_grammar(max_steps, prefix="Step {n}: ", tail=f'"{ANSWER_LEAD} " [^\\n]{{1,80}}')


def cot_options(chat: ChatModel, max_steps: int, constrain: str, max_tokens: int) -> dict:
    """Chat options for the chain of thought: a GBNF grammar when the backend takes one."""
    mode = pick_constraint(chat, constrain, otherwise="none")
    if mode == "json":
        raise ValueError("the chain of thought is plain text: use constrain='auto', 'grammar' or 'none'")
    return {"max_tokens": max_tokens, **({"grammar": cot_grammar(max_steps)} if mode == "grammar" else {})}


def parse_cot(text: str, *, max_steps: int) -> tuple[list[str], str, list[str]]:
    """Steps ('Step N:' or '1.' lines; else sentences) and the 'So the answer is' answer; never raises."""
    text = text or ""
    matches = list(_ANSWER.finditer(text))
    answer, warnings = "", []
    if matches:
        answer = clean_answer(text[matches[-1].end():].split("\n")[0])
        text = text[: matches[-1].start()]
    else:
        warnings.append(f"no '{ANSWER_LEAD} …' line in the reply: no answer was read")
    items = marked_lines(text)
    if not items and text.strip():
        items = [clean_item(s) for s in split_sentences(text)]
        if any(items):
            warnings.append("no 'Step N:' lines in the reply; read its sentences as steps")
    steps, notes = drop_repeats(items)
    if len(steps) > max_steps:
        notes.append(f"kept the first {max_steps} of {len(steps)} steps")
    return steps[:max_steps], answer, warnings + notes


def clean_answer(text: str) -> str:
    """An answer without the trailing period, quotes and spaces."""
    return clean_item(clean_item(text).rstrip(".!"))


def step_query(text: str, mode: str, meter: Meter) -> tuple[str, list[str]]:
    """The search query for a step: its keywords, the step itself, or the model's short query."""
    if mode == "step":
        return text, []
    if mode == "keywords":
        return keyword_query(text), []
    reply = meter.chat(QUERY_PROMPT + [{"role": "user", "content": text}], max_tokens=24, stop=["\n"])
    written = clean_item(reply.text)
    if not written:
        return keyword_query(text), ["the model wrote an empty search query; used the step's keywords"]
    return written, []


def check_step(number: int, text: str, so_far: Sequence[str], search: Search, meter: Meter, *, k: int = 3,
               query: str = "keywords", max_chars: int = 400) -> tuple[RwRStep, list[str]]:
    """Query, evidence and verdict for one step; without evidence it stays unverified (no model call)."""
    started = time.perf_counter()
    search_query, notes = step_query(text, query, meter)
    hits, note = safe_search(search, search_query, k=k)
    if not hits:
        step = RwRStep(number, text, search_query, (), "unverified", "", time.perf_counter() - started)
        return step, notes + [f"{note}; left unverified"]
    verdict, correction, more = judge(text, so_far, hits, meter, max_chars=max_chars)
    step = RwRStep(number, text, search_query, tuple(hits), verdict, correction, time.perf_counter() - started)
    return step, notes + more


def verify_prompt(text: str, so_far: Sequence[str], hits: Sequence[Hit], *, max_chars: int = 400) -> list[dict]:
    """The few-shot verdict prompt: steps verified so far, the evidence, the step to check."""
    messages = [{"role": "system", "content": VERIFY_SYSTEM}]
    for done, evidence, step, verdict, correction in VERIFY_EXAMPLES:
        messages += [{"role": "user", "content": _verify_question(done, evidence, step)},
                     {"role": "assistant",
                      "content": json.dumps({"verdict": verdict, "corrected_step": correction})}]
    evidence = excerpts_text(hits, max_chars=max_chars)
    return messages + [{"role": "user", "content": _verify_question(so_far, evidence, text)}]


def _verify_question(so_far: Sequence[str], evidence: str, step: str) -> str:
    done = "\n".join(f"{i}. {s}" for i, s in enumerate(so_far, start=1)) or "(none)"
    return f"Verified so far:\n{done}\nEvidence:\n{evidence}\nStep: {step}"


def verdict_schema() -> dict:
    """JSON schema for {"verdict": one of VERDICTS, "corrected_step": string}."""
    return {"type": "object", "properties": {"verdict": {"enum": list(VERDICTS)},
                                             "corrected_step": {"type": "string", "maxLength": 200}},
            "required": ["verdict", "corrected_step"]}


def judge(text: str, so_far: Sequence[str], hits: Sequence[Hit], meter: Meter, *,
          max_chars: int = 400) -> tuple[str, str, list[str]]:
    """The model's verdict on one step and its correction, with the rules for bad replies applied."""
    reply = meter.chat(verify_prompt(text, so_far, hits, max_chars=max_chars), max_tokens=80,
                       json_schema=verdict_schema())
    verdict, correction, warnings = parse_verdict(reply.text)
    warnings = length_warning(reply, "judging the step") + warnings
    if verdict == "corrected" and not correction:
        return "unverified", "", warnings + ["the model said 'corrected' but gave no correction; kept the "
                                             "original step, marked unverified"]
    if verdict == "corrected" and step_key(correction) == step_key(text):
        return "unverified", "", warnings + ["the model's correction repeats the step; kept it, marked unverified"]
    return verdict, correction if verdict == "corrected" else "", warnings


def parse_verdict(text: str) -> tuple[str, str, list[str]]:
    """(verdict, correction, warnings) from a JSON reply or, failing that, a verdict word; never raises."""
    found = _json_object(text)
    if found is None:
        words = re.findall(r"\b(" + "|".join(VERDICTS) + r")\b", (text or "").lower())
        if words:
            return words[0], "", ["the verdict was not JSON; read the verdict word from the text"]
        return "unverified", "", [f"unknown verdict {shorten(text or '', 60)!r}; marked unverified"]
    raw = str(found.get("verdict", "")).strip()
    correction = clean_item(str(found.get("corrected_step") or found.get("correction") or ""))
    if raw.lower() not in VERDICTS:
        return "unverified", "", [f"unknown verdict {raw!r}; marked unverified"]
    return raw.lower(), correction, []


def _json_object(text: str) -> dict | None:
    for candidate in (text or "", *re.findall(r"\{.*?\}", text or "", flags=re.S)):
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def final_answer(question: str, steps: Sequence[RwRStep], meter: Meter, *, cot_answer: str = "",
                 constrain: str = "auto") -> tuple[str, list[str]]:
    """The answer re-derived from the steps as revised (corrections applied, unverified ones kept)."""
    facts = "\n".join(f"{s.number}. {s.text}" for s in steps)
    mode = pick_constraint(meter.inner, constrain, otherwise="none")
    options = {"grammar": f'root ::= "{ANSWER_LEAD} " [^\\n]{{1,80}}\n'} if mode == "grammar" else {}
    reply = meter.chat(ANSWER_PROMPT + [{"role": "user", "content": f"Question: {question}\nFacts:\n{facts}"}],
                       max_tokens=40, stop=["\n"], **options)
    answer = parse_answer(reply.text)
    warnings = length_warning(reply, "writing the final answer")
    if not answer:
        return cot_answer, warnings + ["the model gave no final answer; kept the chain-of-thought answer"]
    if not any(s.verdict in ("confirmed", "corrected") for s in steps):
        warnings.append("no step was confirmed or corrected by evidence: the answer rests on unverified steps")
    return answer, warnings


def parse_answer(text: str) -> str:
    """The answer in a final-answer reply: what follows 'the answer is' (else the whole reply), cleaned."""
    text = text or ""
    match = _ANSWER.search(text)
    return clean_answer(text[match.end():] if match else text)


# --- evidence scorers (no LLM needed) --------------------------------------------------------------

class EvidenceScorer(Protocol):
    """Scores how well each doc supports a statement; higher is better, read on a 0-1 scale.

    Any Reranker fits (CrossEncoderReranker scores are already in (0, 1)).
    """

    name: str

    def score(self, text: str, docs: Sequence[Doc]) -> np.ndarray: ...


class LLMScorer:
    """A chat model's 0-10 relevance score (ragkit.rerank.LLMReranker), divided by 10."""

    def __init__(self, chat: ChatModel):
        self.reranker = LLMReranker(chat)
        self.name = f"LLM 0-10 score ({chat.name})"

    def score(self, text: str, docs: Sequence[Doc]) -> np.ndarray:
        """The model's score of each doc for the statement, on 0-1."""
        return self.reranker.score(text, docs) / 10.0


def evidence_scorer(scorer: str | EvidenceScorer = "embedding", *, chat: ChatModel | None = None,
                    embedder=None, reranker=None) -> EvidenceScorer:
    """'embedding', 'cross-encoder' or 'llm' as a scorer (the configured model unless given); objects pass."""
    if not isinstance(scorer, str):
        if not callable(getattr(scorer, "score", None)):
            raise TypeError(f"a scorer needs a .score(text, docs) method; got {type(scorer).__name__}")
        return scorer
    if scorer == "embedding":
        return EmbeddingScorer(embedder or models.embedder())
    if scorer == "cross-encoder":
        return reranker or models.reranker()
    if scorer == "llm":
        return LLMScorer(chat or models.chat_model())
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
        with _seed(meter.inner, seed + number - 1):
            reply = meter.chat(cot_prompt(question, max_steps=max_steps), temperature=temperature, **options)
        steps, answer, notes = parse_cot(reply.text, max_steps=max_steps)
        notes = length_warning(reply, "writing the chain of thought") + notes
        warnings += [f"path {number}: {note}" for note in notes]
        sampled.append(ReasoningPath(number, reply.text, tuple(steps), answer))
    if paths > 1 and temperature > 0 and len({p.text for p in sampled}) == 1:
        warnings.append(f"all {paths} sampled paths are identical: the backend may reuse one seed, "
                        "so the vote is over one path")
    return sampled, warnings


@contextmanager
def _seed(chat, seed: int):
    """Give a backend with a `seed` attribute (LlamaCppChat) a different seed per path, then restore it."""
    old = getattr(chat, "seed", None)
    if not isinstance(old, int):
        yield
        return
    chat.seed = seed
    try:
        yield
    finally:
        chat.seed = old


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


def answer_key(answer: str) -> str:
    """What two answers must share to count as the same vote: SQuAD-normalised, 'yes, …' → 'yes'."""
    key = normalize_answer(answer or "")
    first = key.split()[0] if key else ""
    return first if first in ("yes", "no") else key


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
    _check_options(k=k, query=query)
    started, meter = time.perf_counter(), Meter(chat or models.chat_model())
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
    return VoteResult(question, answer, majority, tuple(scored), tuple(votes), judge_model.name, meter.tokens,
                      time.perf_counter() - started, meter.model, tuple(warnings + notes))


def self_consistency(question: str, *, chat: ChatModel | None = None, paths: int = 5, temperature: float = 0.7,
                     max_steps: int = 4, constrain: str = "auto", max_tokens: int = 160,
                     seed: int = 0) -> VoteResult:
    """Sample paths and take the majority answer, no evidence: the baseline.

    Taught in lessons/07_rethinking_with_retrieval.ipynb.
    """
    check_query(question)
    check_max_steps(max_steps)
    started, meter = time.perf_counter(), Meter(chat or models.chat_model())
    sampled, warnings = sample_paths(question, meter, paths=paths, temperature=temperature, max_steps=max_steps,
                                     constrain=constrain, max_tokens=max_tokens, seed=seed)
    sampled = [ReasoningPath(p.number, p.text, p.steps, p.answer, support=1.0) for p in sampled]
    votes = tally(sampled, [1.0] * len(sampled))
    warnings += [f"path {p.number} gave no answer; left out of the vote"
                 for p in sampled if not answer_key(p.answer)]
    if not votes:
        warnings.append("no path gave an answer: there is nothing to vote on")
    answer = votes[0][0] if votes else ""
    return VoteResult(question, answer, answer, tuple(sampled), tuple(votes), "majority (no evidence)",
                      meter.tokens, time.perf_counter() - started, meter.model, tuple(warnings))
