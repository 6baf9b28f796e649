"""Every number the prose of a notebook states comes from somewhere: the notebook's own outputs or code, or a
source named beside it. A mechanical guard for the course's rule that every claim is a number measured on course data.

What counts as a number written in a markdown cell
- decimals (0.467), whole numbers, thousands with commas (1,127 is 1127), exponents (1e-3), percentages
  (77% or 77 %), and signs: +0.054, -0.036, −0.036 (Unicode minus), ±0.07; a range 6-10 gives 6 and 10.
- Not numbers: parts of identifiers and names (q41, kb-en-031, SmolLM2-135M, e5, x86_64, nDCG@10, Q4_1, 1.5B,
  a 5th), version strings with two dots or more (3.11.7), anything in inline code `...` or fenced code,
  HTML comments and tags, link URLs (the link text is prose and is checked), the numbering of headings
  (`## 3. The ladder`, `### Exercise 4.2 —`, `# 01 · Setup`) and of ordered-list items (`2. `), and
  references to lessons, exercises, sections, steps, parts and chapters ("lesson 04", "lessons 01–05",
  "exercises 8.2 and 8.3", "section 5", "§2", "§§2–3"; after "and", "or" or a comma only a number written
  like the reference's own, so the 56 of "lesson 02 and 56 questions" is checked).
- Exempt: whole numbers 0 to 10 written without a sign or a percent sign. They are structural far more often
  than measured (top 5, 2 cores, 3 steps, "one of 4"): requiring a source for each would bury the claims
  that matter under markers. A 0-10 count that is a result should still be one the outputs show; this guard
  does not check it. Decimals (1.00, 0.5), percentages (5%) and signed deltas (+2) are never exempt.
- Years: not exempt in general (a year in prose is a claim like any other), except in a citation, where
  the year is the reference itself: "(He, Zhang and Roth, 2022)", "(Wang et al., 2024)", "Wang et al. (2024)"
  (a 19xx/20xx year after "et al." or after a comma inside parentheses that name someone, and before ")", ","
  or ";"). No notebook writes other
  dates; an ISO date would split into a year, which needs a source, and month and day, which are exempt.
- Numbers inside LaTeX ($k_1=1.5$) and markdown tables are prose and are checked.

Where a number may come from (its "evidence"), in the same notebook
- the text outputs of its code cells (stdout and results; stderr is not: the notebook tests do not compare it,
  and a progress bar's 100% proves nothing), numbers read as tests/nbval_compare.py reads them (its _NUMBER);
- the source of its code cells, comments included, where settings are defined (k=20, 2_000 resamples).

Matching
- A written number x with d decimals matches y when |x - y| <= half a unit of its last digit (0.47 matches
  0.467; 0.46 does not; 56 matches 56 and 55.6). A percentage p% matches y = p/100 at two more decimals
  (77% matches 0.77 and 0.774) and matches p itself (an output that printed 77%).
- The same in every cell, model-marked or not: prose quotes the committed outputs, which are what this guard
  reads, so the tolerance a cell's output is compared with (tests/nbval_compare.py) lends nothing to its prose
  (0.87 does not match a printed 0.80 of a cell marked ±0.07, nor 28 a printed 30 of a NBVAL_MODEL_COUNTS cell).
- What this cannot see: which output a sentence means. A number passes if any output or code of its notebook
  agrees with it at its precision: 0.3 agrees with anything in [0.25, 0.35], and a chat model's free text is
  an output like another (a rewrite that invents "14 days" is evidence for a 14). The guard catches numbers
  that appear nowhere, not every misquoted one.
- A number written with a sign must match a y of that sign; one written without a sign may match -y (prose
  says "falls by 0.036" of a printed -0.036).

A number from elsewhere (a paper, a definition, the design of data/, another lesson's output) is named in an
HTML comment of the same markdown cell, which the rendered notebook does not show:
    <!-- source: 0.677 = multilingual-e5-small's published SciFact nDCG@10 (Wang et al., 2024); 7 = the
         documents per topic by design of data/ -->
Entries are separated by ";", each "numbers = where they come from" (several numbers may share one source:
"0.9, 1.2 = the values this exercise asks for"). An entry counts only with a source after "=" (three letters at
least): a bare list ("source: 0.677") covers nothing. A marker covers a number of the same value as written
(77% is covered by 77% or 0.77). Numbers inside any HTML comment are not themselves checked.

Run: `python -m tests.prose_numbers lessons/01_bag_of_words.ipynb ...` (all of lessons/ and solutions/ without
arguments) prints one violation a line, `path [cell] number: context`; tests/test_prose_numbers.py runs it.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.nbval_compare import _NUMBER

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(ROOT.glob("lessons/*.ipynb")) + sorted(ROOT.glob("solutions/*.ipynb"))
_EPSILON = 1e-9

# a number as written in prose: optional sign, digits (thousands with commas, or dotted runs, split below),
# optional exponent, optional percent sign
_WRITTEN = re.compile(r"(?P<sign>[-+−±])?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|\d+(?:\.\d+)*)"
                      r"(?P<exp>[eE][-+−]?\d+(?![\w]))?(?P<pct>\s?%)?")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SOURCE = re.compile(r"<!--\s*source\s*:(?P<body>.*?)-->", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.DOTALL | re.MULTILINE)
_INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_LINK_TARGET = re.compile(r"(?<=\])\((?:[^()\s]|\([^()]*\))*(?:\s+\"[^\"]*\")?\)")
_LINK_DEFINITION = re.compile(r"^[ \t]*\[[^\]]+\]:[ \t]*\S.*$", re.MULTILINE)
_URL = re.compile(r"<?(?:https?://|www\.)[^\s<>)\]]+>?")
_HEADING_NUMBER = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(?:(?:exercise|lesson|section|step|part|chapter)[ \t]+)?"
                             r"(?P<n>\d+(?:\.\d+)*\.?)(?=\s|$)", re.MULTILINE | re.IGNORECASE)
_LIST_NUMBER = re.compile(r"^[ \t]*(?P<n>\d+)[.)][ \t]", re.MULTILINE)
_REF_WORD = r"(?:lessons?|exercises?|sections?|steps?|parts?|chapters?|§§?)"
_REFERENCE = re.compile(rf"(?<![\w]){_REF_WORD}[ \t\n]*\d+(?:\.\d+)*"
                        rf"(?:[ \t\n]*(?:[–—-]|to|and|or|,|&)[ \t\n]*(?:{_REF_WORD}[ \t\n]*)?\d+(?:\.\d+)*)*",
                        re.IGNORECASE)
_NUMBER_LIST = re.compile(r"\s*[-+−±]?\d[\d.,]*\s?%?(?:\s*(?:,|and)\s*[-+−±]?\d[\d.,]*\s?%?)*\s*")
# a year in a citation: "(He, Zhang and Roth, 2022)", "(Wang et al., 2024, *Title*)", "Wang et al. (2024)"
_CITATION_YEAR = re.compile(r"(?:\([^()]*?[A-Z][^()]*?,|\bet al\.?,?)[ \t\n]*\(?(?P<n>(?:19|20)\d\d)[a-z]?(?=[),;])")


@dataclass(frozen=True)
class Written:
    """A number as written in prose."""

    text: str  # as written, sign and percent sign included
    value: float  # its value as written (77 for 77%)
    half_unit: float  # half a unit of its last written digit
    signed: bool  # written with + or −/- (a delta): must match a value of that sign
    percent: bool
    start: int
    end: int

    @property
    def exempt(self) -> bool:
        """A whole number 0 to 10 without a sign or percent sign: structural (top 5, 2 cores)."""
        return (not self.signed and not self.percent and self.half_unit == 0.5 and 0 <= self.value <= 10
                and re.fullmatch(r"±?\d+", self.text) is not None)

    def readings(self) -> list[tuple[float, float]]:
        """(value, half unit) for each value this number may stand for: 77% is 0.77 and 77."""
        pairs = [(self.value, self.half_unit)]
        if self.percent:
            pairs.insert(0, (self.value / 100, self.half_unit / 100))
        return pairs


@dataclass(frozen=True)
class Violation:
    """A number in prose with no evidence and no source marker, and where it stands (' [cell]', ':line')."""

    path: str
    where: str
    number: str
    context: str

    def __str__(self) -> str:
        return f"{self.path}{self.where} {self.number}: {self.context}"


def _parse(match: re.Match) -> Written | None:
    sign, num, exp, pct = match.group("sign") or "", match.group("num"), match.group("exp") or "", match.group("pct")
    if num.count(".") > 1:
        return None  # a version string (3.11.7)
    mantissa = float(num.replace(",", ""))
    fraction = num.split(".")[1] if "." in num else ""
    power = int(exp[1:].replace("−", "-")) if exp else 0
    value = mantissa * 10.0 ** power
    if sign in ("-", "−"):
        value = -value
    return Written(text=match.group(0).replace(" ", ""), value=value, half_unit=0.5 * 10.0 ** (power - len(fraction)),
                   signed=sign in ("+", "-", "−"), percent=bool(pct),
                   start=match.start(), end=match.end())


def _blank(text: str, start: int, end: int) -> str:
    """text with [start, end) replaced by spaces (newlines kept), so positions stay those of the source."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def _blank_all(text: str, pattern: re.Pattern, group: str | int = 0) -> str:
    for match in reversed(list(pattern.finditer(text))):
        text = _blank(text, match.start(group), match.end(group))
    return text


