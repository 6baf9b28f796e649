"""CoT-RAG: split a question into reasoning steps, retrieve for each step, write a finding per step,
then synthesise an answer that cites the steps ([S1], [S2]) and says what was not found.

Every LLM call is few-shot and, where the backend allows it, constrained. `constrain` picks how the
decomposition is constrained: 'auto' (a GBNF numbered-list grammar for llama.cpp, a JSON schema
elsewhere), 'grammar', 'json' or 'none'. Every reply is read by a parser that never raises, and
anything that went wrong ends up in `CoTResult.warnings`. `carry_findings=True` appends the previous
step's finding to the next sub-query (a cheap help for bridge questions: "when was *it* founded?").
Given a `reader` (ragkit.generate.reader, e.g. reader_model()), the reader writes the final answer from the steps'
passages instead of the chat model from their findings. Taught in lessons/06_cot_rag.ipynb.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

from ragkit.corpus import Hit, Search, check_query
from ragkit.generate.reader import Reader
from ragkit.models import resolve, roles
from ragkit.models.jobs import decomposer_messages
from ragkit.models.llm import ChatModel
from ragkit.models.replies import (
    clean_item,
    copy_warnings,
    length_warning,
    list_grammar,
    parse_steps,
    pick_constraint,
    step_key,
    steps_schema,
)
from ragkit.passages import excerpts_text, shorten
from ragkit.reason.few_shot import DECOMPOSE_EXAMPLES, DECOMPOSE_MARKERS, decompose_example_texts
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

NOT_FOUND = "not found in context"
NO_CONTEXT_WARNING = "no context was retrieved in any step: the answer may be fabricated"
NOTHING_FOUND_WARNING = "no step found its answer in the retrieved context: the answer may be fabricated"
FALLBACK_WARNING = "no steps could be read from the model's reply; used the question itself as the only step"

DECOMPOSE_SYSTEM = ("Split the question into at most {n} short questions, each answered by looking up one "
                    "fact. Ask them in order: a later question may use the answer of an earlier one. {form}")
DECOMPOSE_FORMS = {"list": "Reply with a numbered list only.",
                   "json": 'Reply with JSON only: {"steps": ["...", "..."]}.'}

FINDING_PROMPT = [
    {"role": "system", "content": "Answer the question in one short sentence, using only the excerpts. "
                                  f"If the excerpts do not say, reply exactly: {NOT_FOUND}"},
    {"role": "user", "content": "Excerpts:\n[1] Koala: The koala is a tree-dwelling marsupial of eastern "
                                "Australia. It feeds almost only on eucalyptus leaves.\n[2] Sloth: Sloths "
                                "hang from trees in the rainforests of South America.\n\n"
                                "Question: Which animal eats eucalyptus leaves?"},
    {"role": "assistant", "content": "The koala eats eucalyptus leaves."},
    {"role": "user", "content": "Excerpts:\n[1] Kiwi: The kiwi is a flightless bird of New Zealand that "
                                "feeds at night.\n\nQuestion: How long does a kiwi bird live?"},
    {"role": "assistant", "content": NOT_FOUND},
]

SYNTHESIS_PROMPT = [
    {"role": "system", "content": "Answer the question from the findings of the steps. Cite the step behind "
                                  "each claim as [S1], [S2]. If a step's finding is "
                                  f"'{NOT_FOUND}', say that this part is unknown. Reply in one or two sentences."},
    {"role": "user", "content": "Question: Does the animal that eats eucalyptus leaves live on the same "
                                "continent as the kiwi bird?\n"
                                "S1. Which animal eats eucalyptus leaves? -> The koala eats eucalyptus leaves.\n"
                                "S2. On which continent does the koala live? -> The koala lives in Australia.\n"
                                f"S3. On which continent does the kiwi bird live? -> {NOT_FOUND}"},
    {"role": "assistant", "content": "The koala eats eucalyptus leaves [S1] and lives in Australia [S2]. Where "
                                     "the kiwi bird lives was not found [S3], so the answer is unknown."},
    {"role": "user", "content": "Question: How many legs does the insect that makes honey have?\n"
                                "S1. Which insect makes honey? -> The honey bee makes honey.\n"
                                "S2. How many legs does a honey bee have? -> A honey bee has six legs."},
    {"role": "assistant", "content": "The honey bee makes honey [S1] and has six legs [S2], so the answer "
                                     "is six."},
]

_CITATION = re.compile(r"\[([^\]]*)\]")
_STEP_REF = re.compile(r"S\s*(\d+)", re.I)


@dataclass(frozen=True)
class CoTStep:
    """One reasoning step: what it asks, what it retrieved, and what the model found there."""

    number: int
    thought: str
    sub_query: str
    excerpts: tuple[Hit, ...]
    sources: tuple[str, ...]
    finding: str
    found: bool
    latency: float


@dataclass(frozen=True)
class CoTResult(Run):
    """A CoT-RAG run: the steps with their evidence, the cited answer, its cost and what went wrong."""

    answer: str
    steps: tuple[CoTStep, ...]
    sources: tuple[str, ...]
    total_chunks: int
    plan: str = ""
    reader_steps: tuple[int, ...] | None = None  # a reader's answer: the steps whose hits hold its passage

    @property
    def gaps(self) -> tuple[int, ...]:
        """Numbers of the steps whose finding is 'not found in context'."""
        return tuple(step.number for step in self.steps if not step.found)

    def cited_steps(self) -> tuple[int, ...]:
        """Step numbers the answer cites ([S1], [S2, S3]), in order of first citation; for a reader's answer, the
        steps whose hits hold the passage it was read from (none for yes/no or not found)."""
        return cited_steps(self.answer) if self.reader_steps is None else self.reader_steps

    def trace_markdown(self) -> str:
        """The whole run as markdown: steps, excerpts, findings, answer, cost and warnings."""
        lines = [f"**Question:** {self.question}", ""]
        for step in self.steps:
            lines += [f"**S{step.number}. {step.thought}**", f"- sub-query: `{shorten(step.sub_query, 200)}`"]
            lines += hit_lines("retrieved", step.excerpts)
            mark = "" if step.found else " ⚠ gap"
            lines += [f"- finding{mark}: {step.finding} ({step.latency:.2f} s)", ""]
        cited = ", ".join(f"S{n}" for n in self.cited_steps()) or "none"
        gaps = ", ".join(f"S{n}" for n in self.gaps) or "none"
        lines += [f"**Answer:** {self.answer or '(empty)'}", "",
                  f"cited steps: {cited} · gaps: {gaps} · sources: {', '.join(self.sources) or 'none'}",
                  f"{len(self.steps)} steps · {self.total_chunks} chunks · {self.tokens} tokens · "
                  f"{self.latency:.2f} s · model {self.model}"]
        return "\n".join(lines + warning_lines(self.warnings))

    def trace_html(self) -> str:
        """A compact HTML table, one row per step (gaps shaded), for IPython.display.HTML."""
        rows = [(f"S{s.number}", shorten(s.sub_query, 80), ", ".join(s.sources) or "—",
                 shorten(s.finding, 120), f"{s.latency:.2f}") for s in self.steps]
        shades = ["" if s.found else "background:#fde2e2" for s in self.steps]
        caption = f"{self.question} → {shorten(self.answer, 160) or '(empty)'}"
        table = html_table(("step", "sub-query", "sources", "finding", "s"), rows, caption=caption,
                           row_styles=shades)
        return table + warning_html(self.warnings)


def cot_rag(question: str, search: Search, *, chat: ChatModel | None = None, decomposer: ChatModel | None = None,
            max_steps: int = 4, k: int = 3, constrain: str = "auto", carry_findings: bool = False,
            max_tokens: int = 120, max_chars: int = 500, reader: Reader | None = None) -> CoTResult:
    """Decompose, retrieve top-k per step, write a finding per step, answer citing [S1].

    The plan comes from `decomposer`, else from `chat` if given, else from the decomposer setting's model.
    With a `reader`, it answers instead from the steps' passages: step 1's hits in rank order, then step 2's,
    ..., each passage once, the first 5 (reasoning.unique_hits); see read_steps.
    Taught in lessons/06_cot_rag.ipynb.
    """
    check_query(question)
    check_max_steps(max_steps)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    started, meter = time.perf_counter(), Meter(chat or resolve.chat_model())
    planner = Meter(decomposer or chat or roles.role_model("decomposer"))
    thoughts, plan, warnings = decompose(question, planner, max_steps=max_steps, constrain=constrain,
                                         max_tokens=max_tokens)
    meter.tokens += planner.tokens
    steps: list[CoTStep] = []
    for number, thought in enumerate(thoughts, start=1):
        carried = steps[-1].finding if carry_findings and steps and steps[-1].found else ""
        step, notes = run_step(number, thought, f"{thought} {carried}".strip(), search, meter, k=k,
                               max_chars=max_chars)
        steps.append(step)
        warnings += [f"step {number}: {note}" for note in notes]
    if reader is None:
        answer, notes = synthesize(question, steps, meter, max_tokens=max_tokens)
        reader_steps, model = None, models_used(meter, plan=planner)
    else:
        answer, reader_steps, notes = read_steps(question, steps, reader)
        model = models_used(meter, plan=planner, reader=reader.name)
    warnings += notes
    return CoTResult(answer, tuple(steps), unique_ids([s.excerpts for s in steps]), sum(len(s.excerpts) for s in steps),
                     plan, reader_steps, question=question, tokens=meter.tokens, latency=time.perf_counter() - started,
                     model=model, warnings=tuple(warnings))


def decompose_prompt(question: str, *, max_steps: int, form: str = "list") -> list[dict]:
    """The few-shot decomposition prompt, examples in the reply form asked ('list' or 'json')."""
    messages = [{"role": "system", "content": DECOMPOSE_SYSTEM.format(n=max_steps, form=DECOMPOSE_FORMS[form])}]
    for example, steps in DECOMPOSE_EXAMPLES:
        if len(steps) <= max_steps:
            reply = (json.dumps({"steps": list(steps)}) if form == "json"
                     else "".join(f"{i}. {s}\n" for i, s in enumerate(steps, start=1)))
            messages += [{"role": "user", "content": example}, {"role": "assistant", "content": reply}]
    return messages + [{"role": "user", "content": question}]


def decompose(question: str, chat: ChatModel, *, max_steps: int, constrain: str = "auto",
              max_tokens: int = 120) -> tuple[list[str], str, list[str]]:
    """Reasoning steps for the question, the raw reply and warnings; the question itself if none parse.

    A decomposer specialist is asked in its own job's prompt; any other chat model few-shot, constrained as
    `constrain` says. Wrap chat in a reasoning.Meter to count its tokens.
    """
    if served_job(chat) == "decomposer":
        reply = chat.chat(decomposer_messages(question), max_tokens=max_tokens)
        examples, markers = [], frozenset()  # it never saw the few-shot examples: nothing to copy
    else:
        prompt, options = few_shot_request(question, chat, max_steps=max_steps, constrain=constrain)
        reply = chat.chat(prompt, max_tokens=max_tokens, **options)
        examples, markers = decompose_example_texts(), DECOMPOSE_MARKERS
    warnings = length_warning(reply, "decomposing the question")
    steps, notes = parse_steps(reply.text, max_steps=max_steps)
    warnings += notes
    if not steps:
        return [question], reply.text, warnings + [FALLBACK_WARNING]
    return steps, reply.text, warnings + copy_warnings(question, steps, examples, markers)


def few_shot_request(question: str, chat: ChatModel, *, max_steps: int, constrain: str) -> tuple[list[dict], dict]:
    """The few-shot decomposition prompt and its constraint: a numbered-list grammar or a JSON schema."""
    mode = pick_constraint(getattr(chat, "inner", chat), constrain)
    options = {"grammar": list_grammar(max_steps)} if mode == "grammar" else (
        {"json_schema": steps_schema(max_steps)} if mode == "json" else {})
    return decompose_prompt(question, max_steps=max_steps, form="json" if mode == "json" else "list"), options


def run_step(number: int, thought: str, sub_query: str, search: Search, meter: Meter, *, k: int,
             max_chars: int = 500) -> tuple[CoTStep, list[str]]:
    """Retrieve for one step and ask for its finding; no hits means 'not found' without a model call."""
    started = time.perf_counter()
    hits, note = safe_search(search, sub_query, k=k)
    notes = [note] if note else []
    if hits:
        finding, more = find(thought, hits, meter, max_chars=max_chars)
        notes += more
    else:
        finding = NOT_FOUND
    step = CoTStep(number, thought, sub_query, tuple(hits), tuple(h.id for h in hits), finding,
                   not is_not_found(finding), time.perf_counter() - started)
    return step, notes


def find(thought: str, hits: list[Hit], meter: Meter, *, max_chars: int = 500) -> tuple[str, list[str]]:
    """The model's one-sentence finding for a step from its excerpts, or NOT_FOUND."""
    prompt = FINDING_PROMPT + [{"role": "user", "content": f"Excerpts:\n{excerpts_text(hits, max_chars=max_chars)}"
                                                           f"\n\nQuestion: {thought}"}]
    reply = meter.chat(prompt, max_tokens=60, stop=["\n"])
    finding = clean_item(reply.text)
    notes = length_warning(reply, "writing the finding")
    if not finding:
        return NOT_FOUND, notes + [f"the model gave an empty finding; counted as '{NOT_FOUND}'"]
    return finding, notes


