"""How a specialist is trained and run: LoRA against full fine-tuning, llama.cpp against transformers.

What it measures, how to run it (`python -m benchmarks.specialist_training`) and what it recorded: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness import StageRecorder, positive_int, write_result
from ragkit import load_settings
from ragkit.models import COMMITTED_DIR, QWEN, TransformersChat, load_specialist, qwen_path, specialist_record
from ragkit.models.finetuned import base_model_dir, dequantise_gguf, load_finetuned, load_model
from ragkit.train.finetune import FineTuneConfig, train
from ragkit.train.heldout import heldout_scores
from ragkit.train.records.specialists import build_records

METHODS = {"lora": FineTuneConfig(max_length=192, lora_rank=8, lora_alpha=16.0),
           "full": FineTuneConfig(method="full", learning_rate=1e-4, max_length=192)}


def peak_mib() -> float:
    """This process's peak resident memory so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def replies_per_second(chat, records) -> tuple[dict, float]:
    """Step-F1 scores of the chat model on the records, and its generated tokens per second."""
    tokens, seconds = 0, 0.0
    original = chat.chat

    def counted(messages, **options):
        nonlocal tokens, seconds
        reply = original(messages, **options)
        tokens, seconds = tokens + reply.completion_tokens, seconds + reply.seconds
        return reply

    chat.chat = counted
    scores = heldout_scores(chat, records, job="decomposer")
    return scores, tokens / seconds if seconds else 0.0


def base_folder(base: str, rec: StageRecorder) -> Path | None:
    """The transformers folder of a Qwen rung, dequantised from its GGUF once; None for the default SmolLM2."""
    if base == "smollm2":
        return None
    gguf = qwen_path(base)
    folder = base_model_dir(gguf)
    if not (folder / "config.json").exists():
        with rec.stage(f"dequantise: {base}"):
            dequantise_gguf(gguf, folder)
    return folder


def one_pass_minutes(tokens_per_second: float) -> float:
    """Minutes one pass over the committed decomposer's training tokens would take at this rate."""
    tokens = specialist_record(COMMITTED_DIR / "decomposer")["report"]["tokens"]
    return tokens / tokens_per_second / 60 if tokens_per_second else float("inf")


def untaught_row(base: Path, heldout, threads: int, rec: StageRecorder) -> dict:
    """The base model before any training, asked with the job's own short prompt: the step F1 to beat."""
    model, tokenizer = load_model(base, threads=threads)
    with rec.stage("held-out: untaught", items=len(heldout)):
        scores, _ = replies_per_second(TransformersChat(model, tokenizer, name="untaught"), heldout)
    return {"row": "untaught, the job's prompt", "step F1": round(scores["step_f1"], 3),
            "right count": round(scores["right_count"], 3)}


def training_rows(train_records, heldout, steps: int, threads: int, rec: StageRecorder, *,
                  methods: Sequence[str] = tuple(METHODS), base: Path | None = None) -> list[dict]:
    """One row per method: tokens/s, peak memory, loss and held-out step F1 after the same steps."""
    rows = []
    for method in methods:
        config = FineTuneConfig(**{**METHODS[method].__dict__, "max_steps": steps})
        with rec.stage(f"train: {method}, {steps} steps", items=steps * config.batch_size):
            trained = train(train_records, config=config, base=base, threads=threads, progress=False)
        chat = TransformersChat(trained.model, trained.tokenizer, name=f"{method} after {steps} steps")
        with rec.stage(f"held-out: {method}", items=len(heldout)):
            scores, _ = replies_per_second(chat, heldout)
        report = trained.report
        rows.append({"row": f"train {method}, {steps} steps", "tokens/s": round(report.tokens_per_second),
                     "loss first->last": f"{report.first_loss:.2f} -> {report.last_loss:.2f}",
                     "step F1": round(scores["step_f1"], 3), "right count": round(scores["right_count"], 3),
                     "trainable params": sum(p.numel() for p in trained.model.parameters() if p.requires_grad),
                     "peak MiB": round(peak_mib()),
                     "one pass, min": round(one_pass_minutes(report.tokens_per_second))})
        del trained, chat
    return rows


def runtime_rows(heldout, threads: int, rec: StageRecorder) -> list[dict]:
    """The committed decomposer through llama.cpp and through transformers: tokens/s and step F1."""
    folder = COMMITTED_DIR / "decomposer"
    with rec.stage("load: llama.cpp + LoRA GGUF"):
        llama = load_specialist(folder, threads=threads)
    with rec.stage("load: transformers + peft (merged)"):
        model, tokenizer, _ = load_finetuned(folder, threads=threads)
        torch_chat = TransformersChat(model, tokenizer, name="decomposer (transformers)")
    rows = []
    for name, chat in (("llama.cpp (Q4_1 + f16 LoRA)", llama.backend), ("transformers (f32, merged)", torch_chat)):
        started = time.perf_counter()
        with rec.stage(f"answer: {name}", items=len(heldout)):
            scores, speed = replies_per_second(chat, heldout)
        rows.append({"row": f"run the committed decomposer: {name}", "tokens/s": round(speed),
                     "step F1": round(scores["step_f1"], 3), "right count": round(scores["right_count"], 3),
                     "ms/question": round((time.perf_counter() - started) / len(heldout) * 1000)})
    return rows


def main() -> None:
    """Run both comparisons and write the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=positive_int, default=60, help="training steps per method")
    parser.add_argument("--heldout", type=positive_int, default=60, help="held-out questions to score")
    parser.add_argument("--threads", type=positive_int, default=load_settings().threads)
    parser.add_argument("--base", choices=("smollm2", *QWEN), default="smollm2",
                        help="the model to teach; a Qwen rung is a LoRA pilot (no full run, no committed decomposer), "
                             "written to specialist-training-<base>.json")
    args = parser.parse_args()
    rec = StageRecorder()
    records, _ = build_records("decomposer")
    train_records = [r for r in records if r["split"] == "train"]
    heldout = [r for r in records if r["split"] == "heldout"][: args.heldout]
    base = base_folder(args.base, rec)
    if base is None:
        rows = training_rows(train_records, heldout, args.steps, args.threads, rec)
        rows += runtime_rows(heldout, args.threads, rec)
    else:
        rows = [untaught_row(base, heldout, args.threads, rec)]
        rows += training_rows(train_records, heldout, args.steps, args.threads, rec, methods=("lora",), base=base)
    columns = list(dict.fromkeys(key for row in rows for key in row))
    name = "specialist-training" + ("" if args.base == "smollm2" else f"-{args.base}")
    write_result(name, [{c: row.get(c, "") for c in columns} for row in rows], rec, {"args": vars(args)})


if __name__ == "__main__":
    main()
