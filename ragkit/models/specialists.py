"""Specialists: the default chat model fine-tuned for one narrow job each (decomposer, yes/no answerer, step
judge, reader, relevance judge, query rewriter), found, loaded and used like any chat backend.

Where a specialist lives: a committed one in models/specialists/<job>/ comes first (it is what the lessons'
recorded outputs were made with, the same on every machine), then the one `make specialists` built under
ragkit.config.cache_dir()/specialists/<job>/. Either folder holds the peft adapter, its llama.cpp LoRA GGUF
(adapter.gguf, for LoRA runs), finetune.json and specialist.json (job, base model, config, data provenance,
held-out scores, ragkit commit). A missing specialist is a ModelNotFound naming the command that builds it
(building and scoring them is ragkit.train's).
A specialist is a ChatModel with a `job`: the pipelines ask it in its job's own prompt (ragkit.models.jobs), and any
other prompt is put into that format too (its system line + the prompt's last user message); json_schema and
grammar are dropped, since its reply format is fixed by its training (the rewriter keeps a schema: its question
lists are that JSON). It answers every call as its job: give
it only that job's calls. Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Sequence

from ragkit.config import PROJECT_DIR, cache_dir, load_settings
from ragkit.errors import ConfigError, ModelNotFound
from ragkit.models import finetuned
from ragkit.models.cache import reply_store
from ragkit.models.jobs import SYSTEMS, job_messages
from ragkit.models.llm import (
    ChatModel,
    ChatReply,
    LlamaCppChat,
    Messages,
    TransformersChat,
    as_messages,
    smollm2_path,
)

log = logging.getLogger(__name__)

COMMITTED_DIR = PROJECT_DIR / "models" / "specialists"
RECORD_FILE = "specialist.json"
ADAPTER_GGUF = "adapter.gguf"
BACKENDS = ("llama.cpp", "transformers")
SOURCES = ("auto", "committed", "built")
BUILD_COMMAND = "make specialists"


@dataclass(frozen=True)
class Job:
    """One specialist job: what it is called, how long its replies are, and whether it keeps a JSON schema it is
    asked with (its trained reply is that JSON). How each is trained: ragkit.train.specialists.CONFIGS."""

    name: str
    title: str
    max_tokens: int
    keeps_schema: bool = False


JOBS = {
    "decomposer": Job("decomposer", "question decomposer", 96),
    "answerer": Job("answerer", "yes/no answerer", 3),
    "judge": Job("judge", "step judge", 4),
    "reader": Job("reader", "reader", 24),
    "relevance": Job("relevance", "relevance judge", 1),
    # 150 tokens: a JSON list of up to five questions (as rewrite.multi_query asks), or a Vietnamese question
    # restored (its accented letters take several tokens each). Its question lists are multi_query's schema, which
    # it keeps: unconstrained, a build repeated one question until the token limit
    "rewriter": Job("rewriter", "query rewriter", 150, keeps_schema=True),
}


def job_of(job: str) -> Job:
    """The Job named job; a ConfigError naming the known ones otherwise."""
    if job not in JOBS:
        raise ConfigError(f"unknown specialist job {job!r}: use one of {', '.join(JOBS)}")
    return JOBS[job]


def reframe(job: str, messages: Messages) -> list[dict]:
    """The job's own prompt around the last user message of any prompt (few-shot examples and system lines go).

    Taught in lessons/09_specialists.ipynb.
    """
    users = [m["content"] for m in as_messages(messages) if m.get("role") == "user"]
    if not users:
        raise ValueError("a specialist needs a prompt with at least one user message")
    return job_messages(job, users[-1])


class Specialist:
    """A fine-tuned job model behind ChatModel: any prompt is put into the job's format before it is asked."""

    def __init__(self, job: str, backend: ChatModel, *, path: Path, record: dict, reframe_prompts: bool = True):
        self.job, self.backend, self.path, self.record = job, backend, Path(path), record
        self.reframe_prompts = reframe_prompts
        runtime = "llama.cpp" if isinstance(backend, LlamaCppChat) else "transformers"
        self.name = f"{job} specialist ({self.path.name}, {runtime})"

    @property
    def seed(self) -> int:
        """The backend's sampling seed (ragkit.reason.voting changes it per sampled path)."""
        return self.backend.seed

    @seed.setter
    def seed(self, value: int) -> None:
        self.backend.seed = value

    def chat(self, messages: Messages, *, max_tokens: int = 256, temperature: float = 0.0,
             json_schema: dict | None = None, grammar: str | None = None, stop: Sequence[str] = (),
             logprobs: int = 0) -> ChatReply:
        """The backend's reply to the prompt in the job's format; a grammar is dropped, and so is a json_schema
        unless the job keeps it (see Job)."""
        kept = json_schema if job_of(self.job).keeps_schema else None
        if grammar or json_schema != kept:
            log.info("the %s specialist ignores json_schema/grammar: its reply format is fixed by training", self.job)
        prompt = reframe(self.job, messages) if self.reframe_prompts else as_messages(messages)
        asked = {"logprobs": logprobs} if logprobs else {}  # a backend that gives none is never asked for them
        asked |= {"json_schema": kept} if kept else {}
        reply = self.backend.chat(prompt, max_tokens=max_tokens, temperature=temperature, stop=stop, **asked)
        return dataclasses.replace(reply, model=self.name)


