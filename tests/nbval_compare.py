"""How a notebook cell's output is compared with the committed one: exactly, or with a tolerance for
the numbers a neural model computes.

A cell chooses with one marker, kept in its metadata where the learner does not see it: `"ragkit": {"compare":
"NBVAL_CHAT_OUTPUT ±0.14 (three questions of 22 …)"}`, or nbval's own tag `nbval-ignore-output` (marked_source
writes them back as the comment lines the rules below read; a marker in the source is an error):
- no marker: exact (after the sanitize rules of tests/nbval_sanitize.cfg);
- `# NBVAL_MODEL_NUMBERS`: every decimal number within MODEL_TOLERANCE, everything else exact;
- `# NBVAL_MODEL_COUNTS`: the same, and whole numbers (counts and ranks that follow model scores)
  within COUNT_TOLERANCE (2, or 5% of larger ones);
- `# NBVAL_CHAT_OUTPUT`: what the chat model wrote, or numbers computed from it. Compared only when the chat
  model replies as it did on the recording machine (tests/chat_fingerprint.py): then as NBVAL_MODEL_NUMBERS
  (whole numbers exact), and as NBVAL_MODEL_COUNTS in the perturbed run of `make test-portable`, whose
  embeddings and reranker scores were moved; otherwise not at all (the cell after it asserts what must
  hold whatever the replies are). comparison_in_run decides.
A marker may widen the tolerance of its cell's decimals in [-1, 1] (at most MAX_DECIMALS) and, for COUNTS
and CHAT, of its whole numbers (at most MAX_COUNTS), followed by its reason in a few words:
`# NBVAL_MODEL_NUMBERS ±0.07 (one question of 15)`, `# NBVAL_MODEL_COUNTS ±0.04 ±3 (…)`. A cell has one
marker at most; cell_tolerances raises ValueError on anything else.
Whatever the cell's tolerances:
- the k of `recall@5`, a denominator (`of 14`, `out of 8`, `/56`) and every number of a comma-separated run
  of whole numbers (`ranks 1,2,3`, `[1, 2, 2]`, not the keys and values of a dict) are compared exactly;
- the verdict after a row of 95% intervals (`[-0.226, +0.001]  mrr@5`: which intervals exclude 0) is
  compared when no end of the row's intervals lies within the cell's decimal tolerance of 0 (then no
  allowed move can change it), and may differ otherwise.
The root conftest.py applies these rules to nbval; this module is plain functions, tested in
tests/test_nbval_compare.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
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
        """True if actual is close enough to expected; the committed value alone picks the absolute or relative rule,
        so a number near 1 cannot switch rules by moving."""
        gap = abs(expected - actual)
        if abs(expected) <= 1:
            return gap <= max(self.absolute, self.minimum) + 1e-12
        return gap <= max(self.relative * max(abs(expected), abs(actual)), self.minimum) + 1e-12


# 0.02 in [-1, 1]: a metric over the course's 56 gold questions moves by 1/56 = 0.018 when one answer crosses a
# cut-off between near-tied documents (seen with the cross-encoder's scores moved by a relative 1e-3)
MODEL_TOLERANCE = Tolerance(absolute=0.02, relative=0.02)
# a count that follows model scores may move by two: two near-ties can swap (seen with the cross-encoder's scores)
COUNT_TOLERANCE = Tolerance(absolute=0.0, relative=0.05, minimum=2)
# the widest a marker may ask for: beyond, a comparison no longer tells a changed result from noise
MAX_DECIMALS, MAX_COUNTS = 0.2, 5
REASON_WORDS = 3  # a widened tolerance states why in at least this many words

_MARKER = re.compile(r"^\s*#\s*(?P<marker>NBVAL_MODEL_NUMBERS|NBVAL_MODEL_COUNTS|NBVAL_CHAT_OUTPUT)\b(?P<rest>.*)$")
_WIDENED = re.compile(r"\s*(?:±\s*(?P<decimals>\d*\.\d+)\s*)?(?:±\s*(?P<counts>\d+)\s*)?"
                      r"(?:\((?P<reason>[^()]*(?:\([^()]*\)[^()]*)*)\))?\s*")
_EXAMPLE = "write it as `# NBVAL_MODEL_COUNTS ±0.04 ±3 (two questions of 56 cross a cut-off)`"


COMPARE_KEY, IGNORE_TAG = "ragkit", "nbval-ignore-output"  # where a cell's comparison is kept: metadata, a tag
_SOURCE_MARKER = re.compile(r"^\s*#\s*NBVAL_[A-Z_]+", re.MULTILINE)


def marked_source(cell: Mapping) -> str:
    """A notebook cell's source after its comparison (from metadata and tags) as comment lines, as the rules read it."""
    metadata = cell.get("metadata", {})
    source = cell.get("source", "")
    lines = ["# NBVAL_IGNORE_OUTPUT"] if IGNORE_TAG in metadata.get("tags", ()) else []
    if metadata.get(COMPARE_KEY, {}).get("compare"):
        lines.append("# " + metadata[COMPARE_KEY]["compare"])
    return "\n".join([*lines, "".join(source) if isinstance(source, list) else source])


