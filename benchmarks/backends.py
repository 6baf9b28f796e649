"""Latency and throughput of the active chat model and embedder on this machine; prints a table.

Run: make bench-backends (or .venv/bin/python benchmarks/backends.py). Honors RAGKIT_* settings.
"""

from __future__ import annotations

import os
import resource
import statistics
import time

from ragkit import load_docs, models
from ragkit.config import load_settings
from ragkit.evaluate import format_table

PROMPTS = [f"In two sentences, explain company policy number {i} on remote work." for i in range(5)]


def time_chat() -> list[dict]:
    """Load time, then per-call latency and decode rate over a few prompts."""
    started = time.perf_counter()
    llm = models.chat_model()
    rows = [{"stage": f"chat: load {llm.name}", "seconds": time.perf_counter() - started, "rate": ""}]
    llm.chat("warm up", max_tokens=4)
    replies = [llm.chat(prompt, max_tokens=80) for prompt in PROMPTS]
    tokens = sum(r.completion_tokens for r in replies)
    seconds = sum(r.seconds for r in replies)
    rows.append({"stage": f"chat: median call ({tokens // len(replies)} tokens)",
                 "seconds": statistics.median(r.seconds for r in replies), "rate": f"{tokens / seconds:.1f} tokens/s"})
    return rows


def time_embedder() -> list[dict]:
    """Load time, one batch of every handbook doc, and single-query latency."""
    texts = [doc.text for doc in load_docs()]
    started = time.perf_counter()
    embedder = models.embedder()
    rows = [{"stage": f"embed: load {embedder.name}", "seconds": time.perf_counter() - started, "rate": ""}]
    embedder.embed_passages(texts[:2])
    started = time.perf_counter()
    embedder.embed_passages(texts)
    seconds = time.perf_counter() - started
    rows.append({"stage": f"embed: {len(texts)} handbook docs", "seconds": seconds, "rate": f"{len(texts) / seconds:.1f} docs/s"})
    started = time.perf_counter()
    for _ in range(20):
        embedder.embed_queries(["How many sick days can I take without a doctor's note?"])
    rows.append({"stage": "embed: one query", "seconds": (time.perf_counter() - started) / 20, "rate": ""})
    return rows


def main() -> None:
    """Print the table with the settings, cores and peak memory."""
    settings = load_settings()
    rows = time_chat() + time_embedder()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"llm={settings.llm} embedder={settings.embedder} threads={settings.threads} cores={os.cpu_count()}")
    print(format_table(rows))
    print(f"peak memory: {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
