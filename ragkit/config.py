"""One place that decides which backends the course uses: environment variables over ragkit.toml.

Taught in lessons/00_setup.ipynb.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit

from ragkit.errors import ConfigError

PROJECT_DIR = Path(__file__).resolve().parents[1]
CONFIG_FILE = PROJECT_DIR / "ragkit.toml"
ENV_PREFIX = "RAGKIT_"


@dataclass(frozen=True)
class Settings:
    """Which chat model, embedder and vector store to use, and how many CPU threads."""

    llm: str = "local"
    embedder: str = "e5"
    reranker: str = "course"
    store: str = ":memory:"
    threads: int = 2
    ollama_host: str = "http://127.0.0.1:11434"
    # a folder where model outputs (llama.cpp replies, embeddings, reranker scores) are kept and reused for
    # the same input; off by default so that every call times the model (make test sets it)
    model_cache: str = ""


def load_settings(environ: dict | None = None, config_file: str | Path | None = None) -> Settings:
    """Defaults, overridden by ragkit.toml (or RAGKIT_CONFIG), overridden by RAGKIT_* variables."""
    environ = os.environ if environ is None else environ
    path = Path(config_file or environ.get("RAGKIT_CONFIG") or CONFIG_FILE)
    values: dict = _read_config(path) if path.exists() else {}
    for field in fields(Settings):
        env_value = environ.get(ENV_PREFIX + field.name.upper())
        if env_value:
            values[field.name] = env_value
    if "ollama_host" not in values and environ.get("OLLAMA_HOST"):
        values["ollama_host"] = environ["OLLAMA_HOST"]
    return Settings(**_typed(values))


def _read_config(path: Path) -> dict:
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"cannot read the config file {path}: {err}") from err
    known = {field.name for field in fields(Settings)}
    unknown = set(table) - known
    if unknown:
        raise ConfigError(f"{path}: unknown settings {sorted(unknown)}; known: {sorted(known)}")
    return table


def _typed(values: dict) -> dict:
    for name, value in values.items():
        if name != "threads" and not isinstance(value, str):
            raise ConfigError(f"{name} must be text, got {value!r}")
    if "threads" in values:
        try:
            values["threads"] = int(values["threads"])
        except (TypeError, ValueError) as err:
            raise ConfigError(f"threads must be a whole number, got {values['threads']!r}") from err
        if values["threads"] < 1:
            raise ConfigError("threads must be at least 1")
    if "ollama_host" in values and "://" not in values["ollama_host"]:
        values["ollama_host"] = _ollama_url(values["ollama_host"])
    return values


def _ollama_url(host: str) -> str:
    """Read a scheme-less host as Ollama does: '0.0.0.0' -> 'http://0.0.0.0:11434', ':8080' -> 127.0.0.1."""
    parts = urlsplit("http://" + host)
    netloc = parts.netloc if parts.netloc.rpartition("]")[2].count(":") else parts.netloc + ":11434"
    netloc = "127.0.0.1" + netloc if netloc.startswith(":") else netloc
    return f"http://{netloc}{parts.path}".rstrip("/")


def split_spec(spec: str) -> tuple[str, str]:
    """'ollama:qwen2.5:3b' -> ('ollama', 'qwen2.5:3b'); 'local' -> ('local', '')."""
    kind, _, argument = spec.strip().partition(":")
    return kind.lower(), argument.strip()


def package_version(package: str) -> str | None:
    """The installed version of a distribution, or None."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None

