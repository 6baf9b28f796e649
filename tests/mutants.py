"""`make mutants`: plant one bug at a time in a scratch copy of the project and see which tests catch it.

Each planted bug (a *mutant*) is one line of ragkit replaced, breaking a behaviour a lesson teaches. For each, the
unit tests that should catch it run, then the notebooks that should, three times: with the chat replies as recorded
(the model store of `make notebooks`, reused), reseeded (`make test-portable`'s harness and settings: other replies,
sampled) and greedy at another batch size (`make test-greedy-batch`'s: other greedy replies, as another CPU gives).
A run that fails has caught the bug; one that passes has missed it. Before any bug, the same runs on the unchanged
copy must pass, or the table means nothing. Not part of `make test`: the notebook runs take hours.

    python -m tests.mutants                       every mutant, every stage
    python -m tests.mutants --stages unit         the unit tests only (a minute)
    python -m tests.mutants --only M2,M5          some mutants

Writes tests/mutants_result.json (docs/testing.md shows it through `make docs`).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "tests" / "mutants_result.json"
STAGES = ("unit", "recorded", "reseeded", "greedy-batch")
HARNESS_SETTINGS = {"reseeded": "print-reseed-env", "greedy-batch": "print-greedy-batch-env"}  # Makefile targets
NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg",
         "--nbval-cell-timeout=1800"]


@dataclass(frozen=True)
class Mutant:
    """One planted bug: the line it replaces, what it breaks, and the tests and notebooks that should catch it."""

    id: str
    lesson: str
    file: str
    line: str
    replacement: str
    breaks: str
    unit: tuple[str, ...]
    notebooks: tuple[str, ...]


MUTANTS = (
    Mutant("M1", "07", "ragkit/reason/step_judge.py",
           '    return verdict, correction if verdict == "corrected" else "", warnings',
           '    return "unverified", "", warnings', "the judge never confirms or corrects",
           ("tests/test_rwr.py", "tests/test_cot_rag.py"), ("07_rethinking_with_retrieval",)),
    Mutant("M2", "04", "ragkit/search/rerank.py", "key=lambda i: (-scores[i], i)", "key=lambda i: (-scores[i], -i)",
           "ties reversed", ("tests/test_rerank.py",), ("04_reranking",)),
    Mutant("M3", "03", "ragkit/search/fusion.py", "    for query in queries:", "    for query in queries[:1]:",
           "multi-query fuses only the original", ("tests/test_fusion.py", "tests/test_rewrite.py"),
           ("03_query_rewriting", "08_evaluation")),
    Mutant("M4", "09", "ragkit/generate/reader_specialist.py",
           "        text, passage = reader_reply(reply.text, passages)",
           '        text, passage = reader_reply("not in the passages", passages)', "the reader always abstains",
           ("tests/test_reader_specialist.py", "tests/test_answering.py"), ("09_specialists",)),
    Mutant("M5", "09", "ragkit/reason/self_ask.py", "            return bridges[number - 1]",
           "            return bridges[0]",
           "every #k resolves to step 1", ("tests/test_self_ask.py",), ("09_specialists",)),
    Mutant("M6", "05", "ragkit/search/parent_child.py", "            if parent_id not in best:", "            if True:",
           "a parent keeps its worst child", ("tests/test_parent_child.py",), ("05_parent_child",)),
    Mutant("M7", "01", "ragkit/text.py", '    text = unicodedata.normalize("NFC", text).lower()',
           '    text = unicodedata.normalize("NFC", text)', "tokens keep their case",
           ("tests/test_text.py", "tests/test_lexical.py"), ("01_bag_of_words",)),
    Mutant("M8", "02", "ragkit/search/fusion.py", "scores.get(hit.id, 0.0) + weight / (k + rank)",
           "scores.get(hit.id, 0.0) + weight / (k + 1)", "reciprocal rank fusion ignores the ranks",
           ("tests/test_fusion.py",), ("02_embeddings",)),
    Mutant("M9", "08", "ragkit/evaluate/metrics.py", "return sum(gain / math.log2(rank + 1) for rank, gain",
           "return sum(gain / math.log2(rank + 2) for rank, gain", "nDCG discounts one rank too far",
           ("tests/test_evaluate.py",), ("08_evaluation",)),
    Mutant("M10", "06", "ragkit/reason/cot_rag.py",
           '        step, notes = run_step(number, thought, f"{thought} {carried}".strip(), search, meter, k=k,',
           "        step, notes = run_step(number, thought, question, search, meter, k=k,",
           "every step searches with the question, not its own thought", ("tests/test_cot_rag.py",), ("06_cot_rag",)),
    Mutant("M11", "07", "ragkit/reason/voting.py", "            entry[1] += weight", "            entry[1] += 1.0",
           "the evidence-weighted vote ignores the evidence", ("tests/test_rwr.py",),
           ("07_rethinking_with_retrieval",)),
)


def scratch_copy(folder: Path) -> Path:
    """The files git tracks and the untracked ones it does not ignore, as they are now, copied into folder."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, folder / name)
    return folder


def plant(folder: Path, mutant: Mutant) -> None:
    """Replace the mutant's line, which must stand exactly once in its file."""
    path = folder / mutant.file
    text = path.read_text(encoding="utf-8")
    if text.count(mutant.line) != 1:
        raise SystemExit(f"{mutant.id}: {mutant.file} holds its line {text.count(mutant.line)} times, not once: "
                         "the code moved; update MUTANTS")
    path.write_text(text.replace(mutant.line, mutant.replacement), encoding="utf-8")


