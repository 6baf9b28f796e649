"""Multi-hop retrieval on the course's own 47 questions: the question alone, lesson 06's iteration, CoT-RAG.

What it measures, how to run it (`python -m benchmarks.course_multihop`) and what it recorded: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence

from benchmarks.harness import StageRecorder, significance, write_result
from ragkit import models
from ragkit.corpus import DATA_DIR, Hit, load_docs, load_questions
from ragkit.cot_rag import decompose
from ragkit.dense import DenseIndex, HybridIndex
from ragkit.evaluate import Evaluation, evaluate_pipeline, table_rows
from ragkit.follow_up import follow_up_search
from ragkit.fusion import interleave, reciprocal_rank_fusion
from ragkit.lexical import BM25Index
from ragkit.reasoning import Meter
from ragkit.self_ask import self_ask
from ragkit.text import search_tokenize

BUDGET = 5
RRF_DEPTH = 30  # each ranking fused by RRF is cut here, as the hybrid's own legs
MAX_STEPS = 4


def plan_first(search, chat, questions) -> tuple[dict[str, list[Hit]], float]:
    """Each question's planned steps searched (5 each) and interleaved; seconds per question."""
    started, evidence = time.perf_counter(), {}
    for q in questions:
        steps, _, _ = decompose(q.query, Meter(chat), max_steps=MAX_STEPS, constrain="auto")
        evidence[q.query] = interleave([search(step, k=BUDGET) for step in steps], BUDGET)
    return evidence, (time.perf_counter() - started) / len(questions)


def iterative(search, chat, questions, *, append_question: bool) -> tuple[dict[str, list[Hit]], dict, float]:
    """Each question's self-ask evidence at the budget (steps interleaved), the same steps' rankings fused by RRF
    with the question's own, and the seconds per question."""
    started, interleaved, fused = time.perf_counter(), {}, {}
    for q in questions:
        run = self_ask(q.query, search, decomposer=chat, max_steps=MAX_STEPS, k=RRF_DEPTH,
                       append_question=append_question)
        interleaved[q.query] = interleave([list(step.hits[:BUDGET]) for step in run.steps], BUDGET)
        rankings = [search(q.query, k=RRF_DEPTH), *(list(step.hits) for step in run.steps)]
        fused[q.query] = reciprocal_rank_fusion(rankings, limit=BUDGET)
    return interleaved, fused, (time.perf_counter() - started) / len(questions)


BASES = ("question alone", "iterative, no model (lesson 06)")  # every pipeline's gain is given over these
METRICS = (f"all_gold@{BUDGET}", f"recall@{BUDGET}")


def scored(runs: Mapping[str, tuple[Mapping[str, list[Hit]], float]], questions) -> dict[str, Evaluation]:
    """Each pipeline's evidence scored per question: all-gold@5 and recall@5."""
    return {name: evaluate_pipeline(lambda query, k, e=evidence: e[query][:k], questions,
                                    metrics=("all_gold", "recall"), ks=(BUDGET,))
            for name, (evidence, _) in runs.items()}


def rows_for(runs: Mapping[str, tuple[Mapping[str, list[Hit]], float]],
             results: Mapping[str, Evaluation]) -> list[dict]:
    """One table row per pipeline: all-gold@5, recall@5 and ms per question."""
    rows = table_rows(results)
    for row, (_, seconds) in zip(rows, runs.values()):
        row["ms/question"] = round(seconds * 1000)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--no-specialist", action="store_true", help="only the rows without the decomposer specialist")
    args = parser.parse_args(argv)
    rec = StageRecorder()
    kb = load_docs(DATA_DIR / "multihop_kb.jsonl")
    questions = load_questions(DATA_DIR / "multihop_questions.jsonl", corpus=kb)
    with rec.stage("index (BM25 + e5)", items=len(kb)):
        hybrid = HybridIndex([BM25Index(kb, tokenizer=search_tokenize).search, DenseIndex(kb, collection="kb").search],
                             depth=30).search
    runs: dict[str, tuple[dict, float]] = {}
    with rec.stage("no-model rows", items=2 * len(questions)):
        started = time.perf_counter()
        runs["question alone"] = ({q.query: hybrid(q.query, k=BUDGET) for q in questions},
                                  (time.perf_counter() - started) / len(questions))
        started = time.perf_counter()
        runs["iterative, no model (lesson 06)"] = ({q.query: follow_up_search(hybrid, q.query) for q in questions},
                                                   (time.perf_counter() - started) / len(questions))
    planners = {"few-shot 135M": models.chat_model()}
    if not args.no_specialist:
        from ragkit.specialists import specialist
        planners["decomposer specialist"] = specialist("decomposer")
    for label, chat in planners.items():
        with rec.stage(f"plan-first, {label}", items=len(questions)):
            runs[f"CoT-RAG plan-first, {label}"] = plan_first(hybrid, chat, questions)
        for append, how in ((True, "steps + question"), (False, "steps alone")):
            with rec.stage(f"self-ask ({how}), {label}", items=len(questions)):
                interleaved, fused, seconds = iterative(hybrid, chat, questions, append_question=append)
            runs[f"CoT-RAG self-ask ({how}), {label}"] = (interleaved, seconds)
            runs[f"CoT-RAG self-ask ({how}), RRF with the question's ranking, {label}"] = (fused, seconds)
    name = "course-multihop" + ("-no-specialist" if args.no_specialist else "")
    results = scored(runs, questions)
    write_result(name, rows_for(runs, results), rec, {"budget": BUDGET, "max_steps": MAX_STEPS,
                                                      "questions": len(questions)},
                 gains=significance(results, BASES, METRICS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
