"""Memory of the default chat model over many long prompts: 200 chat calls of ~1,000-token prompts.

What it measures, how to run it (`python -m benchmarks.chat_memory`) and what it recorded: benchmarks/README.md.
"""

from __future__ import annotations

import argparse

from benchmarks.harness import StageRecorder, current_rss_mb, write_result
from ragkit import load_docs, load_settings
from ragkit.models.llm import LlamaCppChat, smollm2_path

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
