"""Test runs are isolated from the learner's settings: `make test` passes for a learner who runs Ollama."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ollama_standin import OllamaStandIn

ROOT = Path(__file__).resolve().parents[1]
LEARNER_SETTINGS = {"RAGKIT_LLM": "ollama:qwen2.5:3b-instruct", "RAGKIT_EMBEDDER": "minilm", "RAGKIT_STORE": "/nowhere",
                    "RAGKIT_DATA": "/nowhere", "RAGKIT_CACHE": "/nowhere", "RAGKIT_EVALDATA": "/nowhere",
                    "RAGKIT_CONFIG": "/nowhere/ragkit.toml", "OPENAI_API_KEY": "sk-learner",
                    "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "RAGKIT_SOMETHING_NEW": "1"}


def env_prefix(environment: dict[str, str]) -> list[str]:
    """The `env ...` prefix the Makefile puts before every test command, run from environment, as arguments."""
    printed = subprocess.run(["make", "-s", "--no-print-directory", "print-test-env"], cwd=ROOT, check=True,
                             capture_output=True, text=True, env=environment).stdout
    return shlex.split(printed)


def run_under_test_env(command: list[str], extra_env: dict[str, str]) -> subprocess.CompletedProcess:
    """command run as `make test` runs it, in an environment holding the learner's settings and extra_env."""
    environment = {**os.environ, **LEARNER_SETTINGS, **extra_env}
    return subprocess.run(env_prefix(environment) + command, cwd=ROOT, env=environment, capture_output=True,
                          text=True)


def test_no_setting_of_the_learner_reaches_a_test_run():
    shown = run_under_test_env([sys.executable, "-c", "import json, os; print(json.dumps(sorted(os.environ)))"],
                               {"OLLAMA_HOST": "http://127.0.0.1:1", "RAGKIT_OLLAMA_HOST": "http://127.0.0.1:1"})
    names = json.loads(shown.stdout)
    leaked = [name for name in names if name.startswith(("RAGKIT_", "OLLAMA_", "OPENAI_", "HARNESS_"))]
    assert leaked == ["RAGKIT_CONFIG"], leaked  # set to /dev/null: the project's defaults, not the learner's file


def test_nothing_of_the_learners_shell_reaches_a_kernel_and_the_hub_stays_offline(tmp_path):
    shell = {"PYTHONPATH": str(tmp_path), "PYTHONSTARTUP": str(tmp_path / "startup.py"), "HF_HUB_OFFLINE": "0",
             "TRANSFORMERS_OFFLINE": "0", "IPYTHONDIR": str(tmp_path), "JUPYTER_CONFIG_DIR": str(tmp_path),
             "JUPYTER_PATH": str(tmp_path), "JUPYTER_SOMETHING": "1"}
    shown = run_under_test_env([sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"], shell)
    seen = json.loads(shown.stdout)
    leaked = ("PYTHONPATH", "PYTHONSTARTUP", "JUPYTER_PATH", "JUPYTER_SOMETHING")
    assert [name for name in seen if name in leaked] == []
    assert seen["HF_HUB_OFFLINE"] == seen["TRANSFORMERS_OFFLINE"] == "1"
    assert str(tmp_path) not in (seen["IPYTHONDIR"], seen["JUPYTER_CONFIG_DIR"])


@pytest.mark.model
def test_lesson_00_passes_beside_a_live_ollama():
    with OllamaStandIn(["qwen2.5:3b-instruct", "nomic-embed-text"]) as ollama:
        run = run_under_test_env(
            [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "--nbval-sanitize-with",
             "tests/nbval_sanitize.cfg", "-q", "-p", "no:cacheprovider", "lessons/00_setup.ipynb"],
            {"OLLAMA_HOST": ollama.url, "RAGKIT_OLLAMA_HOST": ollama.url})
        assert not ollama.requests, "a test run talked to the learner's Ollama server"
    assert run.returncode == 0, run.stdout[-3000:]
