"""The repository itself: no large file outside data/ and models/, no path to data outside the project, and the
evaluation data the course reads (data/benchmarks/) all there, as a fresh clone has it."""

import hashlib
import json
import shutil
import subprocess
import tomllib

import pytest

from benchmarks import harness, hotpotqa_data, scifact, strategyqa
from ragkit.config import PROJECT_DIR, evaldata_dir
from ragkit.train.records import specialists as specialist_records

MiB = 2**20
LARGE_FILES_LIVE_IN = ("data/", "models/")
SEARCHED = ("ragkit/", "benchmarks/", "tests/", "lessons/", "solutions/", ".ci/", "Makefile", "README.md")
# built from parts, so that this file does not match itself
OUTSIDE_PATHS = (".." + "/shared", "shared" + "/evaldata")
BENCHMARKS = PROJECT_DIR / "data" / "benchmarks"
BENCHMARK_FILES = {  # what each benchmark reads by default, by its folder under RAGKIT_EVALDATA
    hotpotqa_data.DATASET: hotpotqa_data.DEV_FILES + hotpotqa_data.TRAIN_FILES,
    strategyqa.DATASET: (strategyqa.TRAIN_FILE, strategyqa.DEV_FILE, strategyqa.FACTS_FILE),
    scifact.DATASET: (*scifact.FILES, "qrels/train.tsv"),  # train: the fusion tuning and the SciFact CE
}


def tracked_files() -> list[str]:
    """The files git tracks in the project (what a clone has), as paths relative to it."""
    if shutil.which("git") is None or not (PROJECT_DIR / ".git").exists():
        pytest.skip("not a git checkout")
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT_DIR, capture_output=True, check=True)
    return [name for name in listing.stdout.decode().split("\0") if name]


def test_no_large_file_is_tracked_outside_data_and_models():
    large = [f"{name} ({(PROJECT_DIR / name).stat().st_size / MiB:.1f} MiB)" for name in tracked_files()
             if not name.startswith(LARGE_FILES_LIVE_IN) and (PROJECT_DIR / name).is_file()
             and (PROJECT_DIR / name).stat().st_size >= MiB]
    assert large == [], "files of 1 MiB or more belong under data/ or models/"


def test_the_benchmark_data_stays_compact():
    files = [path for path in BENCHMARKS.rglob("*") if path.is_file()]
    assert sum(path.stat().st_size for path in files) < 40 * MiB
    assert [path for path in files if path.stat().st_size >= MiB and path.suffix != ".gz"] == []


def test_nothing_reads_data_from_outside_the_project():
    found = []
    for name in tracked_files():
        if not name.startswith(SEARCHED) or not (PROJECT_DIR / name).is_file():
            continue
        for number, line in enumerate((PROJECT_DIR / name).read_bytes().decode("utf-8", "replace").splitlines(), 1):
            found += [f"{name}:{number}: {pattern}" for pattern in OUTSIDE_PATHS if pattern in line]
    assert not found, ("the evaluation data is data/benchmarks/ in the project (RAGKIT_EVALDATA overrides it):\n"
                       + "\n".join(found))


def test_the_default_evaluation_data_is_in_the_project():
    assert evaldata_dir(environ={}) == BENCHMARKS


@pytest.mark.parametrize("job", sorted([*specialist_records.JOB_SOURCES, *specialist_records.OWN_MODULES]))
def test_every_file_the_specialists_are_built_from_is_in_the_project(job):
    files = specialist_records.source_files(job, root=evaldata_dir(environ={}))
    module = specialist_records.OWN_MODULES.get(job)
    # the rewriter's records read a sampling run's judgements (its SOURCES are what that run reads)
    expected = getattr(module, "RECORD_SOURCES", getattr(module, "SOURCES", None)) if module else None
    assert set(files) == set(expected or specialist_records.JOB_SOURCES[job])
    assert all(path.is_file() and path.is_relative_to(BENCHMARKS) for path in files.values())


@pytest.mark.parametrize("name", sorted(BENCHMARK_FILES))
def test_every_file_the_benchmarks_read_by_default_is_in_the_project(name, monkeypatch):
    monkeypatch.delenv("RAGKIT_EVALDATA", raising=False)
    assert harness.data_folder(None, name, BENCHMARK_FILES[name]) == BENCHMARKS / name


def test_the_decomposer_records_from_the_project_data_are_those_the_committed_specialist_was_trained_on():
    records, _ = specialist_records.build_records("decomposer", root=evaldata_dir(environ={}))
    digest = hashlib.sha256(json.dumps(records, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    committed = json.loads((PROJECT_DIR / "models" / "specialists" / "decomposer" / "specialist.json").read_text())
    assert digest == committed["data"]["records_sha256"]  # as ragkit.models.specialists records it


def test_the_judge_is_trained_on_no_claim_the_scifact_benchmark_scores():
    records, _ = specialist_records.build_records("judge", root=evaldata_dir(environ={}))
    test_claims = {json.loads(line)["claim"].casefold()
                   for line in (BENCHMARKS / "scifact" / "claims_dev_with_evidence.jsonl").open(encoding="utf-8")}
    steps = {r["messages"][-1]["content"].rpartition("\nStep: ")[2].casefold() for r in records
             if r["source"].startswith("scifact:")}
    assert len(steps) > 400 and not steps & test_claims
    digest = hashlib.sha256(json.dumps(records, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    committed = json.loads((PROJECT_DIR / "models" / "specialists" / "judge" / "specialist.json").read_text())
    assert digest == committed["data"]["records_sha256"], "rebuild the judge: make specialists SPECIALISTS=judge"


def test_every_ragkit_package_is_shipped():
    listed = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = sorted(".".join(init.parent.relative_to(PROJECT_DIR).parts)
                   for init in (PROJECT_DIR / "ragkit").rglob("__init__.py"))
    assert sorted(listed) == found, "list every ragkit package in pyproject.toml's [tool.setuptools] packages"
