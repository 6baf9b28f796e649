"""benchmarks/scifact.py: its pure helpers on tiny fake data (no model is loaded)."""

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from benchmarks import harness, scifact
from benchmarks.harness import BeirData, rank_by_scores
from ragkit.corpus import Doc, Hit, Question
from tests.fakes import stub_setting


def fake_data(n_docs=40, n_queries=10) -> BeirData:
    docs = [Doc(f"d{i}", f"text {i}", title=f"title {i}") for i in range(n_docs)]
    queries = {f"q{i}": f"claim {i}" for i in range(n_queries)}
    qrels = {f"q{i}": {f"d{i}": 1, f"d{i + 20}": 1} for i in range(n_queries)}
    return BeirData("fake", docs, queries, qrels)


class ReverseAlphabet:
    """A fake reranker: scores docs by their id, highest id first."""

    name = "fake"

    def __init__(self):
        self.scored = []

    def score(self, query, docs):
        self.scored.append([doc.id for doc in docs])
        return np.array([int(doc.id[1:]) for doc in docs], dtype=np.float32)


# --- subset --------------------------------------------------------------------------------------


def test_subset_keeps_every_judged_doc_of_the_chosen_queries():
    data = fake_data()
    part = scifact.subset(data, queries=3, docs=10, seed=1)
    assert len(part.queries) == 3 and set(part.qrels) == set(part.queries)
    judged = {doc_id for qid in part.queries for doc_id in data.qrels[qid]}
    kept = {doc.id for doc in part.docs}
    assert judged <= kept and len(kept) == 10


def test_subset_keeps_judged_docs_even_beyond_the_requested_size():
    part = scifact.subset(fake_data(), queries=5, docs=4)
    assert len(part.docs) == 10  # 5 queries x 2 judged docs


def test_subset_is_seeded_and_keeps_corpus_and_query_order():
    data = fake_data()
    first, again = (scifact.subset(data, queries=4, docs=12, seed=7) for _ in range(2))
    assert first == again
    positions = [int(doc.id[1:]) for doc in first.docs]
    assert positions == sorted(positions)
    assert list(first.queries) == [q for q in data.queries if q in first.queries]


def test_subset_without_limits_is_the_whole_data():
    data = fake_data()
    assert scifact.subset(data) == data
    assert scifact.subset(data, queries=100, docs=100) == data


# --- rankings --------------------------------------------------------------------------------------


def test_rerank_head_scores_only_the_head_and_keeps_the_rest_below_in_order():
    hits = [Hit(Doc(f"d{i}", "x"), 1.0 / (i + 1)) for i in range(6)]
    reranker = ReverseAlphabet()
    out = scifact.rerank_head("a claim", hits, reranker, depth=3)
    assert [h.id for h in out] == ["d2", "d1", "d0", "d3", "d4", "d5"]
    assert reranker.scored == [["d0", "d1", "d2"]]


def test_rerank_head_deeper_than_the_ranking_and_on_nothing():
    hits = [Hit(Doc(f"d{i}", "x"), 0.5) for i in range(2)]
    assert [h.id for h in scifact.rerank_head("q", hits, ReverseAlphabet(), depth=30)] == ["d1", "d0"]
    assert scifact.rerank_head("q", [], ReverseAlphabet(), depth=30) == []


def test_rank_by_scores_breaks_ties_by_corpus_order_and_cuts_at_depth():
    docs = [Doc(f"d{i}", "x") for i in range(5)]
    hits = rank_by_scores(docs, np.array([0.1, 0.9, 0.9, 0.5, 0.0]), depth=3)
    assert [h.id for h in hits] == ["d1", "d2", "d3"]


def test_score_run_uses_graded_relevance_and_reports_ms_per_query():
    questions = [Question("q0", "claim", ("a",), extra={"grades": {"a": 1, "b": 0}}),
                 Question("q1", "claim", ("c",), extra={"grades": {"c": 1}})]
    run = scifact.Run([[Hit(Doc("a", "x"), 1.0)], [Hit(Doc("b", "x"), 1.0)]], seconds=0.5)
    scores = scifact.score_run(run, questions)
    assert scores == pytest.approx({"nDCG@10": 0.5, "R@100": 0.5, "ms/query": 250.0})


