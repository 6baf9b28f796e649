"""What every committed notebook must hold for nbval to test something (docs/testing.md):
- no cell is skipped (NBVAL_SKIP), every cell names at most one valid comparison (tests/nbval_compare.py), in its
  metadata or tags, never in the source the learner reads;
- every lesson exercise ends with a `check_exercise("N.M", globals())` cell, in the lesson and in its solution, and
  the committed outputs show the lesson's stub not done and the solution passed;
- every cell whose output a run may leave uncompared (NBVAL_CHAT_OUTPUT, NBVAL_IGNORE_OUTPUT), the first cell
  that prints versions aside, ends with an `assert` statement on a name it defined, or is followed by a cell with
  an `assert` statement that uses at least one name the uncompared cell defined, or by a `check_exercise` cell
  whose exercise reads one of them (assigned or assigned into as in `results[name] = ...`, a for-loop target,
  imported, def or class): what must hold of its results whatever the model replied. The last cell of a notebook
  has no successor, so it must check itself. Names and `assert` statements are found with `ast`, outside the
  bodies of functions, classes and comprehensions.
"""

import ast
import json
import re
from pathlib import Path

import pytest

from ragkit.exercises.checking import _EXERCISES, exercise, find_exercise
from tests.mutants import make_print
from tests.nbval_compare import cell_tolerances, comparison_kind, marked_source, source_markers

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "lessons").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
NOT_COMPARED = "NBVAL_IGNORE_OUTPUT"
_CHAT_MARKER = re.compile(r"^\s*#\s*NBVAL_CHAT_OUTPUT\b", re.MULTILINE)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
           ast.GeneratorExp)


def code_cells(path: Path) -> list[str]:
    """The sources of a notebook's code cells, in order, each after its comparison marker (tests/nbval_compare.py)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [marked_source(cell) for cell in cells if cell["cell_type"] == "code"]


def left_to_invariants(source: str) -> bool:
    """True for a cell whose output a run on another machine does not compare."""
    return NOT_COMPARED in source or _CHAT_MARKER.search(source) is not None


def _module_level(tree: ast.AST):
    """The nodes of a module outside the bodies of functions, classes, lambdas and comprehensions."""
    for child in ast.iter_child_nodes(tree):
        yield child
        if not isinstance(child, _SCOPES):
            yield from _module_level(child)


def defined_names(source: str) -> set[str]:
    """The names a cell binds or assigns into at top level: assignments, loop targets, imports, defs, classes."""
    names = set()
    for node in _module_level(ast.parse(source)):
        if isinstance(node, (ast.Name, ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            while isinstance(node, (ast.Subscript, ast.Attribute)):
                node = node.value  # results["rung"] = ... assigns into results
            if isinstance(node, ast.Name):
                names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def used_names(source: str) -> set[str]:
    """The names a cell reads."""
    return {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)}


def asserts(source: str) -> bool:
    """True if the cell runs an `assert` statement (one outside a function or class body)."""
    return any(isinstance(node, ast.Assert) for node in _module_level(ast.parse(source)))


def exercise_checks(source: str) -> list[str]:
    """The numbers of the exercises a cell checks with `check_exercise("N.M", ...)`."""
    return [node.args[0].value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "check_exercise"
            and node.args and isinstance(node.args[0], ast.Constant)]


def checked_names(source: str) -> set[str]:
    """The names a cell's asserts and exercise checks may read: every name it reads, and each checked exercise's."""
    return used_names(source).union(*(find_exercise(number).names for number in exercise_checks(source)))


def checks_itself(source: str) -> bool:
    """True for a cell whose last statement is an `assert` on a name the cell defined."""
    body = ast.parse(source).body
    return bool(body) and isinstance(body[-1], ast.Assert) and bool(
        defined_names(source) & {node.id for node in ast.walk(body[-1]) if isinstance(node, ast.Name)})


def check_problem(source: str, successor: str | None) -> str:
    """Why neither an uncompared cell's own last statement nor the cell after it checks it ("" if one does)."""
    if checks_itself(source):
        return ""
    if successor is None:
        return "it is the notebook's last cell: no cell after it asserts what holds of its results"
    if not asserts(successor) and not exercise_checks(successor):
        return "the cell after it has no assert statement and checks no exercise"
    if not defined_names(source) & checked_names(successor):
        return f"the cell after it asserts on none of the names it defines ({', '.join(sorted(defined_names(source)))})"
    return ""