def built_dir(job: str) -> Path:
    """Where `make specialists` builds the job's specialist."""
    return cache_dir() / "specialists" / job_of(job).name


def specialist_dir(job: str, *, source: str = "auto") -> Path:
    """The folder of the job's specialist: committed first, then built ('auto'); a clear error if neither exists."""
    spec = job_of(job)
    if source not in SOURCES:
        raise ConfigError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
    places = {"auto": [COMMITTED_DIR / job, built_dir(job)], "committed": [COMMITTED_DIR / job],
              "built": [built_dir(job)]}[source]
    for place in places:
        if (place / RECORD_FILE).is_file():
            return place
    raise ModelNotFound(f"the {spec.title} specialist is not built yet: run `{BUILD_COMMAND}` (up to an hour a "
                        "job on 2 cores; docs/results.md has each build's time), or "
                        f"`python -m ragkit.train.specialists {job}` to build this one alone "
                        f"(looked in {', '.join(str(p) for p in places)})")


def specialist_record(path: str | Path) -> dict:
    """specialist.json of a finished specialist folder, checked against the job's current prompt."""
    path = Path(path)
    finetuned.finetune_record(path)  # ModelNotFound for a missing or unfinished folder
    if not (path / RECORD_FILE).is_file():
        raise ModelNotFound(f"{path} is a fine-tuned model but not a specialist (no {RECORD_FILE})")
    record = json.loads((path / RECORD_FILE).read_text(encoding="utf-8"))
    if record.get("prompt") != SYSTEMS[record["job"]]:
        raise ModelNotFound(f"the {record['job']} specialist in {path} was trained with another prompt than "
                            f"ragkit now uses: rebuild it with `{BUILD_COMMAND}`")
    return record


def specialist(job: str, *, backend: str = "llama.cpp", source: str = "auto", threads: int | None = None) -> Specialist:
    """The job's specialist, loaded once per process (see specialist_dir for where it is looked for).

    Taught in lessons/09_specialists.ipynb.
    """
    return _specialist(job, backend, source, threads or load_settings().threads)


@cache
def _specialist(job: str, backend: str, source: str, threads: int) -> Specialist:
    return load_specialist(specialist_dir(job, source=source), backend=backend, threads=threads)


def load_specialist(path: str | Path, *, backend: str = "llama.cpp", threads: int = 2) -> Specialist:
    """The specialist saved in path, run by llama.cpp (its LoRA GGUF on the shipped model) or by transformers."""
    path = Path(path)
    record = specialist_record(path)
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "transformers":
        model, tokenizer, _ = finetuned.load_finetuned(path, threads=threads)
        return Specialist(record["job"], TransformersChat(model, tokenizer, name=path.name), path=path, record=record)
    if not (path / ADAPTER_GGUF).is_file():
        raise ModelNotFound(f"the specialist in {path} has no llama.cpp adapter ({ADAPTER_GGUF}; full fine-tuning "
                            "writes none): load it with backend='transformers'")
    finetuned.check_base(record["base"], path)
    chat = LlamaCppChat(smollm2_path(), threads=threads, lora=[path / ADAPTER_GGUF], replies=reply_store())
    return Specialist(record["job"], chat, path=path, record=record)