def test_per_query_keeps_each_claims_scores_for_the_bootstrap():
    questions = [Question("q0", "claim", ("a",), extra={"grades": {"a": 1}}),
                 Question("q1", "claim", ("c",), extra={"grades": {"c": 1}})]
    run = scifact.Run([[Hit(Doc("a", "x"), 1.0)], [Hit(Doc("b", "x"), 1.0)]], seconds=0.5)
    rows = scifact.per_query(run, questions).per_question
    assert rows == ({"id": "q0", "nDCG@10": 1.0, "R@100": 1.0}, {"id": "q1", "nDCG@10": 0.0, "R@100": 0.0})


# --- the fusion tuned on train claims ---------------------------------------------------------------


def ranking(*ids):
    return [Hit(Doc(doc_id, "x"), 1.0) for doc_id in ids]


def test_the_fusion_grid_starts_with_plain_rrf_and_holds_every_setting_once():
    grid = scifact.fusion_grid(ks=(10, 60), dense_weights=(0.0, 1.0))
    assert grid[0] == scifact.FusionSetting(60, (1.0, 1.0, 1.0))
    assert len(grid) == len(set(grid)) == 2 * 2 * 2
    assert all(setting.weights[0] == 1.0 for setting in grid)
    assert str(grid[0]) == "k=60, weights 1 / 1 / 1"


def test_tuning_weights_up_the_leg_that_finds_the_relevant_docs():
    questions = [Question(f"q{i}", "claim", (f"r{i}",), extra={"grades": {f"r{i}": 1}}) for i in range(3)]
    wrong = scifact.Run([ranking(*(f"w{j}" for j in range(12))) for _ in questions], 0.0)
    right = scifact.Run([ranking(f"r{i}", *(f"x{j}" for j in range(11))) for i in range(3)], 0.0)
    chosen, tried = scifact.tune_fusion([wrong, wrong, right], questions, scifact.StageRecorder(),
                                        scifact.fusion_grid(ks=(60,), dense_weights=(0.0, 1.0, 2.0)))
    assert chosen.weights == (1.0, 0.0, 2.0)  # only there does the right leg's first hit outscore BM25's
    assert tried[0]["nDCG@10"] == max(row["nDCG@10"] for row in tried) > tried[-1]["nDCG@10"]


def test_tuning_keeps_plain_rrf_when_nothing_beats_it():
    questions = [Question("q0", "claim", ("a",), extra={"grades": {"a": 1}})]
    same = scifact.Run([ranking("a", "b")], 0.0)
    chosen, _ = scifact.tune_fusion([same, same, same], questions, scifact.StageRecorder())
    assert chosen == scifact.FusionSetting(60, (1.0, 1.0, 1.0))


def test_a_missing_train_split_is_a_clear_exit(tmp_path):
    with pytest.raises(SystemExit, match="train.tsv"):
        scifact.train_split(tmp_path)


# --- training pairs for the in-domain cross-encoder ------------------------------------------------


def test_mined_pairs_take_negatives_from_the_pool_and_never_a_judged_doc():
    queries = {"q1": "claim one", "q2": "claim two"}
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1, "d3": 1}}
    ranking = ["d1", "d2", "d3", "d4", "d5", "d6", "d7"]
    pairs = scifact.mined_pairs(queries, qrels, lambda q: ranking, negatives=2, pool=5)
    by_group = {}
    for pair in pairs:
        by_group.setdefault(pair["group"], []).append(pair)
    assert sorted(by_group) == [0, 1]
    for group, qid in ((0, "q1"), (1, "q2")):
        positives = {p["doc_id"] for p in by_group[group] if p["label"] == 1}
        negatives = {p["doc_id"] for p in by_group[group] if p["label"] == 0}
        assert positives == set(qrels[qid])
        assert len(negatives) == 2 and negatives <= set(ranking[:5]) - set(qrels[qid])
    assert {p["split"] for p in pairs} == {"train"}


def test_mined_pairs_leave_out_a_query_with_no_negative():
    pairs = scifact.mined_pairs({"q1": "c"}, {"q1": {"d1": 1}}, lambda q: ["d1"], negatives=3)
    assert pairs == []


# --- data folder --------------------------------------------------------------------------------


