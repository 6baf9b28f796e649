"""Choose self-ask's settings on HotpotQA train100, then score the chosen one once on the course's 47 questions.

What it measures, how to run it (`python -m benchmarks.self_ask_tuning`) and what it recorded: benchmarks/README.md.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Mapping, Sequence

import numpy as np

from benchmarks.harness import (
    ExactDense,
    StageRecorder,
    benchmark_parser,
    bm25_search,
    data_folder,
    encode_corpus,
    write_result,
)
from benchmarks.hotpotqa_data import DATASET, TRAIN_FILES, load_train100
from ragkit import DATA_DIR, Doc, Hit, Question, load_docs, load_questions, models, search_tokenize
from ragkit.evaluate import all_gold_at_k
from ragkit.reason import Meter, decompose, search_in_order
from ragkit.search import BM25Index, HybridIndex, interleave, lead_then_interleave, reciprocal_rank_fusion

BUDGET = 5
DEPTH = 30
MAX_STEPS = 4


def assemblies(question_hits: list[Hit], step_hits: list[list[Hit]]) -> dict[str, list[Hit]]:
    """Every way of cutting the evidence to the budget from the question's ranking and the steps'."""
    ways = {"steps interleaved": interleave(step_hits, BUDGET),
            "question + steps interleaved": interleave([question_hits, *step_hits], BUDGET),
            "RRF of question and steps": reciprocal_rank_fusion([question_hits, *step_hits], limit=BUDGET)}
    for first in (1, 2, 3, 4):
        ways[f"question top {first}, then steps"] = lead_then_interleave(question_hits, step_hits, BUDGET, first=first)
    return ways


def grid_scores(questions: Sequence[Question], plans: Mapping[str, list[str]], search, embedder) -> dict[str, float]:
    """all-gold@5 of every setting in the grid over the questions."""
    scores: dict[str, list[float]] = {}
    bridges = {"sentence": False, "title: sentence": True}
    for append, bridge_hits, (bridge, titled) in itertools.product((True, False), (1, 2, 3), bridges.items()):
        for q in questions:
            steps, _ = search_in_order(q.query, plans[q.id], search, embedder=embedder, k=DEPTH,
                                       append_question=append, bridge_hits=bridge_hits, titled_bridges=titled)
            ways = assemblies(search(q.query, k=DEPTH), [list(s.hits) for s in steps])
            for way, hits in ways.items():
                name = setting_name(append, bridge_hits, bridge, way)
                scores.setdefault(name, []).append(all_gold_at_k([h.id for h in hits], q.relevant, BUDGET))
    return {name: float(np.mean(values)) for name, values in scores.items()}


def setting_name(append: bool, bridge_hits: int, bridge: str, way: str) -> str:
    """One grid point as a readable row name."""
    return f"{'step + question' if append else 'step alone'} | bridge: {bridge} of top {bridge_hits} | {way}"


def hybrid_over(docs: Sequence[Doc], rec: StageRecorder, label: str, embedder):
    """Lesson 06's hybrid (BM25 + exact e5 cosine, RRF over DEPTH each) over the docs."""
    bm25 = bm25_search(BM25Index(docs, tokenizer=search_tokenize))
    passages, _ = encode_corpus(embedder, docs, rec, label)
    return HybridIndex([bm25, ExactDense(docs, passages, embedder).search], depth=DEPTH).search


def plan_all(questions: Sequence[Question], chat, rec: StageRecorder, label: str) -> dict[str, list[str]]:
    """The decomposer's steps for every question."""
    with rec.stage(f"{label}: plans", items=len(questions)):
        return {q.id: decompose(q.query, Meter(chat), max_steps=MAX_STEPS, constrain="auto")[0] for q in questions}


def main(argv: Sequence[str] | None = None) -> int:
    parser = benchmark_parser(__doc__.split("\n", 1)[0], DATASET, "HotpotQA")
    args = parser.parse_args(argv)
    rec, embedder = StageRecorder(), models.embedder()
    from ragkit.models import specialist
    decomposer = specialist("decomposer")
    train, train_docs = load_train100(data_folder(args.data, DATASET, TRAIN_FILES))
    train_search = hybrid_over(train_docs, rec, "train100", embedder)
    train_plans = plan_all(train, decomposer, rec, "train100")
    with rec.stage("train100: grid", items=len(train)):
        started = time.perf_counter()
        grid = grid_scores(train, train_plans, train_search, embedder)
    alone = float(np.mean([all_gold_at_k([h.id for h in train_search(q.query, k=BUDGET)], q.relevant, BUDGET)
                           for q in train]))
    chosen = max(grid, key=grid.get)  # max keeps the first of equals: the grid runs from simple to elaborate
    kb = load_docs(DATA_DIR / "multihop_kb.jsonl")
    course = load_questions(DATA_DIR / "multihop_questions.jsonl", corpus=kb)
    course_search = hybrid_over(kb, rec, "course", embedder)
    course_plans = plan_all(course, decomposer, rec, "course")
    course_grid = grid_scores(course, course_plans, course_search, embedder)
    course_alone = float(np.mean([all_gold_at_k([h.id for h in course_search(q.query, k=BUDGET)], q.relevant, BUDGET)
                                  for q in course]))
    rows = [{"setting": "question alone", "train100 all-gold@5": alone, "course all-gold@5": course_alone}]
    rows += [{"setting": name + ("  <- chosen" if name == chosen else ""), "train100 all-gold@5": score,
              "course all-gold@5": course_grid[name]} for name, score in sorted(grid.items(), key=lambda kv: -kv[1])]
    write_result("self-ask-tuning", rows, rec, {"chosen": chosen, "chosen on": "HotpotQA train100",
                                               "grid seconds": round(time.perf_counter() - started)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
