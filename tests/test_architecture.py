"""The shape of ragkit, read from its imports: run-time code never imports the training code, and no module imports
itself back through others."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

RAGKIT = Path(__file__).resolve().parents[1] / "ragkit"
TRAIN = "ragkit.train"


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