def prose(markdown: str) -> str:
    """The markdown with everything that is not prose blanked out (same length, same positions)."""
    text = markdown
    for pattern in (_COMMENT, _FENCE, _INLINE_CODE, _TAG, _LINK_DEFINITION, _LINK_TARGET, _URL):
        text = _blank_all(text, pattern)
    for pattern in (_HEADING_NUMBER, _LIST_NUMBER, _CITATION_YEAR):
        text = _blank_all(text, pattern, "n")
    for match in reversed(list(_REFERENCE.finditer(text))):
        for start, end in _referenced(match):
            text = _blank(text, start, end)
    return text


def _shape(number: str) -> tuple[int, int, bool]:
    return number.count("."), len(number.split(".")[0]), number.startswith("0")


def _referenced(match: re.Match) -> list[tuple[int, int]]:
    """The spans of the numbers a reference names: "lessons 01 and 02", "exercises 8.2, 8.3", "sections 3–5".
    After "and", "or" or a comma a number belongs to the reference only if it is written like the first one
    (or follows a reference word again): in "lesson 02 and 56 questions" the 56 is a count."""
    numbers = list(re.finditer(r"\d+(?:\.\d+)*", match.group()))
    spans, first = [numbers[0].span()], numbers[0].group()
    for previous, number in itertools.pairwise(numbers):
        between = match.group()[previous.end():number.start()]
        if re.search(_REF_WORD, between, re.IGNORECASE):
            first = number.group()  # "lessons 01 and 02, exercises 8.2": a new reference starts
        elif not (re.search(r"[–—-]|\bto\b", between) or _shape(number.group()) == _shape(first)):
            break
        spans.append(number.span())
    return [(match.start() + start, match.start() + end) for start, end in spans]


