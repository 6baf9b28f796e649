"""A chain of thought, as RwR (ragkit.reason.rwr) checks it and voting (ragkit.reason.voting) samples it: the
few-shot prompt ('Step N: <fact>' lines, then 'So the answer is X.'), its grammar, reading the steps and the answer
from a reply, the final-answer prompt over facts, and the search query for each step ('keywords': the step minus stop
words, no model; 'step': the step as written, as in the paper; 'llm': a short query the model writes).
Taught in lessons/07_rethinking_with_retrieval.ipynb.
"""

from __future__ import annotations

from typing import Sequence

from ragkit.models.llm import ChatModel
from ragkit.models.replies import (
    ANSWER_LEAD,
    ANSWER_PATTERN,
    clean_item,
    copy_warnings,
    drop_repeats,
    list_grammar,
    marked_lines,
    pick_constraint,
)
from ragkit.reason.few_shot import COT_EXAMPLES, COT_MARKERS, cot_example_steps
from ragkit.reason.steps import Meter, keyword_query
from ragkit.text import numbered, split_sentences

QUERY_MODES = ("keywords", "step", "llm")
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
    matches = list(ANSWER_PATTERN.finditer(text))
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


def parse_answer(text: str) -> str:
    """The answer in a final-answer reply: what follows 'the answer is' (else the whole reply), cleaned."""
    text = text or ""
    match = ANSWER_PATTERN.search(text)
    return clean_answer(text[match.end():] if match else text)


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


def answer_prompt(question: str, facts: Sequence[str]) -> list[dict]:
    """The few-shot final-answer prompt: the examples' questions and steps as facts, then this question's facts."""
    messages = [{"role": "system", "content": f"Answer the question from the facts. Reply with one line: {ANSWER_LEAD} "
                                              "<short answer>."}]
    for example, steps, answer in COT_EXAMPLES:
        messages += [{"role": "user", "content": f"Question: {example}\nFacts:\n{numbered(steps)}"},
                     {"role": "assistant", "content": f"{ANSWER_LEAD} {answer}."}]
    return messages + [{"role": "user", "content": f"Question: {question}\nFacts:\n{numbered(facts)}"}]



def answer_options(chat: ChatModel, constrain: str) -> dict:
    """Chat options for the final answer: a GBNF grammar for its one line when the backend takes one."""
    mode = pick_constraint(chat, constrain, otherwise="none")
    return {"grammar": f'root ::= "{ANSWER_LEAD} " [^\\n]{{1,80}}\n'} if mode == "grammar" else {}


def copied_steps(question: str, steps: list[str]) -> list[str]:
    """Warnings for chain-of-thought steps that copy a few-shot example instead of reading the question."""
    return copy_warnings(question, steps, cot_example_steps(), COT_MARKERS)