def test_environment(folder: Path, stage: str) -> dict[str, str]:
    """`make test`'s environment, with the scratch copy first on the path (kernels included), the project's
    model store and caches (the course reranker, the base model), and for 'reseeded' and 'greedy-batch' the
    harness of `make test-portable` with that run's settings."""
    prefix = make_print("print-test-env")
    environment = dict(os.environ)
    for item in prefix[1:]:
        if item == "-u":
            continue
        if "=" in item:
            name, _, value = item.partition("=")
            environment[name] = value
        else:
            environment.pop(item, None)
    environment |= {"PYTHONPATH": str(folder), "RAGKIT_CACHE": str(ROOT / ".cache"),
                    "RAGKIT_MODEL_CACHE": str(ROOT / ".cache" / "nbval-models")}
    if stage in HARNESS_SETTINGS:
        environment["PYTHONPATH"] = os.pathsep.join([str(folder), str(folder / "tests" / "portable")])
        environment |= dict(item.split("=", 1) for item in make_print(HARNESS_SETTINGS[stage]))
    return environment


def make_print(target: str) -> list[str]:
    """The words a Makefile print target echoes (the settings it holds)."""
    return shlex.split(subprocess.run(["make", "-s", "--no-print-directory", target], cwd=ROOT, check=True,
                                      capture_output=True, text=True).stdout)


def run_stage(folder: Path, mutant: Mutant, stage: str) -> tuple[bool, str, float]:
    """(passed, the runner's last line, seconds) of one stage's tests in folder."""
    if stage == "unit":
        arguments = ["-m", "pytest", "-q", "-p", "no:cacheprovider", *mutant.unit]
    else:
        arguments = ["-m", "pytest", "-q", "-p", "no:cacheprovider", *NBVAL,
                     *[f"lessons/{name}.ipynb" for name in mutant.notebooks]]
    started = time.perf_counter()
    run = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), *arguments], cwd=folder, capture_output=True,
                         text=True, env=test_environment(folder, stage))
    last = next((line for line in reversed(run.stdout.splitlines()) if line.strip()), "")
    return run.returncode == 0, last, time.perf_counter() - started


def verdicts(mutants, stages) -> list[dict]:
    """For each mutant, each stage: 'caught' or 'MISSED' (a baseline that fails is reported instead)."""
    rows, baselines = [], {}
    with tempfile.TemporaryDirectory(prefix="ragkit-mutants-") as scratch:
        clean = scratch_copy(Path(scratch) / "clean")
        for mutant in mutants:
            row = {"mutant": mutant.id, "lesson": mutant.lesson, "breaks": mutant.breaks}
            planted = scratch_copy(Path(scratch) / mutant.id)
            plant(planted, mutant)
            for stage in stages:
                runs = (stage, mutant.unit if stage == "unit" else mutant.notebooks)
                if runs not in baselines:
                    baselines[runs] = run_stage(clean, mutant, stage)
                baseline, last, _ = baselines[runs]
                if not baseline:
                    row[stage] = f"baseline fails: {last}"
                    continue
                passed, last, seconds = run_stage(planted, mutant, stage)
                row[stage] = "MISSED" if passed else "caught"
                print(f"{mutant.id} {stage}: {row[stage]} ({last}; {seconds:.0f} s)", file=sys.stderr, flush=True)
            shutil.rmtree(planted)
            rows.append(row)
    return rows


def write_result(rows: list[dict]) -> None:
    """Merge this run's verdicts into tests/mutants_result.json: a mutant's stage not run now keeps its last one."""
    try:
        earlier = {row["mutant"]: row for row in json.loads(RESULT.read_text(encoding="utf-8"))["rows"]}
    except (OSError, ValueError, KeyError):
        earlier = {}
    for row in rows:
        earlier[row["mutant"]] = {**earlier.get(row["mutant"], {}), **row}
    order = [m.id for m in MUTANTS]
    merged = sorted(earlier.values(), key=lambda row: order.index(row["mutant"]) if row["mutant"] in order else 99)
    columns = ["mutant", "lesson", "breaks", *[s for s in STAGES if any(s in row for row in merged)]]
    table = [{column: row.get(column, "not run") for column in columns} for row in merged]
    RESULT.write_text(json.dumps({"date": datetime.now(timezone.utc).date().isoformat(), "rows": table}, indent=1)
                      + "\n", encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", default=",".join(STAGES), help="comma-separated, of: " + ", ".join(STAGES))
    parser.add_argument("--only", help="comma-separated mutant ids (default: all)")
    args = parser.parse_args(argv)
    stages = [s for s in args.stages.split(",") if s]
    chosen = [m for m in MUTANTS if not args.only or m.id in args.only.split(",")]
    if not chosen or any(s not in STAGES for s in stages):
        raise SystemExit(f"stages are of {', '.join(STAGES)}; mutants of {', '.join(m.id for m in MUTANTS)}")
    rows = verdicts(chosen, stages)
    write_result(rows)
    for row in rows:
        print(" | ".join(str(row.get(key, "")) for key in ("mutant", "lesson", "breaks", *stages)))
    missed = sum(row.get(stage) != "caught" for row in rows for stage in stages)
    print(f"{len(rows) * len(stages) - missed} caught, {missed} missed or not run cleanly")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
