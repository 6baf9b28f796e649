"""benchmarks.course_rewriter with a scripted model on a tiny corpus: each row searches what its model wrote."""

import json

from benchmarks import course_rewriter
from benchmarks.harness import StageRecorder
from ragkit.corpus import Doc, Question
from ragkit.search.lexical import BagOfWordsIndex
from tests.fakes import ScriptedChat

DOCS = [Doc("d0", "office wifi password"), Doc("d1", "nghỉ ốm nhắn Slack"), Doc("d2", "parking rules")]
QUESTIONS = [Question("q41", "nghi om", ("d1",), style="no-diacritics")]


def test_each_row_searches_with_its_models_rewrite_and_the_expansion_is_fused_with_the_original():
    chat = ScriptedChat("nghỉ ốm", json.dumps({"questions": ["parking rules"]}))
    rewrites, ms = course_rewriter.rewritten(QUESTIONS, chat, StageRecorder(), "scripted")
    assert rewrites == {"single": {"nghi om": "nghỉ ốm"}, "multi": {"nghi om": ("nghi om", "parking rules")}}
    assert set(ms) == {"single", "multi"}
    words = BagOfWordsIndex(DOCS).search
    rows = course_rewriter.pipelines({"bag of words": words}, {"scripted": rewrites})
    assert [hit.id for hit in rows["bag of words ← rewrite (scripted)"]("nghi om", k=1)] == ["d1"]
    assert [hit.id for hit in rows["bag of words ← multi-query (scripted), RRF"]("nghi om", k=1)] == ["d2"]
    (row,) = course_rewriter.diacritics_rows(words, QUESTIONS, {"scripted": rewrites})
    assert row["rank, question"] is None and row["rank, scripted"] == 1
