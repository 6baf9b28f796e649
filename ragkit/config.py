"""One place that reads the settings: which backends the course uses (environment variables over
ragkit.toml), where its data and caches live, and the variables other libraries share with it.

No other module reads the environment. Taught in lessons/00_setup.ipynb.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, fields
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit

from ragkit.errors import ConfigError

PROJECT_DIR = Path(__file__).resolve().parents[1]
CONFIG_FILE = PROJECT_DIR / "ragkit.toml"
ENV_PREFIX = "RAGKIT_"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD")
TRUE_WORDS = {"1", "ON", "YES", "TRUE"}  # what huggingface_hub reads as true
DEFAULT_TIMEOUT = 120.0  # seconds a model server may take to answer one request
MEMORY_STORE = ":memory:"
HOST_PORT = re.compile(r"[\w.-]+:\d+(/.*)?")  # 'localhost:6333', 'qdrant.lan:6333/': a URL without its scheme


@dataclass(frozen=True)
class Settings:
    """Which models (chat, and per reasoning job), embedder, reranker and vector store to use, and how many threads."""

    llm: str = "local"
    embedder: str = "e5"
    reranker: str = "course"
    store: str = ":memory:"
    threads: int = 2
    ollama_host: str = "http://127.0.0.1:11434"
    # seconds an Ollama or OpenAI-compatible server may take to answer one request before ragkit gives up
    timeout: float = DEFAULT_TIMEOUT
    # a folder where model outputs (llama.cpp replies, embeddings, reranker scores) are kept and reused for
    # the same input; off by default so that every call times the model (make test sets it)
    model_cache: str = ""
    # the model that plans CoT-RAG's steps: '' (the chat model above, prompted few-shot), 'specialist' (the
    # chat model fine-tuned for the job, lesson 09) or any chat model spec (e.g. ollama:qwen2.5:3b-instruct)
    decomposer: str = ""
    # the models that judge RwR's steps against evidence and write its final answer (same choices as decomposer)
    judge: str = ""
    answerer: str = ""
    # the reader that writes a short answer from passages when a pipeline is given one (reader_model):
    # '' (the chat model, prompted few-shot as ragkit.generate.answering.read does), 'specialist' (the reader
    # specialist: the chat model fine-tuned to copy a span of the passages, lesson 09) or any chat model spec
    reader: str = ""
    # the chat model a relevance judge asks "does the passage help answer the query?" (roles.relevance_model,
    # scored by P(yes)): '' (the chat model), 'specialist' (the relevance specialist, lesson 09) or any chat model spec
    relevance: str = ""
    # the model that rewrites a query for search (lesson 03's rewrite and multi_query): '' (the chat model,
    # prompted few-shot), 'specialist' (the rewriter specialist, lesson 09) or any chat model spec
    rewriter: str = ""


ROLES = ("decomposer", "judge", "answerer")  # the settings above that choose a chat model per job (ragkit.models.roles)


def load_settings(environ: dict | None = None, config_file: str | Path | None = None) -> Settings:
    """Defaults, overridden by ragkit.toml (or RAGKIT_CONFIG), overridden by RAGKIT_* variables."""
    environ = _environ(environ)
    path = _config_path(config_file, environ)
    values: dict = _read_config(path) if path else {}
    for field in fields(Settings):
        env_value = environ.get(ENV_PREFIX + field.name.upper())
        if env_value:
            values[field.name] = env_value
    if "ollama_host" not in values and environ.get("OLLAMA_HOST"):
        values["ollama_host"] = environ["OLLAMA_HOST"]
    return Settings(**_typed(values))


def data_dir(*, environ: dict | None = None) -> Path:
    """The course data folder: RAGKIT_DATA, else <project>/data."""
    return _folder("RAGKIT_DATA", PROJECT_DIR / "data", environ)


def cache_dir(*, environ: dict | None = None) -> Path:
    """Where ragkit keeps what it builds (the course cross-encoder, benchmark vectors): RAGKIT_CACHE, else .cache."""
    return _folder("RAGKIT_CACHE", PROJECT_DIR / ".cache", environ)


def evaldata_dir(*, environ: dict | None = None) -> Path:
    """The public evaluation and training data root: RAGKIT_EVALDATA, else <project>/data/benchmarks."""
    return _folder("RAGKIT_EVALDATA", PROJECT_DIR / "data" / "benchmarks", environ)


def hub_offline(*, environ: dict | None = None) -> bool:
    """Whether HF_HUB_OFFLINE forbids downloads from the Hugging Face hub (1/on/yes/true, as the hub reads it)."""
    return _environ(environ).get("HF_HUB_OFFLINE", "").strip().upper() in TRUE_WORDS


def openai_settings(*, environ: dict | None = None) -> dict[str, str | None]:
    """OPENAI_BASE_URL and OPENAI_API_KEY for the OpenAI backends; None where unset."""
    environ = _environ(environ)
    return {"base_url": environ.get("OPENAI_BASE_URL") or None, "api_key": environ.get("OPENAI_API_KEY") or None}


def ragkit_variables(*, environ: dict | None = None) -> dict[str, str]:
    """The RAGKIT_* variables that are set, leaving out secret-looking names (for a benchmark's record)."""
    return {name: value for name, value in _environ(environ).items()
            if name.startswith(ENV_PREFIX) and not SECRET_NAME.search(name)}


def _environ(environ: dict | None) -> dict:
    return os.environ if environ is None else environ


def _folder(variable: str, default: Path, environ: dict | None) -> Path:
    """The folder a variable names (an empty one does not count), else default."""
    value = _environ(environ).get(variable, "").strip()
    return Path(value).expanduser() if value else default


def _config_path(config_file: str | Path | None, environ: dict) -> Path | None:
    """The settings file to read: config_file or ragkit.toml if it exists; RAGKIT_CONFIG's file, which must."""
    if config_file:
        path = Path(config_file)
        return path if path.exists() else None
    named = environ.get("RAGKIT_CONFIG")
    if not named:
        return CONFIG_FILE if CONFIG_FILE.exists() else None
    path = Path(named).expanduser()
    if not path.exists():
        raise ConfigError(f"RAGKIT_CONFIG names {path}, which does not exist: create that file "
                          "or unset RAGKIT_CONFIG to use ragkit.toml at the project root")
    return path


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
        if name not in ("threads", "timeout") and not isinstance(value, str):
            raise ConfigError(f"{name} must be text, got {value!r}")
    if "threads" in values:
        try:
            values["threads"] = int(values["threads"])
        except (TypeError, ValueError) as err:
            raise ConfigError(f"threads must be a whole number, got {values['threads']!r}") from err
        if values["threads"] < 1:
            raise ConfigError("threads must be at least 1")
    if "timeout" in values:
        values["timeout"] = _seconds(values["timeout"])
    if "store" in values:
        check_store(values["store"])
    if "ollama_host" in values and "://" not in values["ollama_host"]:
        values["ollama_host"] = _ollama_url(values["ollama_host"])
    return values


def _seconds(value) -> float:
    """The timeout setting as a number of seconds above 0."""
    try:
        seconds = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        seconds = math.nan
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ConfigError(f"timeout must be a number of seconds above 0 (e.g. RAGKIT_TIMEOUT=300), got {value!r}")
    return seconds


def check_store(location: str) -> str:
    """Refuse a store setting that is likely a mistake; return it unchanged.

    Valid: ':memory:', an http:// or https:// URL, or a folder path that looks like one: absolute, starting
    with '.' or '~', or holding a '/' (so ./qdrant, not qdrant, names a folder in the working directory).
    """
    if location == MEMORY_STORE or location.startswith(("http://", "https://")):
        return location
    if "://" in location:
        raise ConfigError(f"the store {location!r} is a URL Qdrant cannot use: a Qdrant server URL starts with "
                          "http:// or https:// (e.g. RAGKIT_STORE=http://localhost:6333)")
    if HOST_PORT.fullmatch(location):
        raise ConfigError(f"the store {location!r} looks like a server address without its scheme: write "
                          f"RAGKIT_STORE=http://{location} for a Qdrant server")
    if Path(location).is_absolute() or location.startswith((".", "~")) or "/" in location or os.sep in location:
        return location
    if "mem" in location.lower():
        raise ConfigError(f"the store {location!r} is not a store: write RAGKIT_STORE=:memory: (with both "
                          "colons) for the embedded in-memory store")
    raise ConfigError(f"the store {location!r} is neither :memory:, an http(s) URL nor a folder path: write "
                      f"RAGKIT_STORE=./{location.strip() or 'qdrant'} for a folder here, :memory: for the "
                      "embedded in-memory store, or http://host:6333 for a Qdrant server")


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

