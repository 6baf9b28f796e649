"""What every committed notebook must hold for nbval to test something (README: How the notebooks are tested)."""

import json
import re
from pathlib import Path

import pytest

from tests.nbval_compare import CHAT, comparison_kind

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "lessons").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
NOT_COMPARED = "NBVAL_IGNORE_OUTPUT"


def code_cells(path: Path) -> list[str]:
    """The sources of a notebook's code cells, in order."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def left_to_invariants(source: str) -> bool:
    """True for a cell whose output a run on another machine does not compare."""
    return NOT_COMPARED in source or comparison_kind(source) == CHAT


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_cell_names_at_most_one_comparison(path):
    for source in code_cells(path):
        comparison_kind(source)  # raises on conflicting markers
        assert not (NOT_COMPARED in source and comparison_kind(source) != "exact"), source[:80]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_output_left_uncompared_is_followed_by_a_check(path):
    sources = code_cells(path)
    for number, source in enumerate(sources[1:-1], start=1):  # the first cell prints versions
        if left_to_invariants(source):
            assert re.search(r"^\s*assert\b", sources[number + 1], flags=re.M), (
                f"code cell {number} ({source[:80]!r}) is compared only on the recording machine or not at all, "
                "and the cell after it asserts nothing")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_code_cell_was_run_and_kept_its_outputs(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = [cell for cell in cells if cell["cell_type"] == "code" and "".join(cell["source"]).strip()]
    assert all(isinstance(cell.get("execution_count"), int) for cell in code)
    counts = [cell["execution_count"] for cell in code]
    assert counts == list(range(1, len(code) + 1)), "re-execute the notebook from the top (make execute)"
    assert any(cell.get("outputs") for cell in code)


@pytest.mark.parametrize("lesson", sorted((ROOT / "lessons").glob("*.ipynb")), ids=lambda p: p.name)
def test_each_solution_answers_its_lessons_exercises(lesson):
    headings = lambda path: re.findall(r"^### Exercise [\d.]+", "\n".join(
        "".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
        if c["cell_type"] == "markdown"), flags=re.M)
    assert headings(lesson) and headings(lesson) == headings(ROOT / "solutions" / lesson.name)