def source_markers(cell: Mapping) -> list[str]:
    """The NBVAL comment lines in a cell's own source: each belongs in its metadata (marked_source reads it there)."""
    source = cell.get("source", "")
    return _SOURCE_MARKER.findall("".join(source) if isinstance(source, list) else source)


def _marker_lines(source: str) -> list[re.Match]:
    return [match for match in map(_MARKER.match, source.splitlines()) if match]


def cell_tolerances(source: str) -> tuple[str, Tolerance, Tolerance]:
    """The comparison a cell's marker asks for (EXACT without one), and its tolerances for decimals and whole
    numbers; ValueError for two markers or a widened tolerance without reason or beyond its bound."""
    found = _marker_lines(source)
    if len(found) > 1:
        raise ValueError("a cell has more than one comparison marker (" + " / ".join(m.group(0).strip() for m in found)
                         + "): keep the one that states its tolerance and why")
    if not found:
        return EXACT, MODEL_TOLERANCE, COUNT_TOLERANCE
    decimals, counts = _widening(found[0])
    return (MARKERS[found[0]["marker"]],
            Tolerance(decimals, MODEL_TOLERANCE.relative) if decimals is not None else MODEL_TOLERANCE,
            Tolerance(0.0, COUNT_TOLERANCE.relative, minimum=counts) if counts is not None else COUNT_TOLERANCE)


def _widening(marker: re.Match) -> tuple[float | None, int | None]:
    """The decimal and count tolerances a marker line names (None: the default), checked against the rules."""
    line, widened = marker.group(0).strip(), _WIDENED.fullmatch(marker["rest"])
    if not widened:
        raise ValueError(f"cannot read the marker {line!r}: {_EXAMPLE}")
    decimals = float(widened["decimals"]) if widened["decimals"] else None
    counts = int(widened["counts"]) if widened["counts"] else None
    if decimals is None and counts is None:
        return None, None
    if len(re.findall(r"[^\W\d_]+", widened["reason"] or "")) < REASON_WORDS:
        raise ValueError(f"{line!r} widens its tolerance without a reason: add why in a few words, {_EXAMPLE}")
    if decimals is not None and not MODEL_TOLERANCE.absolute <= decimals <= MAX_DECIMALS:
        raise ValueError(f"{line!r}: a decimal tolerance lies between the default {MODEL_TOLERANCE.absolute} and "
                         f"{MAX_DECIMALS}; print a steadier number or mark the cell NBVAL_IGNORE_OUTPUT and assert "
                         "what holds in the next cell")
    if counts is not None and not COUNT_TOLERANCE.minimum <= counts <= MAX_COUNTS:
        raise ValueError(f"{line!r}: a count tolerance lies between the default {COUNT_TOLERANCE.minimum:g} and "
                         f"{MAX_COUNTS}; print a steadier count or mark the cell NBVAL_IGNORE_OUTPUT and assert "
                         "what holds in the next cell")
    return decimals, counts


def cell_comparison(source: str) -> tuple[str, Tolerance]:
    """The comparison a cell asks for with its marker comment (EXACT without one), and its decimals' tolerance."""
    kind, decimals, _ = cell_tolerances(source)
    return kind, decimals


def comparison_kind(source: str) -> str:
    """The comparison a cell asks for with its marker comment (EXACT without one)."""
    return cell_tolerances(source)[0]


def perturbed_run(environ: Mapping[str, str]) -> bool:
    """True in the run whose embeddings or reranker scores tests/portable/sitecustomize.py moves."""
    return any(float(environ.get(name) or 0) for name in ("HARNESS_EMBEDDING_NOISE", "HARNESS_SCORE_NOISE"))


def comparison_in_run(kind: str, environ: Mapping[str, str], replies_as_recorded: Callable[[], bool]) -> str | None:
    """How a cell of this kind is compared in this run; None: not at all (chat output replied otherwise here)."""
    if kind != CHAT:
        return kind
    if not replies_as_recorded():
        return None
    return COUNTS if perturbed_run(environ) else CHAT


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


_EXACT_AFTER = re.compile(r"(?:@|/|\bof[ \t]+)$")  # recall@5, 3/56, 12 of 14, out of 8
_RUN_SEPARATOR = re.compile(r", ?")


