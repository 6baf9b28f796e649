"""benchmarks.chat_ladder: its data stays off the scoring sets, and its metrics and intervals mean what they say."""

import json

import pytest

from benchmarks import chat_ladder
from benchmarks.chat_ladder import JOBS, job_data, metric, paired_interval, reader_f1, sample
from ragkit.config import evaldata_dir
from tests.make_docs import rows_region

BENCHMARKS = evaldata_dir(environ={})


def scoring_ids() -> set[str]:
    """'scifact:<id>' of SciFact's test claims and 'strategyqa:<qid>' of StrategyQA dev200: sets that score results."""
    qrels = (BENCHMARKS / "scifact" / "qrels" / "test.tsv").read_text().splitlines()
    test_claims = {line.split("\t")[0] for line in qrels}
    dev200 = json.loads((BENCHMARKS / "strategyqa" / "dev200_qids.json").read_text())
    return {f"scifact:{i}" for i in test_claims} | {f"strategyqa:{q}" for q in dev200}


@pytest.mark.parametrize("job", JOBS)
def test_every_job_has_records_and_none_is_from_a_scoring_set(job):
    records = job_data(job, 16)
    assert len(records) >= 10
    assert not {r.get("source", "") for r in records} & scoring_ids()
    assert not any(r.get("source", "").startswith("hotpotqa:dev") for r in records)


def test_the_relevance_records_are_balanced_by_label():
    records = job_data("relevance", 16)
    assert sorted(r["answer"] for r in records) == ["no"] * 8 + ["yes"] * 8


def test_the_reader_sample_takes_the_languages_in_turn():
    assert sorted(r["lang"] for r in job_data("reader", 8)) == ["en", "en", "ru", "ru", "vi", "vi", "zh", "zh"]


def test_a_sample_is_seeded_and_nested():
    items = [{"k": i % 3, "i": i} for i in range(30)]
    assert sample(items, 6, key=lambda r: r["k"]) == sample(items, 6, key=lambda r: r["k"])
    assert sample(items, 6, key=lambda r: r["k"]) == sample(items, 9, key=lambda r: r["k"])[:6]
    assert sorted(r["k"] for r in sample(items, 6, key=lambda r: r["k"])) == [0, 0, 1, 1, 2, 2]


def test_chinese_answers_are_scored_by_character():
    assert reader_f1("古列尔莫·马可尼", ["古列尔莫·马可尼"], "zh") == 1.0
    assert 0 < reader_f1("马可尼", ["古列尔莫·马可尼"], "zh") < 1
    assert reader_f1("马可尼", ["古列尔莫·马可尼"], "en") == 0.0  # as one token, it is all or nothing


def test_auc_jobs_rank_and_the_rest_average():
    ranked = [{"score": s, "label": lab} for s, lab in [(0.9, True), (0.1, False), (0.8, True), (0.2, False)]]
    assert metric("relevance", ranked) == 1.0
    assert metric("verdict", [{"accuracy": 1.0}, {"accuracy": 0.0}]) == 0.5


def test_a_paired_interval_excludes_zero_only_for_a_clear_gain():
    better = [{"accuracy": 1.0}] * 20
    worse = [{"accuracy": 0.0}] * 20
    low, high = paired_interval("verdict", better, worse)
    assert low > 0 and high <= 1.0
    one_way = [{"accuracy": float(i % 2)} for i in range(20)]
    other_way = [{"accuracy": float(i % 2 == 0)} for i in range(20)]
    low, high = paired_interval("verdict", one_way, other_way)
    assert low < 0 < high


def test_the_cost_of_one_token_replies_gives_no_generation_rate():
    calls = [{"seconds": 0.5, "prompt_n": 100, "prompt_ms": 500, "predicted_n": 1, "predicted_ms": 0.001}] * 3
    cost = chat_ladder.cost(calls)
    assert cost["reply tok/s"] == "" and cost["prompt tok/s"] == 200 and cost["ms/call"] == 500


def test_the_docs_can_show_a_second_table_of_a_result(tmp_path, monkeypatch):
    from tests import make_docs

    (tmp_path / "r.json").write_text(json.dumps({"rows": [{"a": 1}], "extra": {"memory": [{"rung": "x", "MB": 5}]}}))
    monkeypatch.setattr(make_docs, "ROOT", tmp_path)
    assert "| x | 5 |" in rows_region(["r.json", "from=memory"])