def _named(text: str, match: re.Match) -> bool:
    """Whether a number is part of a name by what follows it: 135M, 5th, 1.5B, x_1."""
    after = text[match.end()] if match.end() < len(text) else ""
    return match.group("pct") is None and bool(after) and (after.isalnum() or after in "_@")


def written_numbers(markdown: str) -> list[Written]:
    """The numbers a markdown cell states, in order (exempt ones included: see Written.exempt)."""
    text = prose(markdown)
    found = []
    for match in _WRITTEN.finditer(text):
        before = text[match.start() - 1] if match.start() else ""
        sign = match.group("sign")
        if sign and (before.isalnum() or before == "_"):
            if sign == "-" and not before.isdigit():
                continue  # an identifier: kb-en-031, en-sick-02
            match = _WRITTEN.match(text, match.start() + 1)  # a range (6-10) or an operator (n_w+0.5): no sign
        elif before.isalnum() or (before and before in "._@#&\\"):
            continue  # part of a name: q41, e5, nDCG@10, x86_64, #3
        if match and not _named(text, match):
            parsed = _parse(match)
            if parsed:
                found.append(parsed)
    return found


def source_markers(markdown: str) -> list[tuple[Written, str]]:
    """The numbers a cell's `<!-- source: x = where it comes from; ... -->` comments vouch for, with their source.
    An entry without a source after "=" vouches for nothing."""
    vouched = []
    for comment in _SOURCE.finditer(markdown):
        for entry in comment.group("body").split(";"):
            parts = entry.split("=")
            listed = 1  # "473 = 494 = the token counts": every leading part that is only numbers is listed
            while listed < len(parts) - 1 and _NUMBER_LIST.fullmatch(parts[listed]):
                listed += 1
            numbers, where = "=".join(parts[:listed]), "=".join(parts[listed:])
            if len(parts) < 2 or len(re.findall(r"[^\W\d_]", where)) < 3:
                continue
            for match in _WRITTEN.finditer(numbers):
                parsed = _parse(match)
                if parsed:
                    vouched.append((parsed, where.strip()))
    return vouched


