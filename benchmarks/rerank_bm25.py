"""Reranking a cheap first stage: BM25's top 20 reranked by the course cross-encoder, by a relevance judge (the
chat model, and the relevance specialist, scoring P(yes)) and by the chat model's 0-10 score; against BM25 alone
and dense search. On the course's 56 gold questions (nDCG@5, MRR@10) and SciFact test (300 claims, nDCG@10).

What it measures, how to run it (`python -m benchmarks.rerank_bm25`) and what it recorded: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence

from benchmarks import harness
from ragkit import ModelNotFound, Question, load_docs, load_questions, models, search_tokenize
from ragkit.evaluate import ndcg_at_k, reciprocal_rank, relevance_of
from ragkit.models.rerankers import LLMReranker, RelevanceJudge, Reranker
from ragkit.search import BM25Index, DenseIndex, rerank

FIRST_STAGE = 20  # BM25 hits every reranker reorders
SETS = ("course", "scifact")
SCORERS = ("course CE", "P(yes) of the chat model", "P(yes) of the relevance specialist",
           "0-10 score of the chat model")
# on SciFact's 6,000 pairs the 0-10 score (a JSON reply per document) takes an hour and the untrained chat model's
# P(yes) 25 minutes; the course set shows both beside the specialist
SCIFACT_SCORERS = ("course CE", "P(yes) of the relevance specialist")
SCIFACT_BM25 = {"k1": 0.9, "b": 0.4}  # as benchmarks.scifact (Anserini's defaults, not tuned on test)
METRICS = {"course": ("nDCG@5", "MRR@10"), "scifact": ("nDCG@10",)}


def metric_values(ranking: Sequence[str], question: Question, metrics: Sequence[str]) -> dict[str, float]:
    """nDCG@k and MRR@k of one ranking of doc ids."""
    relevance = relevance_of(question)
    values = {}
    for metric in metrics:
        name, k = metric.split("@")
        values[metric] = (ndcg_at_k(ranking, relevance, int(k)) if name == "nDCG"
                          else reciprocal_rank(ranking[: int(k)], relevance))
    return values


def load_scorers(names: Sequence[str], rec: harness.StageRecorder, threads: int,
                 chat: str | None = None) -> dict[str, Reranker]:
    """The named rerankers (the chat model's asking the chat setting, or the model chat names, which then names
    their rows); a relevance specialist that is not built yet is left out with a message."""
    scorers: dict[str, Reranker] = {}
    for name in names:
        with rec.stage(f"load {name}"):
            try:
                scorers[chat_row(name, chat)] = make_scorer(name, rec, threads, chat)
            except ModelNotFound as err:
                print(f"left out {name}: {err}", file=sys.stderr)
    return scorers


def chat_row(name: str, chat: str | None) -> str:
    """A scorer's row name, with the chat model named where one was chosen."""
    return name.replace("the chat model", chat) if chat else name


def make_scorer(name: str, rec: harness.StageRecorder, threads: int, chat: str | None = None) -> Reranker:
    """One reranker by its row name."""
    if name == "course CE":
        return harness.course_cross_encoder(rec, threads)[0]
    if name == "P(yes) of the relevance specialist":
        from ragkit.models import specialist

        return RelevanceJudge(specialist("relevance", threads=threads))
    model = models.chat_model(chat)
    return RelevanceJudge(model) if name.startswith("P(yes)") else LLMReranker(model)


def run_set(questions: Sequence[Question], first_stage: Callable, baselines: Mapping[str, Callable],
            scorers: Mapping[str, Reranker], metrics: Sequence[str], rec: harness.StageRecorder, label: str):
    """Per-question metric values and seconds of each rung: the baselines, then each scorer on BM25's top 20."""
    values: dict[str, dict[str, dict]] = {}
    rows: dict[str, dict] = {}
    candidates = {q.id: first_stage(q.query) for q in questions}
    for name, search in baselines.items():
        values[name], seconds = {}, 0.0
        for q in questions:
            started = time.perf_counter()
            hits = search(q.query)
            seconds += time.perf_counter() - started
            values[name][q.id] = metric_values([h.id for h in hits], q, metrics)
        rows[f"{label}: {name}"] = summary(values[name], metrics, seconds, len(questions), documents=0)
    for name, scorer in scorers.items():
        rung = f"BM25 top {FIRST_STAGE} → {name}"
        values[rung], seconds = {}, 0.0
        with rec.stage(f"{label}: {rung}", items=len(questions) * FIRST_STAGE):
            for q in questions:
                started = time.perf_counter()
                hits = rerank(q.query, candidates[q.id], scorer)
                seconds += time.perf_counter() - started
                values[rung][q.id] = metric_values([h.id for h in hits], q, metrics)
        documents = sum(len(c) for c in candidates.values())
        rows[f"{label}: {rung}"] = summary(values[rung], metrics, seconds, len(questions), documents=documents,
                                           unreadable=getattr(scorer, "unreadable", ""))
    return rows, values


def summary(values: Mapping[str, dict], metrics: Sequence[str], seconds: float, questions: int, *,
            documents: int, unreadable="") -> dict:
    """A rung's table row: mean of each metric, ms a query, ms a reranked document."""
    row = {"questions": questions, **{m: sum(v[m] for v in values.values()) / len(values) for m in metrics},
           "ms/query": 1000 * seconds / questions}
    if documents:
        row["ms/document"] = 1000 * seconds / documents
    if unreadable != "":
        row["unreadable"] = unreadable
    return row


