"""Rethinking with Retrieval (He, Zhang & Roth, 2022, "Rethinking with Retrieval: Faithful Large
Language Model Inference"): check a chain of thought step by step against retrieved evidence.

`rwr`: one chain of thought ('Step N: …' lines, then 'So the answer is X'); a search query per step
(`query`: 'keywords' = the step minus stop words, no LLM; 'step' = the step as written, as in the
paper; 'llm' = a short query the model writes); top-k evidence per step from any retriever; a verdict
per step (confirmed / corrected / unverified, JSON-schema constrained, plus a corrected step) given
the evidence and the steps verified so far; a final answer from the revised steps. A step without
evidence stays unverified without asking the model.

The paper's own variant, a vote over sampled chains weighted by their evidence, and the self-consistency
baseline are in ragkit.voting.

With specialists (lesson 09): `judge` is the model that gives the verdicts and `answerer` the one that writes
the final answer (each the chat model unless set, RAGKIT_JUDGE / RAGKIT_ANSWERER). A judge specialist replies
supports / contradicts / unrelated: supports confirms the step, contradicts corrects it to the evidence
sentence closest to it, unrelated leaves it unverified. An answerer specialist answers yes or no from the
question and facts: the revised steps that evidence confirmed or corrected, then each step's best evidence.
Taught in lessons/07_rethinking_with_retrieval.ipynb.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Sequence

from ragkit import models
from ragkit.corpus import Hit, check_query
from ragkit.llm import ChatModel
from ragkit.reasoning import (Meter, Search, check_max_steps, clean_item, copy_warnings, drop_repeats,
                              excerpts_text, keyword_query, length_warning, models_used, passage_line, list_grammar, marked_lines,
                              pick_constraint, safe_search, shorten, step_key, unique_ids)
from ragkit.specialist_records import judge_messages, parse_label
from ragkit.text import split_sentences
from ragkit.trace import hit_lines, html_table, warning_html, warning_lines

VERDICTS = ("confirmed", "corrected", "unverified")
QUERY_MODES = ("keywords", "step", "llm")
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


JUDGE_VERDICTS = {"supports": "confirmed", "contradicts": "corrected", "unrelated": "unverified"}
_VERDICT_MARK = {"confirmed": "✔", "corrected": "✎", "unverified": "?"}
_VERDICT_STYLE = {"confirmed": "background:#e2f5e2", "corrected": "background:#fff3cd", "unverified": ""}


# --- one chain of thought, checked step by step ----------------------------------------------------

def rwr(question: str, search: Search, *, chat: ChatModel | None = None, judge: ChatModel | None = None,
        answerer: ChatModel | None = None, max_steps: int = 4, k: int = 3, query: str = "keywords",
        constrain: str = "auto", max_tokens: int = 160, max_chars: int = 400) -> RwRResult:
    """Chain of thought; per step a query, evidence, a verdict; then a final answer.

    The verdicts come from `judge` and the answer from `answerer`: each `chat` if given, else its setting's model.
    Taught in lessons/07_rethinking_with_retrieval.ipynb and lessons/09_specialists.ipynb.
    """
    check_query(question)
    check_max_steps(max_steps)
    check_options(k=k, query=query)
    started, meter = time.perf_counter(), Meter(chat or models.chat_model())
    judges = Meter(judge or chat or models.role_model("judge"))
    answers = Meter(answerer or chat or models.role_model("answerer"))
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
                                 max_chars=max_chars, judges=judges)
        steps.append(step)
        warnings += [f"step {number}: {note}" for note in notes]
    answer, notes = final_answer(question, steps, answers, cot_answer=cot_answer, constrain=constrain)
    tokens = meter.tokens + judges.tokens + answers.tokens
    return RwRResult(question, tuple(steps), cot_answer, answer, tokens, time.perf_counter() - started,
                     models_used(meter, judge=judges, answerer=answers), tuple(warnings + notes), reply.text)


def check_options(*, k: int, query: str) -> None:
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
    if job_of(meter) == "judge":
        return specialist_verdict(text, hits, meter, max_chars=max_chars)
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


def job_of(meter: Meter) -> str:
    """The job of the specialist behind a meter ('judge', 'answerer', …), '' for a general chat model."""
    return getattr(meter.inner, "job", "") or ""


def specialist_verdict(text: str, hits: Sequence[Hit], meter: Meter, *,
                       max_chars: int = 400) -> tuple[str, str, list[str]]:
    """A judge specialist's label as a verdict: supports confirms, unrelated leaves unverified, contradicts
    corrects the step to the evidence sentence sharing most words with it."""
    evidence = [shorten(passage_line(hit.doc), max_chars) for hit in hits]
    reply = meter.chat(judge_messages(text, evidence), max_tokens=4)
    label = parse_label(reply.text)
    warnings = length_warning(reply, "judging the step")
    if not label:
        return "unverified", "", warnings + [f"unknown verdict {shorten(reply.text or '', 60)!r}; marked unverified"]
    if label == "contradicts":
        return "corrected", overlapping_sentence(text, [hit.doc.text for hit in hits]), warnings
    return JUDGE_VERDICTS[label], "", warnings


def overlapping_sentence(text: str, passages: Sequence[str]) -> str:
    """The sentence of the passages that shares most keywords with the text (the first on a tie)."""
    wanted = set(keyword_query(text).lower().split())
    sentences = [sentence for passage in passages for sentence in split_sentences(passage)]
    return max(sentences, key=lambda s: len(wanted & set(keyword_query(s).lower().split())), default="")


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
    """The answer re-derived from the facts: the steps as revised (corrections applied, unverified ones kept),
    or for an answerer specialist the confirmed and corrected steps, then each step's best evidence."""
    texts = evidence_facts(steps) if job_of(meter) == "answerer" else [s.text for s in steps]
    facts = "\n".join(f"{n}. {text}" for n, text in enumerate(texts, start=1))
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


def evidence_facts(steps: Sequence[RwRStep], *, limit: int = 6) -> list[str]:
    """The steps that evidence confirmed or corrected, then each step's top evidence passage, each once."""
    checked = [s.text for s in steps if s.verdict in ("confirmed", "corrected")]
    passages = [passage_line(s.evidence[0].doc) for s in steps if s.evidence]
    return list(dict.fromkeys(checked + passages))[:limit]


def parse_answer(text: str) -> str:
    """The answer in a final-answer reply: what follows 'the answer is' (else the whole reply), cleaned."""
    text = text or ""
    match = _ANSWER.search(text)
    return clean_answer(text[match.end():] if match else text)
