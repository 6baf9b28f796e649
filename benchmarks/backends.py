"""Latency and throughput of the active chat model and embedder on this machine.

Run: make bench-backends (or .venv/bin/python benchmarks/backends.py). Honors RAGKIT_* settings.
Prints one table and the stages, and writes benchmarks/results/backends.json with the environment.
"""

from __future__ import annotations

import statistics

from harness import StageRecorder, write_result
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


def main() -> None:
    """Time both backends and write the result with the environment (versions, cores, settings)."""
    rec = StageRecorder()
    write_result("backends", [time_chat(rec), time_embedder(rec)], rec)


if __name__ == "__main__":
    main()
