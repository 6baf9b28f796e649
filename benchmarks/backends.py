"""Latency and throughput of the active chat model and embedder on this machine.

What it measures, how to run it (`python -m benchmarks.backends`) and what it recorded: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence

from benchmarks.harness import StageRecorder, write_result
from ragkit import load_docs, models

PROMPTS = [f"In two sentences, explain company policy number {i} on remote work." for i in range(5)]
QUERY = "How many sick days can I take without a doctor's note?"


def time_chat(rec: StageRecorder) -> dict:
    """Load time, then per-call latency and decode rate over a few prompts."""
    with rec.stage("chat: load the model"):
        llm = models.chat_model()
    llm.chat("warm up", max_tokens=4)
    with rec.stage(f"chat: {len(PROMPTS)} calls of up to 80 tokens", items=len(PROMPTS)):
        replies = [llm.chat(prompt, max_tokens=80) for prompt in PROMPTS]
    tokens = sum(r.completion_tokens for r in replies)
    return {"backend": f"chat: {llm.name}", "median call (s)": statistics.median(r.seconds for r in replies),
            "rate": f"{tokens / sum(r.seconds for r in replies):.1f} tokens/s"}


def time_embedder(rec: StageRecorder) -> dict:
    """Load time, one batch of every handbook doc, and single-query latency."""
    texts = [doc.text for doc in load_docs()]
    with rec.stage("embed: load the model"):
        embedder = models.embedder()
    embedder.embed_passages(texts[:2])
    with rec.stage(f"embed: {len(texts)} handbook docs in one batch", items=len(texts)):
        embedder.embed_passages(texts)
    with rec.stage("embed: 20 single queries", items=20):
        for _ in range(20):
            embedder.embed_queries([QUERY])
    batch = rec.stages[-2]
    return {"backend": f"embed: {embedder.name}", "median call (s)": rec.stages[-1].seconds / 20,
            "rate": f"{batch.items_per_second:.1f} docs/s"}


def main(argv: Sequence[str] | None = None) -> None:
    """Time both backends and write the result with the environment (versions, cores, settings)."""
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)  # no options: --help only
    rec = StageRecorder()
    write_result("backends", [time_chat(rec), time_embedder(rec)], rec)


if __name__ == "__main__":
    main()
