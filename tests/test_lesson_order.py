"""Lessons build up: a lesson imports nothing that a later lesson teaches (each package face's "taught in" table
says which lesson teaches each module), beyond a known list that can only shrink."""

import ast
import json
import re
from pathlib import Path

from tests.test_architecture import RAGKIT, lesson_of, module_name, taught_in

LESSONS = RAGKIT.parent / "lessons"
IMPORT = re.compile(r"from (ragkit[\w.]*) import (?:\(([^)]*)\)|([\w, ]+))")
# Lesson imports of what a later lesson teaches that are allowed: none (issue 41 moved every specialist row to
# lesson 09). An entry here would name the lesson, the name and where it is taught, as `found` prints them.
KNOWN: set[str] = set()


def definitions(root: Path = RAGKIT) -> dict[str, set[str]]:
    """Name -> the ragkit modules that define it at their top level."""
    found: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = ([node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else
                     [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)])
            for name in names:
                found.setdefault(name, set()).add(module_name(path, root))
    return found


def module_of(module: str, name: str, defined: dict[str, set[str]], root: Path = RAGKIT) -> str | None:
    """The module that `from module import name` reaches: a submodule, or the one under module defining name;
    None for a package (a face, used through its attributes)."""
    folder = root.parent / module.replace(".", "/")
    if (folder / name / "__init__.py").exists():
        return None
    if (folder / f"{name}.py").exists():
        return f"{module}.{name}"
    homes = sorted(home for home in defined.get(name, ()) if home == module or home.startswith(module + "."))
    return homes[0] if homes else module


def later_lesson_imports(notebook: Path, lessons: dict[str, str], defined: dict[str, set[str]],
                         root: Path = RAGKIT) -> set[str]:
    """'NN_name: name (module, lesson)' for every name the notebook imports from a later lesson's module."""
    number, found = notebook.name[:2], set()
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        for match in IMPORT.finditer("".join(cell["source"])):
            for name in [part.split(" as ")[0].strip() for part in (match.group(2) or match.group(3)).split(",")]:
                module = name and module_of(match.group(1), name, defined, root)
                if module and lesson_of(module, lessons) > number:
                    found.add(f"{notebook.stem}: {name} ({module}, {lesson_of(module, lessons)})")
    return found


def test_no_lesson_imports_what_a_later_lesson_teaches_beyond_the_known_list():
    lessons, defined = taught_in(), definitions()
    found = set().union(*(later_lesson_imports(path, lessons, defined) for path in sorted(LESSONS.glob("*.ipynb"))))
    assert found - KNOWN == set(), "a lesson now uses what a later lesson teaches"
    assert KNOWN - found == set(), "fixed: take it off KNOWN"


def test_a_lesson_importing_a_later_module_is_found(tmp_path):
    from tests.test_architecture import write

    root = write(tmp_path, {"ragkit/search/__init__.py": '"""\n| `bm25` | it | 01 |\n| `rerank` | it | 04 |\n"""\n',
                            "ragkit/search/bm25.py": "class BM25:\n    pass\n",
                            "ragkit/search/rerank.py": "def rerank():\n    pass\n"})
    notebook = tmp_path / "02_dense.ipynb"
    cells = [{"cell_type": "code", "source": ["from ragkit.search import (BM25,\n", "    rerank)\n"]}]
    notebook.write_text(json.dumps({"cells": cells}))
    found = later_lesson_imports(notebook, taught_in(root), definitions(root), root)
    assert found == {"02_dense: rerank (ragkit.search.rerank, 04)"}
