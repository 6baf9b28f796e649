"""Exact extraction: a generated answer turned into a span of the passages it was read from.

A reader taught to copy still changes a word now and then ("the Eiffel tower" for "Eiffel Tower"); the answer
kept is the passage's own wording: the text itself where it occurs (ignoring case), else the run of words with
the best token F1 against it, of about its length. "yes", "no", NOT_IN_PASSAGES and an answer that shares no
word with any passage stay as they are. Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from ragkit.passages import NOT_IN_PASSAGES
from ragkit.text import normalize_answer

OPTIONS = ("yes", "no", NOT_IN_PASSAGES)
_WORD = re.compile(r"\S+")
_EDGES = " \t,;:.!?\"'“”()[]"


def extract(answer: str, bodies: Sequence[str]) -> tuple[str, int | None]:
    """The answer as a span of one of the bodies, and that body's index (None if it stays as it is)."""
    answer = answer.strip()
    if not answer or answer.lower() in OPTIONS:
        return answer.lower() if answer.lower() in OPTIONS else answer, None
    for number, body in enumerate(bodies):
        at = body.lower().find(answer.lower())
        if at >= 0:
            return body[at: at + len(answer)], number
    best = closest_span(answer, bodies)
    return best if best else (answer, None)


def closest_span(answer: str, bodies: Sequence[str]) -> tuple[str, int] | None:
    """The run of words of the bodies with the best token F1 against answer (None if no word is shared)."""
    wanted = normalize_answer(answer).split()
    if not wanted:
        return None
    best, best_f1 = None, 0.0
    for number, body in enumerate(bodies):
        words = list(_WORD.finditer(body))
        keys = [normalize_answer(w.group()) for w in words]
        for start in range(len(words)):
            if not keys[start] or keys[start] not in wanted:
                continue  # a best span starts on a shared word
            for end in range(start, min(len(words), start + len(wanted) + 2)):
                f1 = _f1([k for k in keys[start: end + 1] if k], wanted)
                if f1 > best_f1:
                    best_f1 = f1
                    best = (body[words[start].start(): words[end].end()].strip(_EDGES), number)
    return best


def _f1(found: list[str], wanted: list[str]) -> float:
    common = sum((Counter(found) & Counter(wanted)).values())
    if not common:
        return 0.0
    precision, recall = common / len(found), common / len(wanted)
    return 2 * precision * recall / (precision + recall)