def test_a_missing_data_folder_names_the_option_and_the_variable(tmp_path):
    with pytest.raises(SystemExit) as err:
        harness.data_folder(str(tmp_path / "nowhere"), scifact.DATASET, scifact.FILES)
    message = str(err.value)
    assert "--data" in message and "RAGKIT_EVALDATA" in message and "corpus.jsonl" in message


def test_a_missing_evaldata_root_names_the_option_too(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_EVALDATA", str(tmp_path / "absent"))
    with pytest.raises(SystemExit) as err:
        harness.data_folder(None, scifact.DATASET, scifact.FILES)
    assert "--data" in str(err.value) and "RAGKIT_EVALDATA" in str(err.value)


def test_the_data_folder_is_taken_from_the_variable(tmp_path, monkeypatch):
    folder = tmp_path / "scifact"
    (folder / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (folder / name).write_text("x\n")
    monkeypatch.setenv("RAGKIT_EVALDATA", str(tmp_path))
    assert harness.data_folder(None, scifact.DATASET, scifact.FILES) == folder


def test_options_refuse_a_zero_subset():
    with pytest.raises(SystemExit):
        scifact.parse_args(["--queries", "0"])
    args = scifact.parse_args(["--queries", "20", "--docs", "600", "--e5"])
    assert (args.queries, args.docs, args.e5, args.rerank_depth) == (20, 600, True, 30)


def test_notes_judge_the_target_only_on_the_whole_benchmark():
    rows = [{"rung": "BM25", "nDCG@10": 0.95}, {"rung": "hybrid", "nDCG@10": 0.70}]
    assert "not judged on a subset" in scifact.notes(rows, is_subset=True, pipeline="hybrid")
    assert "BM25 0.950 (meets the target)" in scifact.notes(rows, is_subset=False, pipeline="BM25")
    judged = scifact.notes(rows, is_subset=False, pipeline="hybrid")  # the best test row is not the choice
    assert "hybrid 0.700 (below the target); the best row: BM25 0.950" in judged


# --- a whole run on tiny data ----------------------------------------------------------------------


@dataclass
class FakeReport:
    path: str = "fake"


def write_beir(folder: Path, topics: list[str]) -> None:
    """A tiny BEIR folder: one doc per topic, a test and a train claim per topic, each judging its doc."""
    (folder / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": topic, "text": f"{topic} is studied in this abstract."}
            for i, topic in enumerate(topics)]
    queries = [{"_id": f"{split}{i}", "text": f"claim about {topic}"} for split in ("test", "train")
               for i, topic in enumerate(topics)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    for split in ("test", "train"):
        (folder / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(f"{split}{i}\td{i}\t1\n" for i in range(len(topics))))


def test_a_run_with_e5_tunes_the_fusion_on_train_and_gives_gains_over_the_two_leg_hybrid(tmp_path, monkeypatch):
    from tests.fakes import HashingEmbedder

    write_beir(tmp_path / "scifact", ["insulin", "malaria", "vaccines", "statins", "asthma", "gut flora"])
    monkeypatch.setattr(harness, "CACHE_ROOT", tmp_path / "cache")
    stub_setting(monkeypatch, "embedder", lambda *a, **k: HashingEmbedder())
    monkeypatch.setattr(scifact, "course_cross_encoder", lambda rec, threads: (ReverseAlphabet(), FakeReport()))
    out = tmp_path / "results"
    assert scifact.main(["--data", str(tmp_path / "scifact"), "--e5", "--threads", "1", "--rerank-depth", "3",
                         "--results-dir", str(out)]) == 0
    result = json.loads((out / "scifact.json").read_text())
    rungs = [row["rung"] for row in result["rows"]]
    tuned = result["extra"]["pipeline"]
    assert tuned.startswith("hybrid+e5: weighted RRF, k=") and tuned.endswith("(chosen on train)") and tuned in rungs
    assert result["extra"]["fusion_tuning"]["train_queries"] == 6
    assert len(result["extra"]["fusion_tuning"]["tried_best_first"]) == len(scifact.fusion_grid())
    gains = result["significance"]
    assert gains["bases"] == [scifact.TWO_LEG_HYBRID]
    assert {row["rung"] for row in gains["gains"]} == set(rungs) - {scifact.TWO_LEG_HYBRID}
    assert len(gains["per_question"][tuned]) == 6
