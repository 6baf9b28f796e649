"""benchmarks.rerank_bm25 on a tiny corpus with stand-in rerankers: rows, cost per document and gains."""

import numpy as np
import pytest

from benchmarks import rerank_bm25
from benchmarks.harness import StageRecorder
from ragkit.corpus import Doc, Hit, Question
from tests.fakes import ScriptedChat, stub_setting

DOCS = [Doc(f"d{i}", f"text {i}") for i in range(4)]
QUESTIONS = [Question("q1", "where is d2", ("d2",)), Question("q2", "where is d3", ("d3",))]


class PreferHigherIds:
    name, unreadable = "higher ids first", 1

    def score(self, query, docs):
        return np.array([int(doc.id[1:]) for doc in docs], dtype=float)


def first_stage(query):
    return [Hit(doc, 1.0) for doc in DOCS]  # d0 first: both answers at rank 3 or 4


def test_each_scorer_reranks_the_first_stage_and_is_scored_against_the_baselines():
    rows, values = rerank_bm25.run_set(QUESTIONS, first_stage, {"BM25": first_stage}, {"ids": PreferHigherIds()},
                                       ("nDCG@5", "MRR@10"), StageRecorder(), "tiny")
    assert values["BM25"]["q1"]["MRR@10"] == 1 / 3 and values["BM25"]["q2"]["MRR@10"] == 1 / 4
    reranked = values[f"BM25 top {rerank_bm25.FIRST_STAGE} → ids"]
    assert reranked["q1"]["MRR@10"] == 1 / 2 and reranked["q2"]["MRR@10"] == 1.0
    row = rows[f"tiny: BM25 top {rerank_bm25.FIRST_STAGE} → ids"]
    assert row["questions"] == 2 and row["unreadable"] == 1 and row["ms/document"] == pytest.approx(row["ms/query"] / 4)
    gains = rerank_bm25.gains(values, "tiny", ("MRR@10",), ("BM25",))
    assert [g["rung"] for g in gains["gains"]] == [f"tiny: BM25 top {rerank_bm25.FIRST_STAGE} → ids"]
    assert gains["gains"][0]["MRR@10 gain [95% interval]"].startswith("+0.458")


def test_a_ranking_is_scored_by_ndcg_and_by_mrr_within_k():
    question = Question("q", "x", ("d3",))
    assert rerank_bm25.metric_values(["d0", "d1", "d3"], question, ("MRR@2", "nDCG@5")) == {
        "MRR@2": 0.0, "nDCG@5": 0.5}


def test_a_chosen_chat_model_names_its_rows_and_asks_that_model(monkeypatch):
    asked = []
    stub_setting(monkeypatch, "chat_model", lambda setting=None: asked.append(setting) or ScriptedChat())
    scorers = rerank_bm25.load_scorers(["P(yes) of the chat model", "0-10 score of the chat model"], StageRecorder(),
                                       1, chat="qwen-1.5b")
    assert list(scorers) == ["P(yes) of qwen-1.5b", "0-10 score of qwen-1.5b"] and asked == ["qwen-1.5b"] * 2
    assert rerank_bm25.chat_row("P(yes) of the chat model", None) == "P(yes) of the chat model"


@pytest.mark.parametrize("chat, sets, every, full, name", [
    (None, ["course", "scifact"], 1, True, "rerank-bm25"),
    ("qwen-1.5b", ["course"], 2, False, "rerank-bm25-qwen-1.5b-subset"),
    ("qwen-1.5b", ["course"], 1, False, "rerank-bm25-qwen-1.5b-course"),
    (None, ["scifact"], 1, False, "rerank-bm25-subset"),
])
def test_a_partial_run_never_overwrites_another_kind_of_run(chat, sets, every, full, name):
    assert rerank_bm25.result_file(chat, sets, every, full=full) == name
