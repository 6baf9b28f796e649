"""Memory of the default chat model over many long prompts: 200 chat calls of ~1,000-token prompts.

Run: make bench-memory (or .venv/bin/python benchmarks/chat_memory.py [--calls N]). Target: the process's
resident memory grows by less than 150 MiB over the calls (llama.cpp's server once kept every finished
prompt's state in RAM, up to 8 GiB; ragkit.llm turns that store off). Prints one table and writes
benchmarks/results/chat-memory.json with the environment.
"""

from __future__ import annotations

import argparse

from harness import StageRecorder, current_rss_mb, write_result
from ragkit import load_docs
from ragkit.config import load_settings
from ragkit.llm import LlamaCppChat, smollm2_path

TARGET_GROWTH_MB = 150


def long_prompts(count: int, *, chars: int = 4_300) -> list[list[dict]]:
    """count different prompts of about 1,000 tokens each, made of the handbook's English documents."""
    texts = [doc.text for doc in load_docs() if doc.lang == "en"]
    prompts = []
    for number in range(count):
        context = " ".join(texts[(number + i) % len(texts)] for i in range(12))[:chars]
        prompts.append([{"role": "system", "content": "Answer in one word."},
                        {"role": "user", "content": f"{context}\n\nQuestion {number}: which topic is this?"}])
    return prompts


def main() -> None:
    """Time the calls, sample the resident memory before and after, and write the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    rec = StageRecorder()
    with rec.stage("chat: load the model"):
        chat = LlamaCppChat(smollm2_path(), threads=load_settings().threads)
    chat.chat("warm up", max_tokens=2)
    before = current_rss_mb()
    with rec.stage(f"chat: {args.calls} calls of ~1,000-token prompts", items=args.calls):
        tokens = sum(chat.chat(prompt, max_tokens=2).prompt_tokens for prompt in long_prompts(args.calls))
    growth = current_rss_mb() - before
    row = {"calls": args.calls, "mean prompt tokens": round(tokens / args.calls),
           "RSS before (MiB)": round(before), "growth (MiB)": round(growth),
           f"under {TARGET_GROWTH_MB} MiB": growth < TARGET_GROWTH_MB}
    write_result("chat-memory", [row], rec)


if __name__ == "__main__":
    main()
