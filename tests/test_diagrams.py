"""Every lesson opens with the diagram of its pipeline (tests/diagrams.py draws them; `make docs` runs it)."""

import json
from pathlib import Path

import pytest

from tests import diagrams

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "lessons").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))


def test_every_lesson_has_a_diagram_and_no_diagram_lacks_a_lesson():
    assert sorted(diagrams.DIAGRAMS) == sorted({path.name[:2] for path in NOTEBOOKS})


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_the_first_cell_shows_the_lessons_diagram(notebook):
    first = json.loads(notebook.read_text(encoding="utf-8"))["cells"][0]
    source = "".join(first["source"])
    link = f"figures/{notebook.name[:2]}.png)"
    assert first["cell_type"] == "markdown" and link in source.split("\n\n")[1]
    target = source.split("](", 1)[1].split(")", 1)[0]
    assert (notebook.parent / target).resolve() == diagrams.FIGURES / f"{notebook.name[:2]}.png"


@pytest.mark.parametrize("lesson", sorted(diagrams.DIAGRAMS))
def test_the_committed_diagram_is_what_the_script_draws(lesson, tmp_path):
    drawn = diagrams.draw(lesson, tmp_path)
    assert drawn.read_bytes() == (diagrams.FIGURES / drawn.name).read_bytes(), "run `make docs`"
