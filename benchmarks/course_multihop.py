"""Multi-hop retrieval on the course's own 47 questions: the question alone, lesson 06's iteration, CoT-RAG.

What it measures, how to run it (`python -m benchmarks.course_multihop [--reader-bridges]`) and what it recorded:
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence

from benchmarks.harness import StageRecorder, add_output_options, significance, write_result
from ragkit import DATA_DIR, Hit, load_docs, load_questions, models, search_tokenize
from ragkit.evaluate import Evaluation, evaluate_pipeline, gain_rows, table_rows
from ragkit.generate import Reader
from ragkit.reason import Meter, SelfAskResult, decompose, self_ask
from ragkit.search import BM25Index, DenseIndex, HybridIndex, follow_up_search, interleave, reciprocal_rank_fusion

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


def iterative(search, chat, questions, *, append_question: bool,
              reader: Reader | None = None) -> tuple[dict[str, list[Hit]], dict, float, dict[str, list[dict]]]:
    """Each question's self-ask evidence at the budget (steps interleaved), the same steps' rankings fused by RRF
    with the question's own, the seconds per question, and each question's steps with their bridges (#k: the
    reader's answer to step k when a reader is given and finds one, else the closest sentence)."""
    started, interleaved, fused, bridges = time.perf_counter(), {}, {}, {}
    for q in questions:
        run = self_ask(q.query, search, decomposer=chat, reader=reader, max_steps=MAX_STEPS, k=RRF_DEPTH,
                       append_question=append_question)
        interleaved[q.query] = interleave([list(step.hits[:BUDGET]) for step in run.steps], BUDGET)
        rankings = [search(q.query, k=RRF_DEPTH), *(list(step.hits) for step in run.steps)]
        fused[q.query] = reciprocal_rank_fusion(rankings, limit=BUDGET)
        bridges[q.id] = step_bridges(run)
    return interleaved, fused, (time.perf_counter() - started) / len(questions), bridges


def step_bridges(run: SelfAskResult) -> list[dict]:
    """Each step as planned, its bridge and where the bridge came from ('reader', 'sentence' or '' for nothing)."""
    return [{"step": step.step, "bridge": step.bridge, "from": step.bridge_from} for step in run.steps]


def bridge_sources(bridges: Mapping[str, Sequence[dict]]) -> dict[str, int]:
    """How many steps of a run took their bridge from the reader, from the closest sentence, or found nothing."""
    steps = [step["from"] for per_question in bridges.values() for step in per_question]
    return {"steps": len(steps), "reader": steps.count("reader"), "sentence": steps.count("sentence"),
            "nothing": steps.count("")}


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


def pair_gains(results: Mapping[str, Evaluation], pairs: Sequence[tuple[str, str]]) -> list[dict]:
    """Each (new, base) pair's gains, new - base, with paired bootstrap 95% intervals, as significance() rows."""
    return [{"over": base, **row} for new, base in pairs
            for row in gain_rows({base: results[base], new: results[new]}, base, METRICS, label="rung")]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--no-specialist", action="store_true", help="only the rows without the decomposer specialist")
    parser.add_argument("--reader-bridges", action="store_true",
                        help="also each self-ask row with the reader specialist's answers as its bridges (the "
                             "reader specialist must be built), with its gain over the sentence-bridge row")
    add_output_options(parser)
    args = parser.parse_args(argv)
    rec = StageRecorder()
    reader = None
    if args.reader_bridges:  # loaded first: a reader that is not built stops the run before any work
        from ragkit.generate import specialist_reader
        with rec.stage("load the reader specialist"):
            reader = specialist_reader()
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
        from ragkit.models import specialist
        planners["decomposer specialist"] = specialist("decomposer")
    bridge_kinds = [(None, "")] + ([(reader, "reader bridges, ")] if reader is not None else [])
    bridges: dict[str, dict[str, list[dict]]] = {}
    pairs: list[tuple[str, str]] = []  # (reader-bridge row, the same row with sentence bridges)
    for label, chat in planners.items():
        with rec.stage(f"plan-first, {label}", items=len(questions)):
            runs[f"CoT-RAG plan-first, {label}"] = plan_first(hybrid, chat, questions)
        for append, how in ((True, "steps + question"), (False, "steps alone")):
            for bridged, by in bridge_kinds:
                row = f"CoT-RAG self-ask ({how}), {by}{label}"
                with rec.stage(row.removeprefix("CoT-RAG "), items=len(questions)):
                    interleaved, fused, seconds, bridges[row] = iterative(hybrid, chat, questions,
                                                                          append_question=append, reader=bridged)
                runs[row] = (interleaved, seconds)
                runs[f"CoT-RAG self-ask ({how}), {by}RRF with the question's ranking, {label}"] = (fused, seconds)
            if reader is not None:
                pairs += [(f"CoT-RAG self-ask ({how}), reader bridges, {evidence}{label}",
                           f"CoT-RAG self-ask ({how}), {evidence}{label}")
                          for evidence in ("", "RRF with the question's ranking, ")]
    name = "course-multihop" + ("-no-specialist" if args.no_specialist else "") + \
        ("-reader-bridges" if reader is not None else "")
    results = scored(runs, questions)
    gains = significance(results, BASES, METRICS)
    gains["bases"] += [base for _, base in pairs]
    gains["gains"] += pair_gains(results, pairs)
    extra = {"budget": BUDGET, "max_steps": MAX_STEPS, "questions": len(questions),
             "bridge_sources": {run: bridge_sources(per_question) for run, per_question in bridges.items()},
             "bridges": bridges}
    if reader is not None:
        extra["reader"] = reader.name
    write_result(name, rows_for(runs, results), rec, extra, results_dir=args.results_dir, gains=gains)
    return 0


if __name__ == "__main__":
    sys.exit(main())
