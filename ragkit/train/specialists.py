"""Building a specialist: a job's records, fine-tuning, held-out scores, and the saved folder that
ragkit.models.specialists loads (`make specialists`, or `python -m ragkit.train.specialists JOB...`).

Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

from ragkit.config import PROJECT_DIR, package_version
from ragkit.models.finetuned import load_model
from ragkit.models.jobs import SYSTEMS
from ragkit.models.llm import ChatModel, LlamaCppChat, TransformersChat, smollm2_path
from ragkit.models.specialists import ADAPTER_GGUF, JOBS, RECORD_FILE, built_dir, job_of
from ragkit.train import finetune
from ragkit.train.finetune import FineTuneConfig
from ragkit.train.gguf_lora import lora_to_gguf
from ragkit.train.heldout import heldout_scores
from ragkit.train.records.specialists import build_records, heldout_sample, source_files

# LoRA r8 on every projection of every layer. How long each build took is in its specialist.json (report).
CONFIGS = {
    "decomposer": FineTuneConfig(max_length=192, lora_rank=8, lora_alpha=16.0),
    "answerer": FineTuneConfig(max_length=256, lora_rank=8, lora_alpha=16.0),
    # 240 steps: part of one pass over its records, so that its build is the shortest of the three
    "judge": FineTuneConfig(max_length=320, lora_rank=8, lora_alpha=16.0, max_steps=240),
    # 170 steps (1,360 of its ~6,600 records) fill the hour a build may take; 704 tokens hold four HotpotQA passages
    "reader": FineTuneConfig(max_length=704, lora_rank=8, lora_alpha=16.0, max_steps=170),
    # 420 steps (3,360 of its ~6,800 training records) keep the build under the hour; the easy negatives show it the
    # topic first (trained on hard negatives alone, its loss stayed at chance for yes/no). 288 tokens hold a query
    # and a 600-character passage
    "relevance": FineTuneConfig(max_length=288, lora_rank=8, lora_alpha=16.0, max_steps=420),
    "rewriter": FineTuneConfig(max_length=256, lora_rank=8, lora_alpha=16.0, max_steps=300),
}


def build_specialist(job: str, *, config: FineTuneConfig | None = None, root: str | Path | None = None,
                     out_dir: str | Path | None = None, base: str | Path | None = None, force: bool = False,
                     threads: int = 2, eval_limit: int = 200, progress: bool = True) -> dict:
    """Build the job's records, fine-tune (the default chat model, or base), score on held-out records, save the
    specialist atomically; reuse a build of the same key unless force. Returns its specialist.json record.

    Taught in lessons/09_specialists.ipynb.
    """
    spec = job_of(job)
    config = config or CONFIGS[spec.name]
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
    model, tokenizer = load_model(base, threads=threads)
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
