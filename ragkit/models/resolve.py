"""Resolve the one setting into a loaded backend, once per process.

RAGKIT_LLM:      local | smollm2 | qwen-0.5b | qwen-1.5b | gguf:/path/model.gguf | ollama[:model] | openai[:model]
RAGKIT_EMBEDDER: e5 | minilm | st:<dir or name> | flag[:<dir or name>] | ollama[:model] | openai[:model]
RAGKIT_RERANKER: course | ce:<dir or name> | flag:<dir or name> | llm   (e.g. ce:BAAI/bge-reranker-base)
RAGKIT_DECOMPOSER, RAGKIT_JUDGE, RAGKIT_ANSWERER, RAGKIT_REWRITER, RAGKIT_READER: see ragkit.models.roles
Taught in lessons/00_setup.ipynb.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ragkit.config import DEFAULT_TIMEOUT, ROLES, Settings, cache_dir, load_settings, openai_settings, split_spec
from ragkit.errors import ConfigError, ModelNotFound
from ragkit.models.cache import CachedEmbedder, CachedReranker, reply_store
from ragkit.models.embeddings import (
    E5Embedder,
    Embedder,
    FlagModelEmbedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
)
from ragkit.models.ladder import QWEN, qwen_path
from ragkit.models.llm import ChatModel, LlamaCppChat, OllamaChat, OpenAIChat, smollm2_path
from ragkit.models.rerankers import CrossEncoderReranker, FlagCrossEncoderReranker, LLMReranker, Reranker

LLM_KINDS = ("local", "smollm2", *QWEN, "gguf", "ollama", "openai")
LOCAL = "smollm2"  # the ladder rung RAGKIT_LLM=local (the default) names
EMBEDDER_KINDS = ("e5", "minilm", "st", "flag", "ollama", "openai")
RERANKER_KINDS = ("course", "ce", "flag", "llm")
HIDDEN = "***"  # what describe() shows in place of a URL's user, password and query values


def chat_model(spec: str | None = None) -> ChatModel:
    """The chat model the settings name (or spec), loaded on first use and then reused."""
    settings = load_settings()
    spec = spec or settings.llm
    spec = LOCAL if split_spec(spec)[0] == "local" else spec  # one loaded model, whichever name asked for it
    return _chat_model(spec, settings.threads, settings.ollama_host, settings.model_cache,
                       settings.timeout)


def embedder(spec: str | None = None) -> Embedder:
    """The embedder the settings name (or spec), loaded on first use and then reused."""
    settings = load_settings()
    return _embedder(spec or settings.embedder, settings.threads, settings.ollama_host, settings.model_cache,
                     settings.timeout)


@cache
def _chat_model(spec: str, threads: int, ollama_host: str, model_cache: str = "",
                timeout: float = DEFAULT_TIMEOUT) -> ChatModel:
    kind, argument = split_spec(spec)
    replies = reply_store(model_cache)
    if kind == "smollm2":
        return LlamaCppChat(smollm2_path(), threads=threads, replies=replies)
    if kind in QWEN:
        return LlamaCppChat(qwen_path(kind), threads=threads, replies=replies)
    if kind == "gguf":
        if not argument:
            raise ConfigError("RAGKIT_LLM=gguf needs a path: gguf:/full/path/to/model.gguf")
        return LlamaCppChat(argument, threads=threads, replies=replies)
    if kind == "ollama":
        return OllamaChat(argument, host=ollama_host, timeout=timeout)
    if kind == "openai":
        return OpenAIChat(argument or "gpt-4o-mini", **openai_settings(), timeout=timeout)
    raise ConfigError(f"unknown chat backend {spec!r}: use one of {', '.join(LLM_KINDS)} "
                      "(e.g. RAGKIT_LLM=qwen-0.5b or RAGKIT_LLM=ollama:qwen2.5:3b-instruct)")


@cache
def _embedder(spec: str, threads: int, ollama_host: str, model_cache: str = "",
              timeout: float = DEFAULT_TIMEOUT) -> Embedder:
    embedder = _load_embedder(spec, threads, ollama_host, timeout)
    return CachedEmbedder(embedder, Path(model_cache) / "embeddings") if model_cache else embedder


def _load_embedder(spec: str, threads: int, ollama_host: str, timeout: float = DEFAULT_TIMEOUT) -> Embedder:
    kind, argument = split_spec(spec)
    if kind == "e5":
        return E5Embedder(threads=threads)
    if kind in ("minilm", "st"):
        return SentenceTransformerEmbedder(argument or None, threads=threads)
    if kind == "flag":
        return FlagModelEmbedder(argument or None, threads=threads)
    if kind == "ollama":
        return OllamaEmbedder(argument, host=ollama_host, timeout=timeout)
    if kind == "openai":
        return OpenAIEmbedder(argument or "text-embedding-3-small", **openai_settings(), timeout=timeout)
    raise ConfigError(f"unknown embedder {spec!r}: use one of {', '.join(EMBEDDER_KINDS)} "
                      "(e.g. RAGKIT_EMBEDDER=minilm)")


def reranker(spec: str | None = None) -> Reranker:
    """The reranker the settings name (or spec), loaded on first use and then reused."""
    settings = load_settings()
    return _reranker(spec or settings.reranker, settings.threads, settings.model_cache)


@cache
def _reranker(spec: str, threads: int, model_cache: str = "") -> Reranker:
    reranker = _load_reranker(spec, threads)
    return CachedReranker(reranker, Path(model_cache) / "scores") if model_cache else reranker


def _load_reranker(spec: str, threads: int) -> Reranker:
    kind, argument = split_spec(spec)
    if kind == "course":
        path = course_reranker()
        trained = json.loads((path / "training.json").read_text(encoding="utf-8"))
        return CrossEncoderReranker(path, max_length=trained["config"]["max_length"], threads=threads)
    if kind in ("ce", "flag") and not argument:
        raise ConfigError(f"RAGKIT_RERANKER={kind} needs a model: {kind}:<dir or name>, "
                          f"e.g. {kind}:BAAI/bge-reranker-base")
    if kind == "ce":
        return CrossEncoderReranker(argument, threads=threads)
    if kind == "flag":
        return FlagCrossEncoderReranker(argument, threads=threads)
    if kind == "llm":
        return LLMReranker(chat_model())
    raise ConfigError(f"unknown reranker {spec!r}: use one of {', '.join(RERANKER_KINDS)} "
                      "(e.g. RAGKIT_RERANKER=ce:BAAI/bge-reranker-base)")


def course_reranker_dir() -> Path:
    """Where the course cross-encoder is trained to (ragkit.train.reranker) and loaded from."""
    return cache_dir() / "course-reranker"


def course_reranker() -> Path:
    """The folder of the trained course cross-encoder; a clear error if it has not been trained."""
    path = course_reranker_dir()
    if not (path / "training.json").exists():
        raise ModelNotFound(f"the course cross-encoder is not trained yet (nothing in {path}): run `make reranker` "
                            "(2 to 4 minutes; lessons/04_reranking.ipynb trains it too)")
    return path


def describe(settings: Settings | None = None) -> dict[str, str]:
    """What each setting resolves to, safe to print: no keys, just names and addresses without credentials."""
    settings = settings or load_settings()
    openai = openai_settings()
    key = "set (hidden)" if openai["api_key"] else "not set"
    return {"llm": settings.llm, "embedder": settings.embedder, "reranker": settings.reranker,
            "store": masked_url(settings.store),
            **{role: getattr(settings, role) or "(the chat model)" for role in ROLES},
            "threads": str(settings.threads), "ollama_host": masked_url(settings.ollama_host),
            "openai_base_url": masked_url(openai["base_url"] or "(OpenAI default)"),
            "openai_api_key": key}


def masked_url(text: str) -> str:
    """A URL with its user, password, query values and fragment shown as ***; text that is not a URL unchanged."""
    if "://" not in text:
        return text
    try:
        parts = urlsplit(text)
    except ValueError:  # e.g. an unclosed [ipv6 bracket: show nothing of it rather than fail
        return HIDDEN
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{HIDDEN}@{netloc.rpartition('@')[2]}"
    query = "&".join(f"{item.partition('=')[0]}={HIDDEN}" if "=" in item else HIDDEN
                     for item in parts.query.split("&")) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, HIDDEN if parts.fragment else ""))
