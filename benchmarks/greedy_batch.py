"""Greedy replies under another llama.cpp batch size: how many of the course chat model's replies change?

Another CPU gives other greedy replies because its kernels sum in another order. A smaller batch (n_batch and
n_ubatch) changes the order of the sums on this CPU too, with no sampling. For each batch size, the number of lesson
03's multi-query requests (one per gold question, greedy, schema-constrained) whose reply differs from the one at
llama.cpp's default batch size; no model store.

    python -m benchmarks.greedy_batch --batches 64 16
"""

from __future__ import annotations

import argparse

from benchmarks.harness import StageRecorder, positive_int, write_result
from ragkit import load_docs, load_questions
from ragkit.models.llm import LlamaCppChat, smollm2_path
from ragkit.search import multi_query


def chat_with_batch(batch: int | None) -> LlamaCppChat:
    """The course chat model, at llama.cpp's default batch size (None) or at `batch` tokens a (micro-)batch."""
    return LlamaCppChat(smollm2_path(), threads=2, batch=batch)


def replies(chat: LlamaCppChat, queries: list[str]) -> list[str]:
    """The raw multi-query reply to each query."""
    return [multi_query(query, chat=chat).raw for query in queries]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=positive_int, nargs="+", default=[64, 16])
    args = parser.parse_args(argv)
    queries = [q.query for q in load_questions(corpus=load_docs())]
    rec = StageRecorder()
    with rec.stage("default batch", items=len(queries)):
        recorded = replies(chat_with_batch(None), queries)
    rows = []
    for batch in args.batches:
        with rec.stage(f"batch {batch}", items=len(queries)):
            other = replies(chat_with_batch(batch), queries)
        changed = sum(a != b for a, b in zip(recorded, other))
        rows.append({"batch": batch, "requests": len(queries), "replies changed": changed,
                     "share changed": round(changed / len(queries), 3)})
    write_result("greedy-batch", rows, rec, {"requests": "lesson 03's multi-query request for each gold question"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
