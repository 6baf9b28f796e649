"""The specialists' jobs: each job's prompt (a short system line, then one user message) and how its replies
are read. Pipelines ask a specialist in its job's prompt, training records are built in it, and a specialist
trained with another prompt is refused. Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import re
from typing import Sequence

from ragkit.models.replies import parse_steps
from ragkit.models.rerankers import RELEVANCE_SYSTEM
from ragkit.passages import NOT_IN_PASSAGES, PASSAGE_CHARS, passage_body, shorten
from ragkit.text import answer_key, normalize_answer, numbered

MAX_STEPS = 4
EVIDENCE_CHARS = 400  # as RwR's evidence excerpts (rwr(max_chars=400))
LABELS = ("supports", "contradicts", "unrelated")
RESTORED = "xquad-vi"  # the source of the rewriter's accent-restoration records
REWRITE_FORMS = ("keywords", "questions")  # lesson 03's keyword query for BM25 and its JSON list of search questions
SYSTEMS = {
    "decomposer": f"Split the question into at most {MAX_STEPS} sub-questions. Refer to earlier answers as #1, #2.",
    "answerer": "Answer the question with yes or no, using the facts.",
    "judge": "Does the evidence support the step? Reply supports, contradicts or unrelated.",
    "reader": ("Answer the question with a short span copied from the passages, or yes, or no, or "
               f"'{NOT_IN_PASSAGES}'."),
    "relevance": RELEVANCE_SYSTEM,
    "rewriter": ("Rewrite the search query in its own language, accents restored. After 'keywords:' reply with a "
                 "keyword query; after 'questions:' reply with JSON {\"questions\": [...]}."),
}
STEP_REFERENCE = re.compile(r"#\s*(\d+)")  # how a decomposer step refers to an earlier answer: #1, #2


def job_messages(job: str, content: str) -> list[dict]:
    """The job's chat prompt around one user message: its short system line, then the content."""
    return [{"role": "system", "content": SYSTEMS[job]}, {"role": "user", "content": content}]


def decomposer_messages(question: str) -> list[dict]:
    """The decomposer's prompt: the question as it comes."""
    return job_messages("decomposer", question)


def answerer_messages(question: str, facts: Sequence[str]) -> list[dict]:
    """The answerer's prompt, in RwR's final-answer layout (ragkit.reason.chain_of_thought):
    'Question: …\\nFacts:\\n1. …'."""
    return job_messages("answerer", f"Question: {question}\nFacts:\n{numbered(facts)}")


def judge_messages(statement: str, evidence: Sequence[str]) -> list[dict]:
    """The judge's prompt: 'Evidence:\\n[1] …\\nStep: …'."""
    lines = "\n".join(f"[{i}] {shorten(text, EVIDENCE_CHARS)}" for i, text in enumerate(evidence, start=1))
    return job_messages("judge", f"Evidence:\n{lines}\nStep: {statement}")


def reader_messages(question: str, passages: Sequence[Sequence[str]]) -> list[dict]:
    """The reader's prompt: 'Passages:\n[1] title: text\n…\n\nQuestion: …' ((title, text) passages, each cut)."""
    lines = "\n".join(f"[{i}] {shorten(passage_body(title, text), PASSAGE_CHARS)}"
                      for i, (title, text) in enumerate(passages, start=1))
    return job_messages("reader", f"Passages:\n{lines}\n\nQuestion: {' '.join(question.split())}")


def rewriter_messages(form: str, query: str) -> list[dict]:
    """The rewriter's prompt: 'keywords: …' (a keyword query for BM25) or 'questions: …' (search questions)."""
    return job_messages("rewriter", f"{checked_form(form)}: {' '.join(query.split())}")


def checked_form(form: str) -> str:
    """form, if it is one of the rewriter's forms; a ValueError naming them otherwise."""
    if form not in REWRITE_FORMS:
        raise ValueError(f"form must be one of {', '.join(REWRITE_FORMS)}, got {form!r}")
    return form


def parse_label(text: str) -> str:
    """'supports', 'contradicts' or 'unrelated' from a judge reply: its first label word; '' if none."""
    words = normalize_answer(text or "").split()
    return next((word for word in words if word in LABELS), "")


def parse_decomposition(text: str) -> list[str]:
    """The sub-questions of a decomposer reply (numbered lists, JSON, bare lines: ragkit.models.replies.parse_steps)."""
    return parse_steps(text, max_steps=MAX_STEPS)[0]


def parse_yes_no(text: str) -> str:
    """'yes' or 'no' from an answerer reply ('Yes.', 'no, because …'); '' if it says neither first."""
    key = answer_key(text)
    return key if key in ("yes", "no") else ""


def parse_reader(text: str) -> str:
    """A reader reply's first line, without surrounding spaces, quotes or a final period."""
    line = next((ln for ln in (text or "").splitlines() if ln.strip()), "")
    return line.strip().strip("\"'“”`").rstrip(".").strip()


PARSERS = {"decomposer": parse_decomposition, "answerer": parse_yes_no, "judge": parse_label, "reader": parse_reader,
           "relevance": parse_yes_no}