def _output_texts(cell: dict) -> list[str]:
    texts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            if output.get("name") != "stderr":
                texts.append(_joined(output.get("text", "")))
        elif output.get("output_type") in ("execute_result", "display_data"):
            data = output.get("data", {})
            texts.extend(_joined(data[key]) for key in ("text/plain", "text/markdown") if key in data)
        elif output.get("output_type") == "error":
            texts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
    return texts


def _joined(text: str | list[str]) -> str:
    return "".join(text) if isinstance(text, list) else text


def _numbers(text: str) -> list[float]:
    return [float(n.replace(",", "").replace("−", "-")) for n in _NUMBER.findall(text)]


def evidence(notebook: dict) -> list[float]:
    """The numbers a notebook printed (text outputs, stderr aside) or set in its code."""
    found = []
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            found.extend(_numbers(re.sub(r"(?<=\d)_(?=\d)", "", _joined(cell["source"]))))
            for text in _output_texts(cell):
                found.extend(_numbers(text))
    return found


def matches(number: Written, known: float) -> bool:
    """Whether a written number agrees with a printed or coded one at its written precision (see the module)."""
    for value, half_unit in number.readings():
        targets = [known] if number.signed else [known, -known]
        if any(abs(value - target) <= half_unit + _EPSILON * max(1.0, abs(value)) for target in targets):
            return True
    return False


def _vouched_for(number: Written, vouched: list[tuple[Written, str]]) -> bool:
    readings = {round(value, 12) for value, _ in number.readings()}
    return any(round(marker.value / 100 if marker.percent else marker.value, 12) in readings
               or round(marker.value, 12) in readings for marker, _ in vouched)


def _context(markdown: str, number: Written, width: int = 45) -> str:
    left = markdown[max(0, number.start - width):number.start]
    right = markdown[number.end:number.end + width]
    return " ".join(f"…{left}[{markdown[number.start:number.end]}]{right}…".split())


def check_notebook(notebook: dict, path: str = "<notebook>") -> list[Violation]:
    """Every number of a markdown cell that neither the notebook's outputs or code nor a source marker support."""
    known = evidence(notebook)
    violations = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        markdown = _joined(cell["source"])
        vouched = source_markers(markdown)
        for number in written_numbers(markdown):
            if number.exempt or _vouched_for(number, vouched) or any(matches(number, k) for k in known):
                continue
            violations.append(Violation(path, f" [{index}]", number.text, _context(markdown, number)))
    return violations


def check_file(path: str | Path) -> list[Violation]:
    """check_notebook on a notebook file; paths are shown relative to the project root when they are inside it."""
    path = Path(path)
    try:
        shown = str(path.resolve().relative_to(ROOT))
    except ValueError:
        shown = str(path)
    return check_notebook(json.loads(path.read_text(encoding="utf-8")), shown)


def main(argv: list[str]) -> int:
    paths = argv or [str(path) for path in NOTEBOOKS]
    total = 0
    for path in paths:
        violations = check_file(path)
        total += len(violations)
        for violation in violations:
            print(violation)
    print(f"{total} number(s) without evidence or source in {len(paths)} notebook(s)", file=sys.stderr)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
