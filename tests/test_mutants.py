"""tests/mutants.py stays in step with the code: each planted bug's line stands once, and every lesson has one."""

import pytest

from tests.mutants import MUTANTS, ROOT, plant


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_each_planted_line_stands_once_and_its_tests_exist(mutant):
    assert (ROOT / mutant.file).read_text(encoding="utf-8").count(mutant.line) == 1
    assert all((ROOT / test).is_file() for test in mutant.unit)
    assert all((ROOT / "lessons" / f"{name}.ipynb").is_file() for name in mutant.notebooks)


def test_every_lesson_that_teaches_a_technique_has_a_planted_bug():
    assert {m.lesson for m in MUTANTS} >= {f"{n:02d}" for n in range(1, 10)}


def test_planting_changes_the_copy_only(tmp_path):
    mutant = MUTANTS[0]
    (tmp_path / mutant.file).parent.mkdir(parents=True)
    (tmp_path / mutant.file).write_text((ROOT / mutant.file).read_text(encoding="utf-8"), encoding="utf-8")
    plant(tmp_path, mutant)
    assert mutant.replacement in (tmp_path / mutant.file).read_text(encoding="utf-8")
    assert mutant.line in (ROOT / mutant.file).read_text(encoding="utf-8")


def test_a_partial_run_keeps_the_other_verdicts(tmp_path, monkeypatch):
    import json

    from tests import mutants

    monkeypatch.setattr(mutants, "RESULT", tmp_path / "result.json")
    mutants.write_result([{"mutant": "M2", "lesson": "04", "breaks": "b", "unit": "caught"},
                          {"mutant": "M1", "lesson": "07", "breaks": "a", "unit": "caught"}])
    mutants.write_result([{"mutant": "M1", "lesson": "07", "breaks": "a", "reseeded": "MISSED"}])
    rows = json.loads((tmp_path / "result.json").read_text())["rows"]
    assert rows == [{"mutant": "M1", "lesson": "07", "breaks": "a", "unit": "caught", "reseeded": "MISSED"},
                    {"mutant": "M2", "lesson": "04", "breaks": "b", "unit": "caught", "reseeded": "not run"}]