def exactly_compared(pieces: list[str], numbers: list[str]) -> set[int]:
    """Indexes of the numbers compared exactly in any cell: @k, denominators, runs of whole numbers."""
    exact = {i for i in range(len(numbers)) if _EXACT_AFTER.search(pieces[i])}
    for i in range(1, len(numbers)):
        if (_RUN_SEPARATOR.fullmatch(pieces[i]) and _is_whole(numbers[i - 1]) and _is_whole(numbers[i])
                and not pieces[i - 1].rstrip().endswith(":") and not pieces[i + 1].startswith(":")):
            exact |= {i - 1, i}  # a dict's "{2: 38, 3: 9}" holds no run
    return exact


_INTERVAL = re.compile(r"\[([-+−]?\d+\.\d+), ([-+−]?\d+\.\d+)\]")
_VERDICT = re.compile(r"[ \t]{2,}(?P<verdict>[A-Za-z_][\w@]*(?:(?:, | and )[A-Za-z_][\w@]*)*)(?=[ \t]{2}|[ \t]*$)")


def _verdict_span(line: str) -> tuple[int, int] | None:
    """Where the verdict after a line's last 95% interval is (`[-0.226, +0.001]  mrr@5`), if it has one."""
    intervals = list(_INTERVAL.finditer(line))
    verdict = _VERDICT.match(line, intervals[-1].end()) if intervals else None
    return verdict.span("verdict") if verdict else None


def verdict_may_differ(line: str, tolerance: Tolerance) -> bool:
    """True if an end of the line's intervals lies within the tolerance of 0: a move may change the verdict."""
    ends = [end for interval in _INTERVAL.finditer(line) for end in interval.groups()]
    return any(tolerance.accepts(_value(end), 0.0) for end in ends)


def _open_verdicts_masked(expected: str, actual: str, tolerance: Tolerance) -> tuple[str, str]:
    """Both texts with a token for each verdict that may differ (see verdict_may_differ), line by line."""
    old_lines, new_lines = expected.split("\n"), actual.split("\n")
    if len(old_lines) != len(new_lines):
        return expected, actual
    for number, (old, new) in enumerate(zip(old_lines, new_lines)):
        old_span, new_span = _verdict_span(old), _verdict_span(new)
        if old_span and new_span and verdict_may_differ(old, tolerance):
            old_lines[number] = old[:old_span[0]] + "<VERDICT>" + old[old_span[1]:]
            new_lines[number] = new[:new_span[0]] + "<VERDICT>" + new[new_span[1]:]
    return "\n".join(old_lines), "\n".join(new_lines)


def texts_match(expected: str, actual: str, kind: str, tolerance: Tolerance = MODEL_TOLERANCE,
                counts: Tolerance = COUNT_TOLERANCE) -> tuple[bool, str]:
    """Whether actual matches expected under the comparison kind (see the module's rules), and why not."""
    if kind == EXACT or expected == actual:
        return expected == actual, "" if expected == actual else "the text differs"
    masked_expected, masked_actual = _open_verdicts_masked(expected, actual, tolerance)
    words_expected, numbers_expected = split_numbers(masked_expected)
    words_actual, numbers_actual = split_numbers(masked_actual)
    if _padding_free(words_expected) != _padding_free(words_actual) or len(numbers_expected) != len(numbers_actual):
        return False, "the text around the numbers differs (or a verdict no allowed move can change)"
    exact = exactly_compared(words_expected, numbers_expected)
    for position, (old, new) in enumerate(zip(numbers_expected, numbers_actual)):
        why = "" if old == new else _why_not(old, new, kind, tolerance, counts, position in exact)
        if why:
            return False, f"number {position + 1}: {old} became {new}{why}"
    return True, ""


def _why_not(old: str, new: str, kind: str, tolerance: Tolerance, counts: Tolerance, exact: bool) -> str:
    """Why a changed number fails ("" if it may change that much)."""
    if _is_whole(old) != _is_whole(new):
        return " (a whole number and a decimal)"
    if exact:
        return " (an @k, a denominator and a run of whole numbers such as ranks 1,2,3 are compared exactly)"
    if _is_whole(old) and kind == NUMBERS:
        return " (mark the cell NBVAL_MODEL_COUNTS if the count follows model scores)"
    if _is_whole(old) and kind == CHAT and counts is COUNT_TOLERANCE:  # unless the marker widened them, with why
        return " (whole numbers in chat output are exact where the chat model replies as recorded)"
    if not (counts if _is_whole(old) else tolerance).accepts(_value(old), _value(new)):
        return ", beyond the tolerance for model numbers"
    return ""
