"""The shape of ragkit, read from its imports: packages in layers that only import downwards, run-time code that never
imports the training code, no module importing itself back through others, and no module using what a later lesson
teaches (each package face's "taught in" table says which lesson teaches each module)."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

RAGKIT = Path(__file__).resolve().parents[1] / "ragkit"
TRAIN = "ragkit.train"
# bottom to top: a module may import its own layer and the ones below it, never one above
LAYERS = ("ragkit", "ragkit.models", "ragkit.search", "ragkit.generate", "ragkit.reason", "ragkit.evaluate",
          "ragkit.train", "ragkit.exercises")
MAX_FLOORS = 10
# Modules of lessons 00-07 whose setting may name one of lesson 09's specialists (RAGKIT_REWRITER=specialist and
# the like): the pipeline then asks for that specialist's own prompt. No lesson before 09 takes these branches
# (tests/test_lesson_order.py). The list can only shrink: a new entry fails, and so does a fixed one.
KNOWN_LATER_LESSON_IMPORTS = {
    "ragkit.search.rewrite -> ragkit.models.jobs",  # the rewriter specialist's own prompt
    "ragkit.models.resolve -> ragkit.models.rerankers",  # lesson 00 names every setting's backend, 04's reranker too
    "ragkit.reason.cot_rag -> ragkit.models.jobs",  # the decomposer specialist's prompt
    "ragkit.reason.cot_rag -> ragkit.models.roles",  # RAGKIT_DECOMPOSER
    "ragkit.reason.step_judge -> ragkit.models.jobs",  # the judge specialist's prompt and labels
    "ragkit.reason.rwr -> ragkit.models.jobs",  # the answerer specialist's prompt
    "ragkit.reason.rwr -> ragkit.models.roles",  # RAGKIT_JUDGE, RAGKIT_ANSWERER
}


def module_name(path: Path, root: Path = RAGKIT) -> str:
    """ragkit/train/records/reader.py -> ragkit.train.records.reader; a package's __init__ is the package."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, modules: set[str], root: Path = RAGKIT) -> set[str]:
    """The ragkit modules a file imports, at its top or inside functions (`from ragkit import x` counts x if it is
    a module, else ragkit)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base]).strip(".")
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names}
    return {m for m in found if m in modules and m != name}


def import_graph(root: Path = RAGKIT) -> dict[str, set[str]]:
    """Every ragkit module and the ragkit modules it imports."""
    paths = {module_name(p, root): p for p in root.rglob("*.py")}
    return {name: imported(path, set(paths), root) for name, path in paths.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of modules that import each other round a loop (strongly connected, more than one module)."""
    index, low, stack, found = {}, {}, [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = stack[stack.index(node):]
            del stack[stack.index(node):]
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def training_imports(graph: dict[str, set[str]]) -> list[str]:
    """'a -> b' for every module outside ragkit.train that imports one inside it."""
    inside = lambda name: name == TRAIN or name.startswith(TRAIN + ".")  # noqa: E731
    return [f"{name} -> {other}" for name, others in sorted(graph.items()) if not inside(name)
            for other in sorted(others) if inside(other)]


def layer_of(name: str) -> int:
    """The index in LAYERS of the package a module belongs to (top-level modules are the bottom layer)."""
    parts = name.split(".")
    return LAYERS.index(".".join(parts[:2])) if len(parts) > 2 or name in LAYERS else 0


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """'a -> b' for every import from a lower layer into a higher one."""
    return [f"{name} -> {other}" for name, others in sorted(graph.items()) for other in sorted(others)
            if layer_of(other) > layer_of(name)]


def faces(root: Path = RAGKIT) -> set[str]:
    """The packages: each __init__ is a face that only hands its modules' names on."""
    return {module_name(path, root) for path in root.rglob("__init__.py")}


def floors(graph: dict[str, set[str]], skip: set[str]) -> int:
    """How many floors deep the modules stand (a module one floor above all it imports), faces left out."""
    depth: dict[str, int] = {}

    def floor(name: str) -> int:
        if name not in depth:
            depth[name] = 1 + max((floor(other) for other in graph[name] if other not in skip), default=0)
        return depth[name]

    return max(floor(name) for name in graph if name not in skip)


ROW = re.compile(r"^\| `([\w]+)/?` \| .* \| (\d\d|NN) \|$", re.M)


def taught_in(root: Path = RAGKIT) -> dict[str, str]:
    """Module -> the lesson ("00".."09") that teaches it, from the rows of every face's table."""
    lessons = {}
    for face in faces(root):
        text = ast.get_docstring(ast.parse((root.parent / face.replace(".", "/") / "__init__.py").read_text())) or ""
        for short, lesson in ROW.findall(text):
            lessons[f"{face}.{short}"] = lesson
    return lessons


def lesson_of(name: str, lessons: dict[str, str]) -> str:
    """The lesson of a module: its own row, else its package's, else a row like `lesson_NN` its name matches."""
    parts = name.split(".")
    for end in range(len(parts), 1, -1):
        if lessons.get(".".join(parts[:end]), "NN") != "NN":
            return lessons[".".join(parts[:end])]
    for key, lesson in lessons.items():
        match = re.fullmatch(re.escape(key).replace("NN", r"(\d\d)"), name)
        if lesson == "NN" and match:
            return match.group(1)
    raise KeyError(f"{name} is in no face's 'taught in' table")


def later_lesson_imports(graph: dict[str, set[str]], lessons: dict[str, str], skip: set[str]) -> set[str]:
    """'a -> b' for every module that imports one a later lesson teaches."""
    return {f"{name} -> {other}" for name, others in graph.items() if name not in skip for other in others
            if other not in skip and lesson_of(other, lessons) > lesson_of(name, lessons)}


def test_packages_import_only_their_own_layer_or_lower():
    assert upward_imports(import_graph()) == []


def test_modules_import_modules_not_faces_and_stand_at_most_ten_floors_deep():
    graph, skip = import_graph(), faces()
    assert sorted(f"{name} -> {other}" for name, others in graph.items() if name not in skip
                  for other in others & skip) == []
    assert floors(graph, skip) <= MAX_FLOORS


def test_every_module_has_a_lesson_in_its_face_table():
    lessons, graph = taught_in(), import_graph()
    assert all(lesson_of(name, lessons) for name in graph if name not in faces())


def test_no_module_imports_one_a_later_lesson_teaches_beyond_the_known_list():
    found = later_lesson_imports(import_graph(), taught_in(), faces())
    assert found - KNOWN_LATER_LESSON_IMPORTS == set(), "a module now uses what a later lesson teaches"
    assert KNOWN_LATER_LESSON_IMPORTS - found == set(), "fixed: take it off KNOWN_LATER_LESSON_IMPORTS"


def test_nothing_outside_train_imports_train():
    assert training_imports(import_graph()) == []


def test_no_module_imports_itself_back():
    assert circles(import_graph()) == []


def test_importing_every_run_time_module_loads_no_training_code():
    runtime = sorted(name for name in import_graph() if not name.startswith(TRAIN))
    code = ("import importlib, sys\n"
            f"for name in {runtime!r}: importlib.import_module(name)\n"
            f"print(sorted(m for m in sys.modules if m.startswith({TRAIN!r})))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=RAGKIT.parent).stdout.strip()
    assert loaded == "[]"


# the rules above, shown to fail on a small tree that breaks them


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"ragkit/__init__.py": "", "ragkit/train/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "ragkit"


@pytest.mark.parametrize("line", ["from ragkit.train.fit import go", "from ragkit.train import fit",
                                  "import ragkit.train.fit", "def f():\n    from ragkit.train.fit import go"])
def test_a_run_time_module_importing_training_code_is_found(tmp_path, line):
    root = write(tmp_path, {"ragkit/train/fit.py": "go = 1\n", "ragkit/search.py": line + "\n"})
    assert training_imports(import_graph(root)) == ["ragkit.search -> ragkit.train.fit"]


def test_training_code_importing_run_time_code_is_allowed(tmp_path):
    root = write(tmp_path, {"ragkit/train/fit.py": "from ragkit.search import x\n", "ragkit/search.py": "x = 1\n"})
    assert training_imports(import_graph(root)) == []


def test_a_circle_is_found_however_it_is_imported(tmp_path):
    root = write(tmp_path, {"ragkit/a.py": "from ragkit.b import x\n", "ragkit/b.py": "def f():\n    import ragkit.c\n",
                            "ragkit/c.py": "from ragkit import a\n", "ragkit/d.py": "from ragkit.a import y\n"})
    assert circles(import_graph(root)) == [["ragkit.a", "ragkit.b", "ragkit.c"]]


def test_an_import_from_a_higher_layer_is_found(tmp_path):
    root = write(tmp_path, {"ragkit/models/__init__.py": "", "ragkit/search/__init__.py": "",
                            "ragkit/search/bm25.py": "x = 1\n",
                            "ragkit/models/llm.py": "from ragkit.search import bm25\n",
                            "ragkit/search/dense.py": "from ragkit.models.llm import y\n"})
    assert upward_imports(import_graph(root)) == ["ragkit.models.llm -> ragkit.search.bm25"]


def test_a_module_importing_a_later_lesson_is_found_and_an_unlisted_module_is_refused(tmp_path):
    table = "| `{}` | it | {} |"
    root = write(tmp_path, {
        "ragkit/__init__.py": '"""\n' + table.format("text", "01") + '\n"""\n',
        "ragkit/search/__init__.py": ('"""\n' + table.format("bm25", "01") + "\n" + table.format("rerank", "04")
                                      + '\n"""\n'),
        "ragkit/text.py": "", "ragkit/search/rerank.py": "from ragkit.text import x\n",
        "ragkit/search/bm25.py": "from ragkit.search.rerank import y\n"})
    graph = import_graph(root)
    found = later_lesson_imports(graph, taught_in(root), faces(root))
    assert found == {"ragkit.search.bm25 -> ragkit.search.rerank"}
    with pytest.raises(KeyError, match="ragkit.search.dense"):
        lesson_of("ragkit.search.dense", taught_in(root))


def test_depth_counts_floors_without_the_faces(tmp_path):
    root = write(tmp_path, {"ragkit/__init__.py": "from ragkit.c import z\n", "ragkit/a.py": "",
                            "ragkit/b.py": "import ragkit.a\n", "ragkit/c.py": "from ragkit.b import y\n"})
    graph = import_graph(root)
    assert floors(graph, faces(root)) == 3 and floors(graph, set()) == 4
