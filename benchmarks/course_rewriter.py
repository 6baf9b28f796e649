"""Query rewriting on the course's 56 gold questions: the few-shot chat model against the rewriter specialist.

Bag of words (lesson 01's whitespace words, no folding), BM25 and dense search on the question, on its single
rewrite (the specialist's is a keyword query) and on the multi-query expansion fused with the original by RRF,
with paired intervals over the question alone; and, for the 4 questions typed without diacritics, the rank of the
answer under bag of words (which cannot match "nghi" with "nghỉ") for the question, each rewrite and the question
typed with its diacritics by hand.

What it measures, how to run it (`python -m benchmarks.course_rewriter`) and what it recorded:
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence

from benchmarks.harness import StageRecorder, add_output_options, set_threads, significance, write_result
from ragkit import Question, Search, load_docs, load_questions, models, search_tokenize
from ragkit.evaluate import Evaluation, evaluate_pipeline, table_rows
from ragkit.search import BagOfWordsIndex, BM25Index, DenseIndex, fuse_queries, multi_query, rewrite_query

METRICS = ("mrr@10", "recall@5")
DEPTH = 20  # each query's hits fused by RRF, as lesson 03
# the no-diacritics questions typed with their diacritics, by hand: what a perfect restoration would search with
HAND_TYPED = {"q41": "Nghỉ ốm cần nhắn Slack lúc nào?", "q42": "Được nghỉ phép năm bao nhiêu ngày?",
              "q43": "Tết được nghỉ thêm mấy ngày?", "q44": "Văn phòng Hà Nội được làm ở nhà mấy ngày một tuần?"}


def rewritten(questions: Sequence[Question], chat, rec: StageRecorder, label: str) -> tuple[dict, dict]:
    """Each question's single rewrite and multi-query expansion by one model, and the ms each took a question."""
    with rec.stage(f"rewrite, {label}", items=len(questions)):
        started = time.perf_counter()
        single = {q.query: rewrite_query(q.query, chat=chat).queries[0] for q in questions}
        single_ms = 1000 * (time.perf_counter() - started) / len(questions)
    with rec.stage(f"multi-query, {label}", items=len(questions)):
        started = time.perf_counter()
        expanded = {q.query: multi_query(q.query, chat=chat).queries for q in questions}
        multi_ms = 1000 * (time.perf_counter() - started) / len(questions)
    return {"single": single, "multi": expanded}, {"single": single_ms, "multi": multi_ms}


def pipelines(searches: Mapping[str, Search], rewrites: Mapping[str, dict]) -> dict[str, Callable]:
    """Every row's pipeline: each retriever on the question, on each model's rewrite and on its expansion."""
    rows: dict[str, Callable] = {}
    for retriever, search in searches.items():
        rows[retriever] = search
        for model, made in rewrites.items():
            rows[f"{retriever} ← rewrite ({model})"] = (
                lambda query, k, s=search, m=made: s(m["single"][query], k=k))
            rows[f"{retriever} ← multi-query ({model}), RRF"] = (
                lambda query, k, s=search, m=made: fuse_queries(s, m["multi"][query], k=k, depth=DEPTH))
    return rows


def gold_rank(search: Search, query: str, question: Question, depth: int = 10) -> int | None:
    """The rank of the question's first relevant document in the query's top depth, or None."""
    ids = [hit.id for hit in search(query, k=depth)]
    return next((rank for rank, doc_id in enumerate(ids, start=1) if doc_id in question.relevant), None)


def diacritics_rows(words: Search, questions: Sequence[Question], rewrites: Mapping[str, dict]) -> list[dict]:
    """For each no-diacritics question: bag of words' rank of the answer for the question, each single rewrite and
    the hand-typed question, with the rewrites' text."""
    rows = []
    for q in (q for q in questions if q.style == "no-diacritics"):
        row = {"id": q.id, "question": q.query, "rank, question": gold_rank(words, q.query, q),
               "rank, hand-typed": gold_rank(words, HAND_TYPED[q.id], q)}
        for model, made in rewrites.items():
            row[f"rewrite ({model})"] = made["single"][q.query]
            row[f"rank, {model}"] = gold_rank(words, made["single"][q.query], q)
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite every question with each model, score every row, write results/course-rewriter.json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--no-specialist", action="store_true", help="the few-shot model's rows only")
    add_output_options(parser, threads_help="CPU threads for the models")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    rec = StageRecorder()
    models_used = {"few-shot": models.chat_model()}
    if not args.no_specialist:  # loaded first: a rewriter that is not built stops the run before any work
        from ragkit.models import specialist
        models_used["specialist"] = specialist("rewriter", threads=args.threads)
    docs = load_docs()
    questions = load_questions(corpus=docs)
    with rec.stage("index (bag of words, BM25, e5)", items=len(docs)):
        searches = {"bag of words": BagOfWordsIndex(docs).search,
                    "BM25": BM25Index(docs, tokenizer=search_tokenize).search,
                    "dense": DenseIndex(docs, collection="course-rewriter").search}
    rewrites, rewrite_ms = {}, {}
    for label, chat in models_used.items():
        rewrites[label], rewrite_ms[label] = rewritten(questions, chat, rec, label)
    results: dict[str, Evaluation] = {name: evaluate_pipeline(pipeline, questions, metrics=("mrr", "recall"),
                                                              ks=(5, 10))
                                      for name, pipeline in pipelines(searches, rewrites).items()}
    gains = {"bases": [], "metrics": list(METRICS), "gains": [], "per_question": {}}
    for retriever in searches:  # each row's gain over its own retriever on the question
        found = significance({n: r for n, r in results.items() if n.split(" ←")[0] == retriever}, [retriever],
                             METRICS)
        for key in ("bases", "gains"):
            gains[key] += found[key]
        gains["per_question"] |= found["per_question"]
    extra = {"questions": len(questions), "rewrite_ms": rewrite_ms, "models": {k: c.name for k, c in
                                                                               models_used.items()},
             "no_diacritics": diacritics_rows(searches["bag of words"], questions, rewrites),
             "rewrites": {label: {q.id: {"single": made["single"][q.query], "multi": list(made["multi"][q.query])}
                                  for q in questions} for label, made in rewrites.items()}}
    name = "course-rewriter" + ("-no-specialist" if args.no_specialist else "")
    write_result(name, table_rows(results, label="rung"), rec, extra, results_dir=args.results_dir, gains=gains)
    for row in extra["no_diacritics"]:
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