def course_set(scorers, rec, every: int = 1) -> tuple[dict, dict]:
    """The 56 course questions (or every Nth): BM25 and dense e5 (top 10), and BM25's top 20 reranked."""
    docs = load_docs()
    questions = load_questions(corpus=docs)[::every]
    bm25 = BM25Index(docs, tokenizer=search_tokenize)
    with rec.stage("course: dense index"):
        dense = DenseIndex(docs, collection="rerank-bm25")
    baselines = {"BM25": lambda q: bm25.search(q, k=10), "dense (e5)": lambda q: dense.search(q, k=10)}
    return run_set(questions, lambda q: bm25.search(q, k=FIRST_STAGE), baselines, scorers, METRICS["course"],
                   rec, "course")


def scifact_set(scorers, rec, limit: int | None) -> tuple[dict, dict]:
    """SciFact test: BM25 (top 10), and its top 20 reranked."""
    data = harness.load_beir(harness.data_folder(None, "scifact", ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")))
    questions = data.questions()[:limit] if limit else data.questions()
    bm25 = BM25Index(data.docs, tokenizer=search_tokenize, **SCIFACT_BM25)
    baselines = {"BM25": lambda q: harness.bm25_hits(bm25, q, 10)}
    return run_set(questions, lambda q: harness.bm25_hits(bm25, q, FIRST_STAGE), baselines, scorers,
                   METRICS["scifact"], rec, "scifact")


def gains(values: Mapping[str, Mapping[str, dict]], label: str, metrics: Sequence[str], bases: Sequence[str]) -> dict:
    """Each rung's gain over each base (paired bootstrap 95% intervals)."""
    runs = {f"{label}: {name}": harness.per_question_run(v) for name, v in values.items()}
    return harness.significance(runs, [f"{label}: {b}" for b in bases], list(metrics))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see --help)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated: course, scifact")
    parser.add_argument("--scorers", default=",".join(SCORERS), help=f"comma-separated, of: {', '.join(SCORERS)}")
    parser.add_argument("--scifact-scorers", default=",".join(SCIFACT_SCORERS),
                        help="the scorers that also rerank SciFact (each of them among --scorers)")
    parser.add_argument("--scifact-limit", type=harness.positive_int,
                        help="the first N SciFact test claims only (a quick run)")
    parser.add_argument("--course-every", type=harness.positive_int, default=1,
                        help="every Nth course question only (a quicker run with a slow model)")
    parser.add_argument("--chat", help="a RAGKIT_LLM value (e.g. qwen-1.5b): the chat model the P(yes) and 0-10 rows "
                                       "ask, named in their rows and in the result file, rerank-bm25-<value>[-subset]")
    harness.add_output_options(parser, threads_help="CPU threads for the models")
    return parser.parse_args(argv)


def result_file(chat: str | None, sets: Sequence[str], course_every: int, *, full: bool) -> str:
    """rerank-bm25[-<chat>] for a full run, with -course for every gold question and no SciFact, else -subset."""
    base = "rerank-bm25" + (f"-{chat}" if chat else "")
    if not full and list(sets) == ["course"] and course_every == 1:
        return f"{base}-course"
    return harness.result_name(base, subset=not full, skip_llm=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Run each set, print the tables and gains, write results/rerank-bm25[-<chat>][-course|-subset].json (-course:
    every gold question and no SciFact)."""
    args = parse_args(argv)
    sets, names = args.sets.split(","), args.scorers.split(",")
    unknown = sorted((set(sets) - set(SETS)) | (set(names) - set(SCORERS)))
    if unknown:
        raise SystemExit(f"unknown set or scorer {unknown}: sets are {', '.join(SETS)}; scorers {', '.join(SCORERS)}")
    harness.set_threads(args.threads)
    rec = harness.StageRecorder()
    scorers = load_scorers(names, rec, args.threads, args.chat)
    rows, significance = {}, {"bases": [], "metrics": [], "gains": [], "per_question": {}}
    for name in sets:
        if name == "course":
            set_rows, values = course_set(scorers, rec, args.course_every)
            bases = ("BM25", "dense (e5)")
        else:
            chosen = [chat_row(n, args.chat) for n in args.scifact_scorers.split(",")]
            set_rows, values = scifact_set({n: s for n, s in scorers.items() if n in chosen}, rec, args.scifact_limit)
            bases = ("BM25",)
        rows |= set_rows
        found = gains(values, name, METRICS[name], bases)
        for key in ("bases", "gains"):
            significance[key] += found[key]
        significance["metrics"] += [m for m in found["metrics"] if m not in significance["metrics"]]
        significance["per_question"] |= found["per_question"]
    full = (sets == list(SETS) and args.course_every == 1 and not args.scifact_limit
            and list(scorers) == [chat_row(n, args.chat) for n in SCORERS]
            and args.scifact_scorers.split(",") == list(SCIFACT_SCORERS))
    columns = ("questions", *dict.fromkeys(m for s in sets for m in METRICS[s]), "ms/query", "ms/document",
               "unreadable")
    extra = {"args": vars(args), "first_stage": FIRST_STAGE, "scifact_bm25": SCIFACT_BM25,
             "scorers": {name: scorer.name for name, scorer in scorers.items()}}
    harness.write_result(result_file(args.chat, sets, args.course_every, full=full),
                         harness.rung_table(rows, columns), rec, extra, results_dir=args.results_dir,
                         gains=significance)
    return 0


if __name__ == "__main__":
    sys.exit(main())
