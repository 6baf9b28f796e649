"""The reader specialist's pilot: a span head against a generative LoRA with decoding constrained to spans of
the passages, both trained on the same reader records (training splits only) and scored on the same held-out
records (the held-out tenth of the training data, never a benchmark's test questions).

    python -m benchmarks.reader_pilot [--examples 400] [--heldout 200]   (29 min on 2 cores)

Prints per arm: EM and token F1 (SQuAD's), training tokens/s and minutes, ms per answer, and what each needs to
run; writes benchmarks/results/reader-pilot.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.span_head import SpanReader, train_reader
from ragkit.evaluate import exact_match, mean, token_f1
from ragkit.models.jobs import reader_messages
from ragkit.passages import NOT_IN_PASSAGES, passage_body
from ragkit.train import finetune
from ragkit.train.finetune import FineTuneConfig
from ragkit.train.records.reader import build_records
from ragkit.train.records.specialists import heldout_sample

RESULTS = Path(__file__).parent / "results" / "reader-pilot.json"
CONFIG = FineTuneConfig(max_length=512, lora_rank=8, lora_alpha=16.0, batch_size=8)


def chat_messages(record: dict) -> list[dict]:
    """The generative reader's prompt: the reader specialist's (ragkit.models.jobs.reader_messages)."""
    return reader_messages(record["question"], record["passages"])


def spans_allowed(tokenizer, record: dict):
    """prefix_allowed_tokens_fn for generate: the next token continues some span of a passage or an option."""
    sequences = [tokenizer(" " + passage_body(t, x), add_special_tokens=False)["input_ids"]
                 for t, x in record["passages"]]
    sequences += [tokenizer(" " + o, add_special_tokens=False)["input_ids"] for o in ("yes", "no", NOT_IN_PASSAGES)]
    eos = tokenizer.eos_token_id

    def allowed(_batch: int, ids, prompt_length: int) -> list[int]:
        made = ids[prompt_length:].tolist()
        found = {seq[i + len(made)] for seq in sequences for i in range(len(seq) - len(made))
                 if seq[i: i + len(made)] == made}
        return sorted(found | ({eos} if made else set())) or [eos]

    return allowed


def generate(model, tokenizer, record: dict) -> str:
    """The generative reader's answer, constrained to spans of the passages."""
    import torch

    prompt = tokenizer.apply_chat_template(chat_messages(record), tokenize=False, add_generation_prompt=True)
    ids = torch.tensor([tokenizer(prompt, add_special_tokens=False)["input_ids"]])
    rule = spans_allowed(tokenizer, record)
    with torch.inference_mode():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=16, do_sample=False,
                             eos_token_id=tokenizer.eos_token_id,
                             pad_token_id=tokenizer.pad_token_id,
                             prefix_allowed_tokens_fn=lambda b, x: rule(b, x, ids.shape[1]))
    return tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True).strip()


def scores(predictions: list[str], heldout: list[dict], seconds: list[float]) -> dict:
    """EM, F1, the share answered NOT_IN_PASSAGES, and ms per answer, overall and per source."""
    gold = [r["answer"].strip() for r in heldout]
    rows = {"n": len(gold), "em": mean([exact_match(p, g) for p, g in zip(predictions, gold)]),
            "f1": mean([token_f1(p, g) for p, g in zip(predictions, gold)]),
            "ms_per_answer": 1000 * float(np.median(seconds))}
    for source in sorted({r["source"] for r in heldout}):
        pairs = [(p, g) for p, g, r in zip(predictions, gold, heldout) if r["source"] == source]
        rows[f"f1[{source}]"] = mean([token_f1(p, g) for p, g in pairs])
    return rows


def timed(answer, heldout: list[dict]) -> tuple[list[str], list[float]]:
    predictions, seconds = [], []
    for record in heldout:
        started = time.perf_counter()
        predictions.append(answer(record))
        seconds.append(time.perf_counter() - started)
    return predictions, seconds


def span_arm(train: list[dict], heldout: list[dict], config: FineTuneConfig) -> dict:
    trained = train_reader(train, config=config, progress=False)
    reader = SpanReader(trained.model, trained.head, trained.tokenizer)
    predictions, seconds = timed(lambda r: reader.answer_passages(r["question"], r["passages"]).text, heldout)
    return {"arm": "span head (LoRA + start/end head)", "runtime": "transformers (torch), one forward pass",
            **_report(trained.report), **scores(predictions, heldout, seconds), "examples": predictions[:20]}


def generative_arm(train: list[dict], heldout: list[dict], config: FineTuneConfig) -> dict:
    trained = finetune.train(train, config=config, progress=False)
    predictions, seconds = timed(lambda r: generate(trained.model, trained.tokenizer, r), heldout)
    return {"arm": "generative LoRA, decoding constrained to spans", "runtime":
            "transformers generate with a prefix rule (llama.cpp has no span constraint short of a grammar per call)",
            **_report(trained.report), **scores(predictions, heldout, seconds), "examples": predictions[:20]}


def _report(report) -> dict:
    return {"train_examples": report.train_examples, "steps": report.steps, "train_minutes": report.seconds / 60,
            "train_tokens_per_second": report.tokens_per_second, "first_loss": report.first_loss,
            "last_loss": report.last_loss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=400)
    parser.add_argument("--heldout", type=int, default=200)
    args = parser.parse_args()
    records, counts = build_records()
    train = [r for r in records if r["split"] == "train"]
    train = [train[i] for i in np.random.default_rng(0).permutation(len(train))[: args.examples]]
    heldout = heldout_sample(records, args.heldout)
    config = FineTuneConfig(**{**CONFIG.__dict__, "max_steps": args.examples // CONFIG.batch_size})
    arms = [span_arm(train, heldout, config), generative_arm(train, heldout, config)]
    result = {"records": counts, "train_examples": len(train), "heldout": len(heldout), "config": config.__dict__,
              "heldout_gold": [r["answer"].strip() for r in heldout[:20]], "arms": arms}
    RESULTS.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for arm in arms:
        print(f"{arm['arm']}: EM {arm['em']:.3f} F1 {arm['f1']:.3f} "
              f"({', '.join(f'{k} {v:.3f}' for k, v in arm.items() if k.startswith('f1['))}), "
              f"{arm['ms_per_answer']:.0f} ms/answer, training {arm['train_minutes']:.1f} min at "
              f"{arm['train_tokens_per_second']:.0f} tokens/s, loss {arm['first_loss']:.2f} -> {arm['last_loss']:.2f}")


if __name__ == "__main__":
    main()
