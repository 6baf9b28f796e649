"""Specialists: the default chat model fine-tuned for one narrow job each (decomposer, yes/no answerer, step
judge, reader, relevance judge, query rewriter), found, loaded and used like any chat backend, and scored on
held-out data.

Where a specialist lives: a committed one in models/specialists/<job>/ comes first (it is what the lessons'
recorded outputs were made with, the same on every machine), then the one `make specialists` built under
ragkit.config.cache_dir()/specialists/<job>/. Either folder holds the peft adapter, its llama.cpp LoRA GGUF
(adapter.gguf, for LoRA runs), finetune.json and specialist.json (job, base model, config, data provenance,
held-out scores, ragkit commit). A missing specialist is a ModelNotFound naming the command that builds it.
A specialist is a ChatModel with a `job`: the pipelines ask it in its job's own prompt (ragkit.jobs), and any
other prompt is put into that format too (its system line + the prompt's last user message); json_schema and
grammar are dropped, since its reply format is fixed by its training (the rewriter keeps a schema: its question
lists are that JSON). It answers every call as its job: give
it only that job's calls. Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Sequence

from ragkit import finetune
from ragkit.config import PROJECT_DIR, cache_dir, load_settings, package_version
from ragkit.errors import ConfigError, ModelNotFound
from ragkit.evaluate import exact_match, mean, roc_auc, token_f1
from ragkit.finetune import FineTuneConfig
from ragkit.jobs import (
    LABELS,
    MAX_STEPS,
    PARSERS,
    SYSTEMS,
    job_messages,
    parse_decomposition,
    parse_reader,
    passage_body,
)
from ragkit.llm import ChatModel, ChatReply, LlamaCppChat, Messages, TransformersChat, as_messages, smollm2_path
from ragkit.model_cache import reply_store
from ragkit.replies import clean_item, marked_lines
from ragkit.rerank import RelevanceJudge, yes_scores
from ragkit.rewrite import parse_questions, questions_schema
from ragkit.rewriter_records import RESTORED
from ragkit.spans import extract
from ragkit.specialist_records import build_records, heldout_sample, source_files

log = logging.getLogger(__name__)

COMMITTED_DIR = PROJECT_DIR / "models" / "specialists"
RECORD_FILE = "specialist.json"
ADAPTER_GGUF = "adapter.gguf"
BACKENDS = ("llama.cpp", "transformers")
SOURCES = ("auto", "committed", "built")
BUILD_COMMAND = "make specialists"


@dataclass(frozen=True)
class Job:
    """One specialist job: what it is called, how long its replies are, how it is trained by default, and whether
    it keeps a JSON schema it is asked with (its trained reply is that JSON)."""

    name: str
    title: str
    max_tokens: int
    config: FineTuneConfig
    keeps_schema: bool = False


# LoRA r8 on every projection of every layer. How long each build took is in its specialist.json (report).
JOBS = {
    "decomposer": Job("decomposer", "question decomposer", 96,
                      FineTuneConfig(max_length=192, lora_rank=8, lora_alpha=16.0)),
    "answerer": Job("answerer", "yes/no answerer", 3,
                    FineTuneConfig(max_length=256, lora_rank=8, lora_alpha=16.0)),
    # 240 steps: part of one pass over its records, so that its build is the shortest of the three
    "judge": Job("judge", "step judge", 4,
                 FineTuneConfig(max_length=320, lora_rank=8, lora_alpha=16.0, max_steps=240)),
    # 170 steps (1,360 of its ~6,600 records) fill the hour a build may take; 704 tokens hold four HotpotQA passages
    "reader": Job("reader", "reader", 24,
                  FineTuneConfig(max_length=704, lora_rank=8, lora_alpha=16.0, max_steps=170)),
    # 420 steps (3,360 of its ~6,800 training records) keep the build under the hour. Trained on hard negatives
    # alone, two builds (at 5e-4 and 1e-3) kept a loss at chance for yes/no; the easy negatives show it the topic
    # first. 288 tokens hold a query and a 600-character passage
    "relevance": Job("relevance", "relevance judge", 1,
                     FineTuneConfig(max_length=288, lora_rank=8, lora_alpha=16.0, max_steps=420)),
    # 150 tokens: a JSON list of up to five questions (as rewrite.multi_query asks), or a Vietnamese question
    # restored (its accented letters take several tokens each). Its question lists are multi_query's schema, which
    # it keeps: unconstrained, a build repeated one question until the token limit
    "rewriter": Job("rewriter", "query rewriter", 150,
                    FineTuneConfig(max_length=256, lora_rank=8, lora_alpha=16.0, max_steps=300), keeps_schema=True),
}


def job_of(job: str) -> Job:
    """The Job named job; a ConfigError naming the known ones otherwise."""
    if job not in JOBS:
        raise ConfigError(f"unknown specialist job {job!r}: use one of {', '.join(JOBS)}")
    return JOBS[job]


# --- scores -----------------------------------------------------------------------------------------------


def decomposition_scores(predicted: Sequence[Sequence[str]], gold: Sequence[Sequence[str]], *,
                         stopped: Sequence[bool] | None = None) -> dict[str, float]:
    """Step-level agreement with gold decompositions.

    step_f1: per question, token F1 of the i-th predicted step with the i-th gold step, summed over positions
    and divided by the longer list's length (a missing or extra step scores 0), averaged over questions;
    right_count: share with as many steps as gold; stopped: share of replies that ended by themselves within
    MAX_STEPS numbered lines; mean_steps and gold_mean_steps.

    Taught in lessons/09_specialists.ipynb.
    """
    _same_length(predicted, gold)
    per_question = [sum(token_f1(p, g) for p, g in zip(steps, truth)) / max(len(steps), len(truth), 1)
                    for steps, truth in zip(predicted, gold)]
    scores = {"n": len(gold), "step_f1": mean(per_question),
              "right_count": mean([len(p) == len(g) for p, g in zip(predicted, gold)]),
              "mean_steps": mean([len(p) for p in predicted]), "gold_mean_steps": mean([len(g) for g in gold])}
    if stopped is not None:
        scores["stopped"] = mean(list(stopped))
    return scores


def label_scores(predicted: Sequence[str], gold: Sequence[str], *, labels: Sequence[str]) -> dict[str, float]:
    """Accuracy, the majority-class baseline, the share of unreadable replies, and accuracy per gold label.

    Taught in lessons/09_specialists.ipynb.
    """
    _same_length(predicted, gold)
    counts = Counter(gold)
    scores = {"n": len(gold), "accuracy": mean([p == g for p, g in zip(predicted, gold)]),
              "majority": max(counts.values()) / len(gold) if gold else float("nan"),
              "unreadable": mean([p not in labels for p in predicted])}
    for label in labels:
        if counts[label]:
            scores[f"accuracy[{label}]"] = mean([p == g for p, g in zip(predicted, gold) if g == label])
    return scores


def reader_reply(text: str, passages: Sequence[Sequence[str]]) -> tuple[str, int | None]:
    """A reader reply as the reader keeps it: its first line made a span of the (title, text) passages, and the
    passage it is from (None for yes, no, NOT_IN_PASSAGES or an answer in no passage)."""
    return extract(parse_reader(text), [passage_body(title, body) for title, body in passages])


def reader_scores(predicted: Sequence[str], records: Sequence[dict]) -> dict[str, float]:
    """Exact match and token F1 against each record's answer, overall, per source and per kind of answer.

    Taught in lessons/09_specialists.ipynb.
    """
    _same_length(predicted, records)
    gold = [r["answer"].strip() for r in records]
    scores = {"n": len(gold), "em": mean([exact_match(p, g) for p, g in zip(predicted, gold)]),
              "f1": mean([token_f1(p, g) for p, g in zip(predicted, gold)])}
    for field in ("source", "kind"):
        for value in sorted({r[field] for r in records}):
            chosen = [(p, g) for p, g, r in zip(predicted, gold, records) if r[field] == value]
            scores[f"f1[{value}]"] = mean([token_f1(p, g) for p, g in chosen])
    return scores


def asked_with(job: str, record: dict) -> dict:
    """The options a pipeline asks the job's record with: the relevance judge for its P(yes) (a reranker ranks
    by it); the rewriter as ragkit.rewrite asks it (a question list in multi_query's schema, a keyword query on one
    line)."""
    if job == "relevance":
        return {"logprobs": RelevanceJudge.TOP}
    if job == "rewriter":
        return {"json_schema": questions_schema()} if record["form"] == "questions" else {"stop": ["\n"]}
    return {}


def rewrite_agreement(reply: str, record: dict) -> float:
    """How far a rewriter reply matches its record: exact text for a diacritics restoration, else token F1 with
    the kept rewrite (a questions reply read as rewrite.multi_query reads it)."""
    if record["source"].startswith(RESTORED):
        return float(" ".join(reply.split()) == record["answer"])
    if record["form"] == "questions":
        return token_f1(" ".join(parse_questions(reply)[0]), " ".join(parse_questions(record["answer"])[0]))
    return token_f1(clean_item(reply), record["answer"])


def rewriter_scores(replies: Sequence[str], records: Sequence[dict]) -> dict[str, float]:
    """Agreement with the held-out records overall and by kind (keywords, questions, restore), and the share of
    questions replies from which no question could be read.

    Taught in lessons/09_specialists.ipynb.
    """
    _same_length(replies, records)
    kinds = ["restore" if r["source"].startswith(RESTORED) else r["form"] for r in records]
    agreement = [rewrite_agreement(reply, r) for reply, r in zip(replies, records)]
    scores = {"n": len(records), "agreement": mean(agreement)}
    for kind in sorted(set(kinds)):
        scores[f"agreement[{kind}]"] = mean([a for a, k in zip(agreement, kinds) if k == kind])
    questions = [reply for reply, kind in zip(replies, kinds) if kind == "questions"]
    if questions:
        scores["unreadable[questions]"] = mean([not parse_questions(reply)[0] for reply in questions])
    return scores


def _same_length(predicted: Sequence, gold: Sequence) -> None:
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predictions for {len(gold)} gold answers")


def heldout_scores(chat: ChatModel, records: Sequence[dict], *, job: str) -> dict[str, float]:
    """Run the chat model on the records' prompts and score its replies against their answers.

    Taught in lessons/09_specialists.ipynb.
    """
    spec = job_of(job)
    replies = [chat.chat(r["messages"], max_tokens=spec.max_tokens, **asked_with(job, r)) for r in records]
    if job == "decomposer":
        gold = [parse_decomposition(r["answer"]) for r in records]
        stopped = [reply.finish_reason == "stop" and len(marked_lines(reply.text)) <= MAX_STEPS for reply in replies]
        return decomposition_scores([parse_decomposition(reply.text) for reply in replies], gold, stopped=stopped)
    if job == "reader":
        return reader_scores([reader_reply(reply.text, r["passages"])[0] for reply, r in zip(replies, records)],
                             records)
    if job == "rewriter":
        return rewriter_scores([reply.text for reply in replies], records)
    labels = ("yes", "no") if job in ("answerer", "relevance") else LABELS
    scores = label_scores([PARSERS[job](reply.text) for reply in replies], [r["answer"] for r in records],
                          labels=labels)
    if job == "relevance":  # and on the hard pairs alone (a BM25 or look-alike negative), as a reranker meets them
        scores["auc"] = yes_auc(replies, [r["answer"] == "yes" for r in records])
        hard = [(reply, r["answer"] == "yes") for reply, r in zip(replies, records) if r.get("negative") != "random"]
        scores["auc[hard]"] = yes_auc(*zip(*hard)) if hard else float("nan")
    return scores


def yes_auc(replies: Sequence[ChatReply], relevant: Sequence[bool]) -> float:
    """ROC AUC of the replies' P(yes) as the relevance judge scores them (ragkit.rerank.yes_scores)."""
    return roc_auc(yes_scores(replies)[0], relevant)


