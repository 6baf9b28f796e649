"""Lesson 08's whole pipeline scored on its answers, with the reader the next model up: Qwen2.5-Coder-1.5B beside
the default SmolLM2-135M, both prompted with the course's one worked example (ragkit.generate.answering.ChatReader).

The passages are lesson 08's: the default chat model's multi-query questions, each searched densely (top 20), fused
by RRF and reranked by the course cross-encoder against the question, top 5; beside them the gold passages alone
and no passage (closed book). By default on lesson 08's answer sample (every third question of each style, 22 of
56), so the rows sit beside the lesson's own; --all reads every question. Exact match, token F1 and contains-gold
against the answer and its aliases, with paired intervals.

What it measures, how to run it (`python -m benchmarks.course_reader`) and what it recorded: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence

from benchmarks.harness import StageRecorder, add_output_options, set_threads, significance, write_result
from ragkit import Hit, Question, load_docs, load_questions, models
from ragkit.evaluate import Evaluation, evaluate_reader, table_rows
from ragkit.generate import ChatReader
from ragkit.search import DenseIndex, multi_query, reciprocal_rank_fusion, rerank

CONTEXT = 5  # passages the reader is shown, as in lesson 08
DEPTH = 20  # each query's dense hits, fused, then reranked
READERS = {"SmolLM2-135M": "smollm2", "Qwen2.5-Coder-1.5B": "qwen-1.5b"}
METRICS = ("f1", "exact_match", "contains_gold")


def answer_sample(questions: Sequence[Question]) -> list[Question]:
    """Lesson 08's answer sample: every third question of each style, in order."""
    return [q for i, q in enumerate(questions) if sum(p.style == q.style for p in questions[:i]) % 3 == 0]


def pipeline_contexts(questions: Sequence[Question], docs, rec: StageRecorder) -> dict[str, dict[str, list[Hit]]]:
    """Each question's passages for every context: the full pipeline's top 5, the gold passages, none."""
    chat, dense, course = models.chat_model(), DenseIndex(docs, collection="course-reader"), models.reranker()
    with rec.stage("rewrite, search, fuse, rerank", items=len(questions)):
        full = {}
        for q in questions:
            lists = [dense.search(query, k=DEPTH) for query in multi_query(q.query, chat=chat).queries]
            full[q.id] = rerank(q.query, reciprocal_rank_fusion(lists, limit=DEPTH), course)[:CONTEXT]
    by_id = {doc.id: doc for doc in docs}
    return {"full pipeline": full,
            "gold passages": {q.id: [Hit(by_id[doc_id], 1.0) for doc_id in q.relevant] for q in questions},
            "closed book": {q.id: [] for q in questions}}


def read_all(questions: Sequence[Question], contexts: Mapping[str, Mapping[str, list[Hit]]],
             readers: Mapping[str, str], rec: StageRecorder) -> dict[str, Evaluation]:
    """Every reader on every context, each reader's model asked for once."""
    runs = {}
    for label, setting in readers.items():
        reader = ChatReader(models.chat_model(setting))
        for context, by_question in contexts.items():
            with rec.stage(f"{label}, {context}", items=len(questions)):
                runs[f"{label}, {context}"] = evaluate_reader(lambda q, c=by_question: c[q.id], questions,
                                                              reader=reader)
    return runs


def gain_pairs(readers: Sequence[str]) -> dict[str, tuple[str, str]]:
    """The comparisons: each reader's pipeline over its closed book, and each bigger reader over the first."""
    first = readers[0]
    pairs = {f"{label}: full pipeline over closed book": (f"{label}, full pipeline", f"{label}, closed book")
             for label in readers}
    pairs |= {f"{label} over {first}: {context}": (f"{label}, {context}", f"{first}, {context}")
              for label in readers[1:] for context in ("full pipeline", "gold passages", "closed book")}
    return pairs


def paired_gains(runs: Mapping[str, Evaluation], pairs: Mapping[str, tuple[str, str]]) -> dict:
    """The significance() entry of every pair, each gain row named after its comparison."""
    found = {"bases": [], "metrics": list(METRICS), "gains": [], "per_question": {}}
    for name, (new, base) in pairs.items():
        entry = significance({new: runs[new], base: runs[base]}, [base], METRICS)
        found["bases"].append(base)
        found["gains"] += [{**row, "comparison": name} for row in entry["gains"]]
        found["per_question"] |= entry["per_question"]
    return found


def answers_table(questions: Sequence[Question], runs: Mapping[str, Evaluation]) -> list[dict]:
    """Every question's answers from the full pipeline's passages, per reader, for reading by hand."""
    rows = {q.id: {"id": q.id, "style": q.style, "gold": q.answer} for q in questions}
    for name, run in runs.items():
        if name.endswith(", full pipeline"):
            for row in run.per_question:
                rows[row["id"]][name.split(",")[0]] = row["prediction"]
    return list(rows.values())


def main(argv: Sequence[str] | None = None) -> int:
    """Build the contexts, read them with each model, write results/course-reader[-all].json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--all", action="store_true", help="every gold question, not lesson 08's 22")
    parser.add_argument("--readers", nargs="+", default=list(READERS), choices=list(READERS),
                        help="the readers, the first being the base of the comparisons")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions (a quick look)")
    add_output_options(parser, threads_help="CPU threads for the models")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    rec = StageRecorder()
    docs = load_docs()
    questions = load_questions(corpus=docs)
    questions = (questions if args.all else answer_sample(questions))[:args.limit]
    contexts = pipeline_contexts(questions, docs, rec)
    readers = {label: READERS[label] for label in args.readers}
    runs = read_all(questions, contexts, readers, rec)
    gains = paired_gains(runs, gain_pairs(list(readers)))
    extra: dict[str, object] = {"questions": len(questions), "context": CONTEXT,
                                "sample": "every question" if args.all else "lesson 08's answer sample",
                                "readers": readers, "answers": answers_table(questions, runs)}
    name = "course-reader" + ("-all" if args.all else "") + ("-subset" if args.limit else "")
    write_result(name, table_rows(runs, label="rung", timing=True), rec, extra, results_dir=args.results_dir,
                 gains=gains)
    return 0


if __name__ == "__main__":
    sys.exit(main())
