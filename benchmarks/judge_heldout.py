"""The step judge before and after: each judge on records no judge trained on, and on the SciFact test claims.

Three sets: the StrategyQA records the judge build holds out, the SciFact train claims it holds out, and the 300
SciFact test claims (the claims the SciFact benchmark scores; the judge trained on them until 2026-12-07, and no
longer does). Each judge answers the same records; the gain of each judge over the first is paired per record, with
its bootstrap 95% interval.

    python -m benchmarks.judge_heldout --judge before=/path/to/old/judge --judge after=models/specialists/judge

Without --judge: the committed judge. The model without an adapter is always measured too, as "untrained".
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness import StageRecorder, positive_int, write_result
from ragkit import load_settings
from ragkit.corpus import read_jsonl
from ragkit.evaluate import bootstrap_interval
from ragkit.models import COMMITTED_DIR, LlamaCppChat, load_specialist
from ragkit.models.jobs import PARSERS
from ragkit.models.llm import smollm2_path
from ragkit.models.specialists import job_of
from ragkit.train.records.specialists import build_records, scifact_judgements, source_files

JOB = "judge"


def record_sets(per_set: int, seed: int) -> dict[str, list[dict]]:
    """{set name: a seeded sample of at most per_set records}, in file order."""
    records, _ = build_records(JOB)
    held = [r for r in records if r["split"] == "heldout"]
    files = source_files(JOB)
    sentences = {str(doc["_id"]): doc for doc in read_jsonl(files["scifact_sentences"])}
    test = scifact_judgements(read_jsonl(files["scifact_test_claims"]), sentences, rng=random.Random(seed))
    sets = {"StrategyQA, held out": [r for r in held if r["source"].startswith("strategyqa:")],
            "SciFact train claims, held out": [r for r in held if r["source"].startswith("scifact:")],
            "SciFact test claims (the benchmark's)": test}
    return {name: sample(rows, per_set, seed) for name, rows in sets.items()}


def sample(rows: Sequence[dict], n: int, seed: int) -> list[dict]:
    """At most n rows, chosen with the seed, kept in their order."""
    if len(rows) <= n:
        return list(rows)
    return [rows[i] for i in sorted(random.Random(seed).sample(range(len(rows)), n))]


def verdicts(chat, records: Sequence[dict]) -> list[str]:
    """The judge's label for each record, as the held-out score reads it."""
    spec = job_of(JOB)
    return [PARSERS[JOB](chat.chat(r["messages"], max_tokens=spec.max_tokens).text) for r in records]


def rows_for(name: str, records: Sequence[dict], predicted: Sequence[str],
             first: Sequence[float] | None) -> tuple[dict, list[float]]:
    """One table row (accuracy overall and per gold label, the paired gain over the first judge) and each record's
    score."""
    right = [float(p == r["answer"]) for p, r in zip(predicted, records)]
    row = {"judge": name, "n": len(records), "accuracy": round(sum(right) / len(right), 3)}
    for label in ("supports", "contradicts", "unrelated"):
        picked = [ok for ok, r in zip(right, records) if r["answer"] == label]
        row[f"{label} (n)"] = f"{sum(picked) / len(picked):.2f} ({len(picked)})" if picked else "-"
    row["gain over the first [95%]"] = ""
    if first is not None:
        differences = [a - b for a, b in zip(right, first)]
        low, high = bootstrap_interval(differences)
        row["gain over the first [95%]"] = f"{sum(differences) / len(differences):+.3f} [{low:+.3f}, {high:+.3f}]"
    return row, right


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", action="append", default=[], metavar="NAME=FOLDER",
                        help="a judge folder to measure (repeat; default: the committed judge)")
    parser.add_argument("--per-set", type=positive_int, default=200, help="records per set (seeded sample)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    threads = load_settings().threads
    named = [item.split("=", 1) for item in args.judge] or [["committed", str(COMMITTED_DIR / JOB)]]
    judges = {name: load_specialist(Path(folder), threads=threads) for name, folder in named}
    judges["untrained"] = LlamaCppChat(smollm2_path(), threads=threads)
    sets = record_sets(args.per_set, args.seed)
    table, recorder = [], StageRecorder()
    for set_name, records in sets.items():
        first = None
        for name, chat in judges.items():
            with recorder.stage(f"{name} on {set_name}", items=len(records)):
                predicted = verdicts(chat, records)
            row, right = rows_for(name, records, predicted, first)
            table.append({"set": set_name, **row})
            first = right if first is None else first
    write_result("judge-heldout", table, recorder, extra={"judges": dict(named), "per_set": args.per_set,
                                                        "seed": args.seed})


if __name__ == "__main__":
    main()