def unchecked(sources: list[str]) -> list[str]:
    """The uncompared code cells (numbered from 1) that no following cell checks, and why."""
    problems = []
    for index, source in enumerate(sources[1:], start=1):  # the first cell prints versions
        if left_to_invariants(source):
            why = check_problem(source, sources[index + 1] if index + 1 < len(sources) else None)
            if why:
                problems.append(f"code cell {index + 1} ({source.splitlines()[0][:70]!r}): {why}")
    return problems


def skipped(sources: list[str]) -> list[int]:
    """The code cells (numbered from 1) that mention NBVAL_SKIP."""
    return [number for number, source in enumerate(sources, start=1) if "NBVAL_SKIP" in source]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_cell_is_skipped(path):
    assert not skipped(code_cells(path)), "NBVAL_SKIP in these code cells: run them, and mark what may differ instead"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_comparison_markers_stay_out_of_the_learners_view(path):
    cells = [cell for cell in json.loads(path.read_text(encoding="utf-8"))["cells"] if cell["cell_type"] == "code"]
    problems = [f"code cell {number}: {marker!r}" for number, cell in enumerate(cells, start=1)
                for marker in source_markers(cell)]
    assert not problems, ("comparison markers in the source, where the learner reads them: move each to the cell's "
                          "metadata (tests/nbval_compare.py, marked_source)\n" + "\n".join(problems))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_cell_names_at_most_one_comparison(path):
    problems = []
    for number, source in enumerate(code_cells(path), start=1):
        try:
            cell_tolerances(source)
        except ValueError as error:
            problems.append(f"code cell {number}: {error}")
            continue
        if NOT_COMPARED in source and comparison_kind(source) != "exact":
            problems.append(f"code cell {number}: {NOT_COMPARED} beside a comparison marker")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_output_left_uncompared_is_followed_by_a_check(path):
    problems = unchecked(code_cells(path))
    assert not problems, ("cells compared only on the recording machine or not at all, without a check:\n"
                          + "\n".join(problems))


# the rules on hand-made cells

VERSIONS = "# NBVAL_IGNORE_OUTPUT\nprint(versions)"
CHAT_CELL = "# NBVAL_CHAT_OUTPUT\nreplies = [chat(q) for q in questions]\nprint(replies)"


def test_a_skip_anywhere_in_a_cell_is_found():
    assert skipped(["print(1)", "x = 1\n# NBVAL_SKIP\n", "print(2)"]) == [2]


def test_an_uncompared_last_cell_has_no_check():
    assert unchecked([VERSIONS, "questions = load()", CHAT_CELL]) == [
        "code cell 3 ('# NBVAL_CHAT_OUTPUT'): it is the notebook's last cell: no cell after it asserts what holds "
        "of its results"]


@pytest.mark.parametrize("successor", [
    'note = """\nassert replies\n"""',  # an assert in a string is no statement
    "print(replies)  # assert replies",
    "assert 1 + 1 == 2",  # on nothing the chat cell made
    "assert len(questions) == 8",  # on a name defined elsewhere
    "def check():\n    assert replies\n",  # never runs
])
def test_the_check_is_an_assert_statement_on_what_the_cell_made(successor):
    assert unchecked([VERSIONS, "questions = load()", CHAT_CELL, successor]) != []


@pytest.mark.parametrize("cell, successor", [
    (CHAT_CELL, "assert all(isinstance(reply, str) for reply in replies)"),
    ("# NBVAL_CHAT_OUTPUT\nfor reply in chat(q):\n    print(reply)", "assert reply.endswith('.')"),
    ("# NBVAL_IGNORE_OUTPUT\nresults['rewrite'] = score(rewrite)", "for r in results.values():\n    assert r <= 1"),
    ("# NBVAL_CHAT_OUTPUT\nfrom ragkit.search import rewrite_query as rq\nprint(rq(q))", "assert rq(q).queries"),
    ("# NBVAL_CHAT_OUTPUT\ndef answer(q):\n    return chat(q)", "assert answer('hi')"),
])
def test_a_check_on_a_name_the_cell_defined_passes(cell, successor):
    assert unchecked([VERSIONS, "questions = load()", cell, successor]) == []