def is_not_found(text: str) -> bool:
    """True for an empty finding or one that says 'not found in context' (any case, any punctuation)."""
    key = step_key(text)
    return not key or step_key(NOT_FOUND) in key or key == "not found"


def synthesis_prompt(question: str, steps: list[CoTStep]) -> list[dict]:
    """The few-shot synthesis prompt with the steps' findings as 'S1. thought -> finding' lines."""
    lines = [f"S{s.number}. {s.thought} -> {s.finding if s.found else NOT_FOUND}" for s in steps]
    return SYNTHESIS_PROMPT + [{"role": "user", "content": f"Question: {question}\n" + "\n".join(lines)}]


def synthesize(question: str, steps: list[CoTStep], meter: Meter, *,
               max_tokens: int = 120) -> tuple[str, list[str]]:
    """The final cited answer and warnings about its grounding and citations."""
    reply = meter.chat(synthesis_prompt(question, steps), max_tokens=max_tokens)
    answer = reply.text.strip()
    warnings = length_warning(reply, "writing the answer")
    if not any(s.excerpts for s in steps):
        warnings.append(NO_CONTEXT_WARNING)
    elif not any(s.found for s in steps):
        warnings.append(NOTHING_FOUND_WARNING)
    if not answer:
        return answer, warnings + ["the model gave an empty answer"]
    cited = cited_steps(answer)
    missing = [n for n in cited if not 1 <= n <= len(steps)]
    if missing:
        warnings.append(f"the answer cites {', '.join(f'[S{n}]' for n in missing)}, which "
                        f"{'is not a step' if len(missing) == 1 else 'are not steps'}")
    if not cited:
        warnings.append("the answer cites no step: its claims cannot be traced to the findings")
    return answer, warnings


def read_steps(question: str, steps: list[CoTStep], reader: Reader) -> tuple[str, tuple[int, ...], list[str]]:
    """The reader's answer from the steps' passages (each step's hits in step order, each passage once, the first
    5), the steps whose hits hold the passage it was read from, and warnings."""
    passages = unique_hits([s.excerpts for s in steps])
    answer = reader.answer(question, passages)
    warnings = [] if passages else [NO_CONTEXT_WARNING]
    if not answer.found:
        warnings.append(f"the reader ({reader.name}) found no answer in the steps' passages")
    source = passages[answer.passage].id if answer.passage is not None and answer.passage < len(passages) else None
    return answer.text, tuple(s.number for s in steps if source in s.sources), warnings


def cited_steps(answer: str) -> tuple[int, ...]:
    """Step numbers cited in a text as [S1], [S2, S3] or [S1][S2], in order of first citation."""
    numbers = (int(n) for group in _CITATION.findall(answer or "") for n in _STEP_REF.findall(group))
    return tuple(dict.fromkeys(numbers))