# --- a specialist as a chat model -------------------------------------------------------------------------


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
        """The backend's sampling seed (ragkit.voting changes it per sampled path)."""
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


# --- where specialists live -------------------------------------------------------------------------------


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
                        f"`python -m ragkit.specialists {job}` to build this one alone "
                        f"(looked in {', '.join(str(p) for p in places)})")


def specialist_record(path: str | Path) -> dict:
    """specialist.json of a finished specialist folder, checked against the job's current prompt."""
    path = Path(path)
    finetune.finetune_record(path)  # ModelNotFound for a missing or unfinished folder
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
        model, tokenizer, _ = finetune.load_finetuned(path, threads=threads)
        return Specialist(record["job"], TransformersChat(model, tokenizer, name=path.name), path=path, record=record)
    if not (path / ADAPTER_GGUF).is_file():
        raise ModelNotFound(f"the specialist in {path} has no llama.cpp adapter ({ADAPTER_GGUF}; full fine-tuning "
                            "writes none): load it with backend='transformers'")
    finetune.check_base(record["base"], path)
    chat = LlamaCppChat(smollm2_path(), threads=threads, lora=[path / ADAPTER_GGUF], replies=reply_store())
    return Specialist(record["job"], chat, path=path, record=record)


# --- building ---------------------------------------------------------------------------------------------


