"""Rethinking with Retrieval (He, Zhang & Roth, 2022, "Rethinking with Retrieval: Faithful Large
Language Model Inference"): check a chain of thought step by step against retrieved evidence.

`rwr`: one chain of thought (ragkit.reason.chain_of_thought); a search query per step; top-k evidence per step
from any retriever; a verdict per step (ragkit.reason.step_judge: confirmed / corrected / unverified) given the
evidence and the steps verified so far; a final answer from the revised steps. A step without evidence
stays unverified without asking the model.

The paper's own variant, a vote over sampled chains weighted by their evidence, and the self-consistency
baseline are in ragkit.reason.voting.

With specialists (lesson 09): `judge` is the model that gives the verdicts and `answerer` the one that writes
the final answer (each the chat model unless set, RAGKIT_JUDGE / RAGKIT_ANSWERER). A judge specialist replies
supports / contradicts / unrelated: supports confirms the step, contradicts corrects it to the evidence
sentence closest to it, unrelated leaves it unverified. An answerer specialist answers yes or no from the
question and facts: the revised steps that evidence confirmed or corrected, then each step's best evidence.

Given a `reader` (ragkit.generate.reader, e.g. reader_model()), a question that is not yes/no (is_yes_no: English
only, by its first word) is answered by the reader from the steps' evidence instead (each step's evidence in
step order, each passage once, the first 5); a yes/no question keeps the answerer. Taught in
lessons/07_rethinking_with_retrieval.ipynb.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Sequence

from ragkit.corpus import Hit, Search, check_query
from ragkit.generate.reader import Reader
from ragkit.models import resolve, roles
from ragkit.models.jobs import answerer_messages
from ragkit.models.llm import ChatModel
from ragkit.models.replies import length_warning
from ragkit.passages import passage_body, shorten
from ragkit.reason.chain_of_thought import (
    answer_options,
    answer_prompt,
    check_options,
    copied_steps,
    cot_options,
    cot_prompt,
    parse_answer,
    parse_cot,
    step_query,
)
from ragkit.reason.step_judge import judge
from ragkit.reason.steps import (
    Meter,
    Run,
    check_max_steps,
    models_used,
    safe_search,
    served_job,
    unique_hits,
    unique_ids,
)
from ragkit.reason.trace import hit_lines, html_table, warning_html, warning_lines

_VERDICT_MARK = {"confirmed": "✔", "corrected": "✎", "unverified": "?"}
_VERDICT_STYLE = {"confirmed": "background:#e2f5e2", "corrected": "background:#fff3cd", "unverified": ""}
# the first words of an English yes/no question: an auxiliary or modal verb, also negated ("Isn't", "Don't")
YES_NO_LEADS = frozenset("is are was were am do does did can could has have had will would shall should may might "
                         "must isn't aren't wasn't weren't don't doesn't didn't can't couldn't hasn't haven't hadn't "
                         "won't wouldn't shouldn't".split())
_FIRST_WORD = re.compile(r"[a-z']+")


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
class RwRResult(Run):
    """A rethinking-with-retrieval run: the checked steps, both answers, cost and what went wrong."""

    steps: tuple[RwRStep, ...]
    cot_answer: str
    answer: str
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
                      f"- query: `{shorten(step.query, 200)}`", *hit_lines("evidence", step.evidence)]
            if step.verdict == "corrected":
                lines.append(f"- corrected to: {step.corrected}")
            lines += [f"- {step.latency:.2f} s", ""]
        lines += [f"**Chain-of-thought answer:** {self.cot_answer or '(none)'}",
                  f"**Answer after rethinking:** {self.answer or '(none)'}", "",
                  f"corrected {self.corrected} of {self.total_steps} steps · {self.tokens} tokens · "
                  f"{self.latency:.2f} s · model {self.model}"]
        return "\n".join(lines + warning_lines(self.warnings))

    def trace_html(self) -> str:
        """A compact HTML table, one row per step, coloured by verdict, for IPython.display.HTML."""
        rows = [(str(s.number), shorten(s.original, 100), shorten(s.query, 60), ", ".join(s.sources) or "—",
                 s.verdict, shorten(s.corrected, 100) if s.verdict == "corrected" else "") for s in self.steps]
        caption = f"{self.question} → CoT: {self.cot_answer or '(none)'} · RwR: {self.answer or '(none)'}"
        table = html_table(("step", "as written", "query", "evidence", "verdict", "correction"), rows,
                           caption=caption, row_styles=[_VERDICT_STYLE[s.verdict] for s in self.steps])
        return table + warning_html(self.warnings)


def rwr(question: str, search: Search, *, chat: ChatModel | None = None, judge: ChatModel | None = None,
        answerer: ChatModel | None = None, reader: Reader | None = None, max_steps: int = 4, k: int = 3,
        query: str = "keywords", constrain: str = "auto", max_tokens: int = 160, max_chars: int = 400) -> RwRResult:
    """Chain of thought; per step a query, evidence, a verdict; then a final answer.

    The verdicts come from `judge` and the answer from `answerer`: each `chat` if given, else its setting's model.
    With a `reader`, a question that is not yes/no is answered by the reader from the steps' evidence (read_evidence).
    Taught in lessons/07_rethinking_with_retrieval.ipynb and lessons/09_specialists.ipynb.
    """
    check_query(question)
    check_max_steps(max_steps)
    check_options(k=k, query=query)
    started, meter = time.perf_counter(), Meter(chat or resolve.chat_model())
    judges = Meter(judge or chat or roles.role_model("judge"))
    answers = Meter(answerer or chat or roles.role_model("answerer"))
    reply = meter.chat(cot_prompt(question, max_steps=max_steps),
                       **cot_options(meter.inner, max_steps, constrain, max_tokens))
    texts, cot_answer, warnings = parse_cot(reply.text, max_steps=max_steps)
    warnings = length_warning(reply, "writing the chain of thought") + warnings + copied_steps(question, texts)
    if not texts:
        warnings.append("no reasoning steps could be read from the reply: nothing was verified, and the "
                        "answer is the unverified chain-of-thought answer")
        return RwRResult((), cot_answer, cot_answer, reply.text, question=question, tokens=meter.tokens,
                         latency=time.perf_counter() - started, model=meter.model, warnings=tuple(warnings))
    steps: list[RwRStep] = []
    for number, text in enumerate(texts, start=1):
        step, notes = check_step(number, text, [s.text for s in steps], search, meter, k=k, query=query,
                                 max_chars=max_chars, judges=judges)
        steps.append(step)
        warnings += [f"step {number}: {note}" for note in notes]
    if reader is None or is_yes_no(question):
        answer, notes = final_answer(question, steps, answers, cot_answer=cot_answer, constrain=constrain)
        model = models_used(meter, judge=judges, answerer=answers)
    else:
        answer, notes = read_evidence(question, steps, reader)
        model = models_used(meter, judge=judges, reader=reader.name)
    tokens = meter.tokens + judges.tokens + answers.tokens
    return RwRResult(tuple(steps), cot_answer, answer, reply.text, question=question, tokens=tokens,
                     latency=time.perf_counter() - started, model=model, warnings=tuple(warnings + notes))


def check_step(number: int, text: str, so_far: Sequence[str], search: Search, meter: Meter, *, k: int = 3,
               query: str = "keywords", max_chars: int = 400,
               judges: Meter | None = None) -> tuple[RwRStep, list[str]]:
    """Query, evidence and verdict (from judges, else meter) for one step; without evidence it stays unverified
    (no model call)."""
    started = time.perf_counter()
    search_query, notes = step_query(text, query, meter)
    hits, note = safe_search(search, search_query, k=k)
    if not hits:
        step = RwRStep(number, text, search_query, (), "unverified", "", time.perf_counter() - started)
        return step, notes + [f"{note}; left unverified"]
    verdict, correction, more = judge(text, so_far, hits, judges or meter, max_chars=max_chars)
    step = RwRStep(number, text, search_query, tuple(hits), verdict, correction, time.perf_counter() - started)
    return step, notes + more


def final_answer(question: str, steps: Sequence[RwRStep], meter: Meter, *, cot_answer: str = "",
                 constrain: str = "auto") -> tuple[str, list[str]]:
    """The answer re-derived from the facts: the steps as revised (corrections applied, unverified ones kept),
    or for an answerer specialist the confirmed and corrected steps, then each step's best evidence."""
    if served_job(meter) == "answerer":
        prompt = answerer_messages(question, evidence_facts(steps))
    else:
        prompt = answer_prompt(question, [s.text for s in steps])
    reply = meter.chat(prompt, max_tokens=40, stop=["\n"], **answer_options(meter.inner, constrain))
    answer = parse_answer(reply.text)
    warnings = length_warning(reply, "writing the final answer")
    if not answer:
        return cot_answer, warnings + ["the model gave no final answer; kept the chain-of-thought answer"]
    if not any(s.verdict in ("confirmed", "corrected") for s in steps):
        warnings.append("no step was confirmed or corrected by evidence: the answer rests on unverified steps")
    return answer, warnings