def test_a_cell_that_ends_by_asserting_on_what_it_made_checks_itself():
    assert unchecked([VERSIONS, "questions = load()", CHAT_CELL + "\nassert all(replies)"]) == []


@pytest.mark.parametrize("ending", ["assert all(replies)\nprint('done')", "assert len(questions) == 8"])
def test_an_assert_that_is_not_last_or_not_on_the_cells_names_does_not(ending):
    assert unchecked([VERSIONS, "questions = load()", f"{CHAT_CELL}\n{ending}"]) != []


def test_an_exercise_check_on_a_name_the_cell_defined_passes():
    exercise("99.3", names=("selective", "calls"), expects="a policy's questions and its calls")(lambda *values: None)
    try:
        solved = "# NBVAL_CHAT_OUTPUT\nselective = policy(questions)\ncalls = count(selective)"
        assert unchecked([VERSIONS, solved, 'check_exercise("99.3", globals())']) == []
        assert unchecked([VERSIONS, "# NBVAL_CHAT_OUTPUT\nother = 1", 'check_exercise("99.3", globals())']) != []
    finally:
        _EXERCISES.pop("99.3")


def test_names_local_to_a_function_or_comprehension_are_not_defined_by_the_cell():
    assert defined_names("def f(x):\n    y = x\n    return y\nz = [w for w in range(3)]") == {"f", "z"}


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
    headings = exercise_headings(lesson)
    assert headings and headings == exercise_headings(ROOT / "solutions" / lesson.name)


def exercise_headings(path) -> list[str]:
    """The '### Exercise N.M' headings of a notebook's markdown cells."""
    markdown = "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                         if c["cell_type"] == "markdown")
    return re.findall(r"^### Exercise [\d.]+", markdown, flags=re.M)


def exercise_sections(path: Path) -> dict[str, list[dict]]:
    """Each exercise's number and the code cells under its heading, up to the next heading or markdown '##'."""
    sections, current = {}, None
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            heading = re.search(r"^### Exercise ([\d.]+)", source, flags=re.M)
            current = heading.group(1) if heading else (None if re.search(r"^##? ", source, re.M) else current)
            if heading:
                sections[current] = []
        elif current:
            sections[current].append(cell)
    return sections


def printed(cell: dict) -> str:
    """The text a code cell printed."""
    return "".join("".join(output.get("text", "")) for output in cell.get("outputs", []))


@pytest.mark.parametrize("lesson", sorted((ROOT / "lessons").glob("*.ipynb")), ids=lambda p: p.name)
def test_every_exercise_ends_with_its_check_which_its_solution_passes(lesson):
    for path, outcome in ((lesson, "not done yet"), (ROOT / "solutions" / lesson.name, "passed")):
        for number, cells in exercise_sections(path).items():
            where = f"{path.parent.name}/{path.name}, exercise {number}"
            assert cells, f"{where}: no code cell"
            last = "".join(cells[-1]["source"])
            assert exercise_checks(last) == [number], f"{where}: the last code cell is not its check_exercise"
            assert f"Exercise {number}: {outcome}" in printed(cells[-1]), f"{where}: the output is not '{outcome}'"


def chat_notebooks(paths) -> list[str]:
    """The notebooks (as paths from the project root) with at least one chat cell."""
    return [path.relative_to(ROOT).as_posix() for path in paths
            if any(_CHAT_MARKER.search(source) for source in code_cells(path))]


def test_every_notebook_with_a_chat_cell_meets_other_replies_in_the_portable_run():
    reseeded = make_print("print-reseeded")
    chats = chat_notebooks(NOTEBOOKS)
    assert len(chats) >= 10, chats  # lessons and solutions 00 and 03-09 have one: the count cannot shrink unseen
    missing = sorted(set(chats) - set(reseeded))
    assert not missing, f"add these to RESEEDED in the Makefile: {missing}"
    # each solution right after its lesson, so its repeated cells are answered from the model store
    solutions = [name for name in reseeded if name.startswith("solutions/")]
    assert all(reseeded.index(name) == reseeded.index(name.replace("solutions/", "lessons/")) + 1 for name in solutions)