def build_specialist(job: str, *, config: FineTuneConfig | None = None, root: str | Path | None = None,
                     out_dir: str | Path | None = None, base: str | Path | None = None, force: bool = False,
                     threads: int = 2, eval_limit: int = 200, progress: bool = True) -> dict:
    """Build the job's records, fine-tune (the default chat model, or base), score on held-out records, save the
    specialist atomically; reuse a build of the same key unless force. Returns its specialist.json record.

    Taught in lessons/09_specialists.ipynb.
    """
    spec = job_of(job)
    config = config or spec.config
    out_dir = Path(out_dir) if out_dir else built_dir(job)
    records, counts = build_records(job, root=root, seed=config.seed)
    data = {"files": _file_hashes(source_files(job, root=root)), "counts": counts,
            "records_sha256": _sha256_json(records)}
    key = build_key(config, data, base=finetune.base_identity(base))
    if not force and (out_dir / RECORD_FILE).is_file():
        existing = json.loads((out_dir / RECORD_FILE).read_text(encoding="utf-8"))
        if existing.get("key") == key:
            return {**existing, "reused": True}
    trained = finetune.train([r for r in records if r["split"] == "train"], config=config, base=base, threads=threads,
                             progress=progress)
    with tempfile.TemporaryDirectory() as scratch:
        adapter = gguf_adapter(trained, Path(scratch)) if config.method == "lora" else None
        chat = evaluation_chat(trained, adapter if base is None else None, threads=threads)
        heldout = heldout_sample(records, eval_limit)
        scores = heldout_scores(chat, heldout, job=job)
        record = {"job": job, "key": key, "prompt": SYSTEMS[job], "base": trained.base, "config": asdict(config),
                  "data": data, "heldout": {**scores, "run by": "llama.cpp" if isinstance(chat, LlamaCppChat)
                                            else "transformers"},
                  "heldout_untrained": heldout_scores(untrained_chat(base, threads=threads), heldout, job=job),
                  "report": {k: v for k, v in asdict(trained.report).items() if k != "losses"},
                  "ragkit_commit": ragkit_commit(), "gguf_lora": adapter is not None}
        halve_adapters(trained.model)
        finetune.save_finetuned(trained, out_dir, extra=lambda folder: _write_specialist(folder, record, records,
                                                                                          adapter))
    return record