def read_evidence(question: str, steps: Sequence[RwRStep], reader: Reader) -> tuple[str, list[str]]:
    """The reader's answer from the steps' evidence (each step's in step order, each passage once, the first 5)."""
    passages = unique_hits([s.evidence for s in steps])
    answer = reader.answer(question, passages)
    if not passages:
        return answer.text, ["no step retrieved evidence: the reader had no passage to read"]
    return answer.text, [] if answer.found else [f"the reader ({reader.name}) found no answer in the evidence"]


def is_yes_no(question: str) -> bool:
    """Whether an English question asks for yes or no: its first word is an auxiliary or modal verb (Is, Does,
    Can, Wasn't ...)."""
    first = _FIRST_WORD.match(question.strip().lower().replace("’", "'").lstrip("\"'“¿¡(["))
    return bool(first) and first.group() in YES_NO_LEADS


def evidence_facts(steps: Sequence[RwRStep], *, limit: int = 6) -> list[str]:
    """The steps that evidence confirmed or corrected, then each step's top evidence passage, each once."""
    checked = [s.text for s in steps if s.verdict in ("confirmed", "corrected")]
    passages = [passage_body(s.evidence[0].doc.title, s.evidence[0].doc.text) for s in steps if s.evidence]
    return list(dict.fromkeys(checked + passages))[:limit]
