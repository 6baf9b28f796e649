"""The specialists' jobs: each job's prompt (a short system line, then one user message) and how its replies
are read. Pipelines ask a specialist in its job's prompt, training records are built in it, and a specialist
trained with another prompt is refused. Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import re
from typing import Sequence

from ragkit.evaluate import answer_key, normalize_answer
from ragkit.passages import shorten
from ragkit.reader import NOT_IN_PASSAGES
from ragkit.replies import parse_steps

MAX_STEPS = 4
EVIDENCE_CHARS = 400  # as RwR's evidence excerpts (rwr(max_chars=400))
PASSAGE_CHARS = 600  # a reader's passage is cut here, in training and in use
LABELS = ("supports", "contradicts", "unrelated")
REWRITE_FORMS = ("keywords", "questions")  # lesson 03's keyword query for BM25 and its JSON list of search questions
SYSTEMS = {
    "decomposer": f"Split the question into at most {MAX_STEPS} sub-questions. Refer to earlier answers as #1, #2.",
    "answerer": "Answer the question with yes or no, using the facts.",
    "judge": "Does the evidence support the step? Reply supports, contradicts or unrelated.",
    "reader": ("Answer the question with a short span copied from the passages, or yes, or no, or "
               f"'{NOT_IN_PASSAGES}'."),
    "relevance": "Does the passage help answer the query? Reply yes or no.",
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
    """The answerer's prompt, in RwR's final-answer layout (ragkit.chain_of_thought): 'Question: …\\nFacts:\\n1. …'."""
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


def relevance_messages(query: str, title: str, text: str) -> list[dict]:
    """The relevance judge's prompt: 'Query: …\nPassage: title: text' (the passage cut as a reader's is)."""
    passage = shorten(passage_body(title, text), PASSAGE_CHARS)
    return job_messages("relevance", f"Query: {' '.join(query.split())}\nPassage: {passage}")


def passage_body(title: str, text: str) -> str:
    """A passage as a reader reads it: 'title: text' on one line, or the text alone."""
    text = " ".join(str(text).split())
    return f"{title}: {text}" if title else text


def numbered(texts: Sequence[str]) -> str:
    """Lines numbered from 1, nothing after the last: '1. …\\n2. …' (a decomposer's steps, an answerer's facts)."""
    return "\n".join(f"{i}. {text}" for i, text in enumerate(texts, start=1))


def parse_label(text: str) -> str:
    """'supports', 'contradicts' or 'unrelated' from a judge reply: its first label word; '' if none."""
    words = normalize_answer(text or "").split()
    return next((word for word in words if word in LABELS), "")


def parse_decomposition(text: str) -> list[str]:
    """The sub-questions of a decomposer reply (numbered lists, JSON, bare lines: ragkit.replies.parse_steps)."""
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