def halve_adapters(model) -> None:
    """Store the LoRA weights in float16: half the disk, and float16 like the GGUF adapter that was scored."""
    for name, parameter in model.named_parameters():
        if "lora_" in name:
            parameter.data = parameter.data.half()


def gguf_adapter(trained: finetune.Trained, folder: Path) -> Path:
    """The freshly trained LoRA adapter written as a llama.cpp LoRA GGUF in folder."""
    from ragkit.gguf_lora import lora_to_gguf

    trained.model.save_pretrained(folder / "peft")
    heads = (trained.model.config.num_attention_heads, trained.model.config.num_key_value_heads)
    return lora_to_gguf(folder / "peft", folder / ADAPTER_GGUF, heads=heads)


def evaluation_chat(trained: finetune.Trained, adapter: Path | None, *, threads: int) -> ChatModel:
    """The runtime a specialist will be used with: llama.cpp with its adapter on the shipped model if there is
    one (twice as fast here), else the trained model in transformers."""
    if adapter is not None:
        return LlamaCppChat(smollm2_path(), threads=threads, lora=[adapter])
    return TransformersChat(trained.model, trained.tokenizer, name="trained")


def untrained_chat(base: str | Path | None, *, threads: int) -> ChatModel:
    """The model before fine-tuning, run as its specialist is: the shipped GGUF in llama.cpp, or the base folder."""
    if base is None:
        return LlamaCppChat(smollm2_path(), threads=threads)
    model, tokenizer = finetune.load_model(base, threads=threads)
    return TransformersChat(model, tokenizer, name="untrained")


def _write_specialist(folder: Path, record: dict, records: Sequence[dict], adapter: Path | None) -> None:
    """specialist.json, the held-out records, and the llama.cpp LoRA GGUF (LoRA runs), into the saved folder."""
    if adapter is not None:
        shutil.copyfile(adapter, folder / ADAPTER_GGUF)
    heldout = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records if r["split"] == "heldout")
    (folder / "heldout.jsonl").write_text(heldout, encoding="utf-8")
    (folder / RECORD_FILE).write_text(json.dumps(record, indent=1), encoding="utf-8")


def build_key(config: FineTuneConfig, data: dict, *, base: dict) -> str:
    """16 hex digits over the records, the config, the base model, the fine-tuning code and library versions."""
    parts = [data["records_sha256"], repr(config), json.dumps(base, sort_keys=True), finetune.training_code(),
             *[f"{p} {package_version(p)}" for p in finetune.VERSIONED]]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _file_hashes(files: dict[str, Path]) -> dict[str, dict]:
    return {name: {"path": f"{path.parent.name}/{path.name}", "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
            for name, path in files.items()}


def _sha256_json(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def ragkit_commit() -> str | None:
    """The project's git commit (with '+changes' if the tree differs from it), or None outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_DIR, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=PROJECT_DIR,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+changes" if dirty else "")


if __name__ == "__main__":  # `make specialists`: build every specialist (or those named) once
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for name in sys.argv[1:] or list(JOBS):
        built = build_specialist(name, progress=False)
        print(f"{name} specialist {'already built' if built.get('reused') else 'built'}: held-out {built['heldout']}")
