"""How a notebook cell's output is compared with the committed one: exactly, or with a tolerance for
the numbers a neural model computes.

A cell chooses with a comment marker, as nbval's own markers work:
- no marker: exact (after the sanitize rules of tests/nbval_sanitize.cfg);
- `# NBVAL_MODEL_NUMBERS`: every decimal number within MODEL_TOLERANCE, everything else exact;
- `# NBVAL_MODEL_COUNTS`: the same, and whole numbers (counts and ranks that follow model scores)
  within COUNT_TOLERANCE (2, or 5% of larger ones);
- either may name a wider tolerance for the decimals in [-1, 1] of its cell, and COUNTS for its whole
  numbers, with its reason: `# NBVAL_MODEL_NUMBERS ±0.07 (one question of 15)`, `# NBVAL_MODEL_COUNTS ±0.04 ±3 (…)`;
- `# NBVAL_CHAT_OUTPUT`: what the chat model wrote, or numbers computed from it: compared as
  NBVAL_MODEL_COUNTS when the chat model replies as it did on the recording machine, and not compared
  otherwise (the cell after it asserts what must hold whatever the replies are).
The root conftest.py applies these rules to nbval; this module is plain functions, tested in
tests/test_nbval_compare.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EXACT, NUMBERS, COUNTS, CHAT = "exact", "model numbers", "model counts", "chat output"
MARKERS = {"NBVAL_MODEL_NUMBERS": NUMBERS, "NBVAL_MODEL_COUNTS": COUNTS, "NBVAL_CHAT_OUTPUT": CHAT}

# A number standing on its own: not part of an id such as q41, en-remote-01 or kb-en-031.
_NUMBER = re.compile(r"(?<![\w.\-+−])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:[eE][-+]?\d+)?(?![\w])")


@dataclass(frozen=True)
class Tolerance:
    """How far a recomputed number may be from the committed one."""

    absolute: float  # for numbers in [-1, 1]: scores, cosines, metrics
    relative: float  # for larger numbers: a share of the larger of the two
    minimum: float = 0.0  # never stricter than this (a count may always move by one)

    def accepts(self, expected: float, actual: float) -> bool:
        """True if actual is close enough to expected."""
        gap = abs(expected - actual)
        if max(abs(expected), abs(actual)) <= 1:
            return gap <= max(self.absolute, self.minimum) + 1e-12
        return gap <= max(self.relative * max(abs(expected), abs(actual)), self.minimum) + 1e-12


# 0.02 in [-1, 1]: a metric over the course's 56 gold questions moves by 1/56 = 0.018 when one answer crosses a
# cut-off between near-tied documents (seen with the cross-encoder's scores moved by a relative 1e-3)
MODEL_TOLERANCE = Tolerance(absolute=0.02, relative=0.02)
# a count that follows model scores may move by two: two near-ties can swap (seen with the cross-encoder's scores)
COUNT_TOLERANCE = Tolerance(absolute=0.0, relative=0.05, minimum=2)


_MARKER = re.compile(r"^\s*#\s*(NBVAL_MODEL_NUMBERS|NBVAL_MODEL_COUNTS|NBVAL_CHAT_OUTPUT)\b"
                     r"(?:\s*±\s*(\d*\.\d+))?(?:\s*±\s*(\d+)(?![.\d]))?")


def cell_tolerances(source: str) -> tuple[str, Tolerance, Tolerance]:
    """The comparison a cell asks for with its marker comment (EXACT without one), and its tolerances for
    decimals and for whole numbers."""
    found = [match.groups() for match in map(_MARKER.match, source.splitlines()) if match]
    if len({marker for marker, _, _ in found}) > 1:
        raise ValueError(f"a cell has conflicting comparison markers: {', '.join(sorted({m for m, _, _ in found}))}")
    if not found:
        return EXACT, MODEL_TOLERANCE, COUNT_TOLERANCE
    marker, decimals, counts = found[0]
    if decimals and float(decimals) < MODEL_TOLERANCE.absolute:
        raise ValueError(f"a cell's tolerance ±{decimals} is below the default {MODEL_TOLERANCE.absolute}")
    if counts and int(counts) < COUNT_TOLERANCE.minimum:
        raise ValueError(f"a cell's count tolerance ±{counts} is below the default {COUNT_TOLERANCE.minimum:g}")
    return (MARKERS[marker],
            Tolerance(float(decimals), MODEL_TOLERANCE.relative) if decimals else MODEL_TOLERANCE,
            Tolerance(0.0, COUNT_TOLERANCE.relative, minimum=int(counts)) if counts else COUNT_TOLERANCE)


def cell_comparison(source: str) -> tuple[str, Tolerance]:
    """The comparison a cell asks for with its marker comment (EXACT without one), and its decimals' tolerance."""
    kind, decimals, _ = cell_tolerances(source)
    return kind, decimals


def comparison_kind(source: str) -> str:
    """The comparison a cell asks for with its marker comment (EXACT without one)."""
    return cell_tolerances(source)[0]


def split_numbers(text: str) -> tuple[list[str], list[str]]:
    """The text between the numbers, and the numbers (as written), in order."""
    numbers = _NUMBER.findall(text)
    return _NUMBER.split(text), numbers


def _value(number: str) -> float:
    return float(number.replace(",", "").replace("−", "-"))


def _is_whole(number: str) -> bool:
    return not re.search(r"[.eE]", number)


def _padding_free(pieces: list[str]) -> list[str]:
    """Text pieces with runs of spaces collapsed: a table pads its columns to the widest number."""
    return [re.sub(r"[ \t]+", " ", piece) for piece in pieces]


def texts_match(expected: str, actual: str, kind: str, tolerance: Tolerance = MODEL_TOLERANCE,
                counts: Tolerance = COUNT_TOLERANCE) -> tuple[bool, str]:
    """Whether actual matches expected under the comparison kind (decimals and counts within their tolerances),
    and why not."""
    if kind == EXACT or expected == actual:
        return expected == actual, "" if expected == actual else "the text differs"
    words_expected, numbers_expected = split_numbers(expected)
    words_actual, numbers_actual = split_numbers(actual)
    if _padding_free(words_expected) != _padding_free(words_actual) or len(numbers_expected) != len(numbers_actual):
        return False, "the text around the numbers differs"
    for position, (old, new) in enumerate(zip(numbers_expected, numbers_actual), start=1):
        if old == new:
            continue
        if _is_whole(old) != _is_whole(new):
            return False, f"number {position}: {old} became {new} (a whole number and a decimal)"
        if _is_whole(old) and kind == NUMBERS:
            return False, f"number {position}: the count {old} became {new} (mark the cell NBVAL_MODEL_COUNTS " \
                          "if it follows model scores)"
        if not (counts if _is_whole(old) else tolerance).accepts(_value(old), _value(new)):
            return False, f"number {position}: {old} became {new}, beyond the tolerance for model numbers"
    return True, ""
