"""benchmarks/hotpotqa_reader.py: its scoring, the recorded fusion it reuses, and a whole run on tiny fake data
(fake readers, a scripted decomposer and a hashing embedder: no model is loaded)."""

import json

import pytest

from benchmarks import harness
from benchmarks import hotpotqa_reader as bench
from ragkit.corpus import Question
from ragkit.errors import ModelNotFound
from ragkit.generate import reader_specialist
from ragkit.generate.reader import ReaderAnswer
from ragkit.models import specialists
from ragkit.passages import NOT_IN_PASSAGES
from tests.fakes import HashingEmbedder, JobChat, ScriptedChat, stub_setting

ANSWER_IN = {"p1": "Chief of Protocol", "p5": "Australia", "p3": "Lake Baikal", "p6": "yes"}
PLAN = "1. Who played Corliss Archer in Kiss and Tell?\n2. What position did #1 hold?"


class PassageReader:
    """A fake reader specialist: the answer held by the first passage that holds one, else NOT_IN_PASSAGES."""

    name = "fake reader specialist"

    def __init__(self):
        self.calls = []

    def answer(self, question, hits):
        self.calls.append((question, [hit.id for hit in hits]))
        for number, hit in enumerate(hits):
            if hit.id in ANSWER_IN:
                return ReaderAnswer(ANSWER_IN[hit.id], number, 1.0, 0.0)
        return ReaderAnswer(NOT_IN_PASSAGES, None, 0.0, 0.0)


@pytest.fixture
def fakes(monkeypatch, tmp_path):
    """Every model the benchmark loads, faked; the readers and the decomposer it was given, by role."""
    monkeypatch.setenv("RAGKIT_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr(harness, "CACHE_ROOT", tmp_path / "cache")
    stub_setting(monkeypatch, "embedder", lambda *a, **k: HashingEmbedder())
    given = {"specialist": PassageReader(), "chat": ScriptedChat("Answer: Australia"),
             "decomposer": JobChat("decomposer", PLAN)}
    stub_setting(monkeypatch, "chat_model", lambda *a, **k: given["chat"])
    monkeypatch.setattr(reader_specialist, "specialist_reader", lambda **k: given["specialist"])
    monkeypatch.setattr(specialists, "specialist", lambda job, **k: given[job])
    return given


def run(hotpot_dir, out, *options):
    return bench.main(["--data", str(hotpot_dir), "--results-dir", str(out), "--threads", "1", *options])


def test_answer_values_score_the_best_alias_on_each_metric():
    question = Question("q", "?", ("p",), answer="Lake Baikal")
    assert bench.answer_values("the Lake Baikal", question) == {"EM": 1.0, "F1": 1.0, "contains gold": 1.0}


def test_the_fusion_is_the_setting_recorded_by_hotpotqa_fusion(tmp_path):
    setting, record = bench.chosen_setting(bench.FUSION_RESULT)
    chosen = record["extra"]["chosen"]
    assert (setting.k, setting.dense, setting.links, setting.link_weight) == (
        chosen["k"], chosen["dense_weight"], chosen["link_sources"], chosen["link_weight"])
    with pytest.raises(SystemExit, match="bench-hotpotqa-fusion"):
        bench.chosen_setting(tmp_path / "none.json")


def test_the_self_ask_settings_are_those_chosen_on_train100():
    chosen = json.loads((harness.RESULTS_DIR / "self-ask-tuning.json").read_text())["extra"]["chosen"]
    assert chosen == "step + question | bridge: title: sentence of top 1 | question top 3, then steps"
    assert bench.SELF_ASK_CHOSEN == {"append_question": True, "bridge_hits": 1, "titled_bridges": True,
                                     "question_first": 3}


def test_readers_are_a_known_comma_separated_list():
    assert bench.reader_names("few-shot, specialist") == ["specialist", "few-shot"]
    with pytest.raises(Exception, match="comma-separated"):
        bench.reader_names("specialist,oracle")


def test_a_whole_run_scores_every_reader_on_every_evidence_with_paired_gains(hotpot_dir, tmp_path, fakes):
    out = tmp_path / "results"
    assert run(hotpot_dir, out, "--few-shot-limit", "2") == 0
    result = json.loads((out / "hotpotqa-reader.json").read_text())
    rows = {row["rung"]: row for row in result["rows"]}
    name = bench.row_name
    assert list(rows) == [name("specialist", e) for e in ("fusion", "gold", "self-ask")] + [
        name("few-shot", e) for e in ("fusion", "gold", "self-ask", "closed book")]
    gold = rows[name("specialist", "gold")]
    assert (gold["questions"], gold["EM"], gold["contains gold"], gold["all gold@5"]) == (4, 1.0, 1.0, "")
    assert rows[name("specialist", "fusion")]["all gold@5"] != ""
    assert all(rows[name("few-shot", e)]["questions"] == 2 for e in ("fusion", "gold", "closed book"))
    assert rows[name("few-shot", "closed book")]["evidence ms/question"] == 0.0
    assert all(isinstance(row["ms/answer median"], float) for row in rows.values())

    gains = result["significance"]["gains"]
    asked = {(g["comparison"], g["rung"], g["over"]): g for g in gains}
    assert (("specialist vs few-shot, same evidence", name("specialist", "fusion"), name("few-shot", "fusion"))
            in asked)
    assert asked[("specialist vs few-shot, same evidence", name("specialist", "gold"),
                  name("few-shot", "gold"))]["questions"] == 2  # paired on the few-shot sample
    assert asked[("self-ask vs fusion", name("specialist", "self-ask"), name("specialist", "fusion"))][
        "questions"] == 4
    assert ("fusion top 5 vs the gold paragraphs", name("specialist", "fusion"), name("specialist", "gold")) in asked
    assert all("[" in g["EM gain [95% interval]"] and "contains gold gain [95% interval]" in g for g in gains)

    per_question = {q["id"]: q for q in result["extra"]["per_question"]}
    assert len(per_question) == 4 and len(per_question["b1"]["evidence"]["fusion"]) == 5
    assert per_question["b1"]["predictions"]["specialist/gold"] == "Chief of Protocol"
    assert [s["step"] for s in per_question["b1"]["self_ask"]["steps"]] == [
        "Who played Corliss Archer in Kiss and Tell?", "What position did #1 hold?"]
    assert sum("few-shot/fusion" in q["predictions"] for q in per_question.values()) == 2
    assert result["extra"]["self_ask"]["bridges"]  # the reader was asked for bridges
    bridge_questions = [question for question, _ in fakes["specialist"].calls]
    assert "Who played Corliss Archer in Kiss and Tell?" in bridge_questions
    closed = [messages for messages, _ in fakes["chat"].calls if "(no passages)" in messages[-1]["content"]]
    assert len(closed) == 2


def test_a_run_reuses_the_rows_an_earlier_run_read_from_the_same_evidence_and_reads_the_rest(hotpot_dir, tmp_path,
                                                                                          fakes):
    earlier = tmp_path / "earlier"
    assert run(hotpot_dir, earlier, "--few-shot-limit", "2", "--skip-self-ask") == 0
    recorded = json.loads((earlier / "hotpotqa-reader-subset.json").read_text())
    fakes["specialist"].calls.clear()
    out = tmp_path / "results"
    assert run(hotpot_dir, out, "--few-shot-limit", "2", "--reuse", str(earlier / "hotpotqa-reader-subset.json")) == 0
    result = json.loads((out / "hotpotqa-reader.json").read_text())
    name = bench.row_name
    reused = [name("specialist", "fusion"), name("specialist", "gold"), name("few-shot", "fusion"),
              name("few-shot", "gold"), name("few-shot", "closed book")]
    assert sorted(result["extra"]["reused"]) == sorted(reused)
    rows = {row["rung"]: row for row in result["rows"]}
    assert all(rows[row["rung"]] == row for row in recorded["rows"])  # times and scores as recorded
    questions = {q["question"] for q in recorded["extra"]["per_question"]}
    read = [question for question, _ in fakes["specialist"].calls if question in questions]
    assert len(read) == len(questions) == 4  # the self-ask row alone: fusion and gold were not read again
    gains = {(g["rung"], g["over"]) for g in result["significance"]["gains"]}
    assert (name("specialist", "self-ask"), name("specialist", "fusion")) in gains
    with pytest.raises(ValueError, match="not a hotpotqa_reader result"):
        bench.load_recorded(bench.FUSION_RESULT)


def test_chat_names_the_few_shot_model_in_rows_and_file_and_reuses_no_other_models_answers(hotpot_dir, tmp_path,
                                                                                          fakes, monkeypatch):
    earlier = tmp_path / "earlier"
    assert run(hotpot_dir, earlier, "--few-shot-limit", "2", "--skip-self-ask") == 0
    asked, stronger = [], ScriptedChat("Answer: Lake Baikal")
    stronger.name = "a stronger model"
    stub_setting(monkeypatch, "chat_model", lambda setting=None: asked.append(setting) or stronger)
    out = tmp_path / "results"
    assert run(hotpot_dir, out, "--few-shot-limit", "2", "--skip-self-ask", "--chat", "qwen-x",
               "--reuse", str(earlier / "hotpotqa-reader-subset.json")) == 0
    result = json.loads((out / "hotpotqa-reader-qwen-x-subset.json").read_text())
    name, label = bench.row_name, bench.few_shot_label("qwen-x")
    assert asked == ["qwen-x"] and result["extra"]["readers"][label] == "a stronger model"
    assert [row["rung"] for row in result["rows"]] == [name("specialist", "fusion"), name("specialist", "gold")] + [
        name(label, e) for e in ("fusion", "gold", "closed book")]
    assert sorted(result["extra"]["reused"]) == sorted([name("specialist", "fusion"), name("specialist", "gold")])
    assert len(stronger.calls) == 6  # 2 questions x 3 evidence conditions, none taken from the other model's run
    gains = {(g["comparison"], g["rung"], g["over"]) for g in result["significance"]["gains"]}
    assert ("specialist vs few-shot, same evidence", name("specialist", "gold"), name(label, "gold")) in gains
    assert ("fusion top 5 vs no passages", name(label, "fusion"), name(label, "closed book")) in gains
    assert not (out / "hotpotqa-reader-subset.json").exists()
    again = tmp_path / "again"  # the chat setting now names another model: its rows are read again
    assert run(hotpot_dir, again, "--few-shot-limit", "2", "--skip-self-ask",
               "--reuse", str(earlier / "hotpotqa-reader-subset.json")) == 0
    reused = json.loads((again / "hotpotqa-reader-subset.json").read_text())["extra"]["reused"]
    assert sorted(reused) == sorted([name("specialist", "fusion"), name("specialist", "gold")])


def test_a_partial_run_writes_a_subset_file_and_needs_no_specialist(hotpot_dir, tmp_path, fakes, monkeypatch):
    def not_built(**kwargs):
        raise AssertionError("the specialist was loaded")

    monkeypatch.setattr(reader_specialist, "specialist_reader", not_built)
    out = tmp_path / "results"
    assert run(hotpot_dir, out, "--readers", "few-shot", "--skip-self-ask", "--limit", "3") == 0
    result = json.loads((out / "hotpotqa-reader-subset.json").read_text())
    assert [row["rung"] for row in result["rows"]] == [bench.row_name("few-shot", e)
                                                        for e in ("fusion", "gold", "closed book")]
    assert result["extra"]["questions"] == 3 and not (out / "hotpotqa-reader.json").exists()


@pytest.mark.parametrize("readers", ["specialist", "few-shot"])  # few-shot alone still needs it for the bridges
def test_a_specialist_that_is_not_built_stops_the_run(hotpot_dir, tmp_path, fakes, monkeypatch, readers):
    def not_built(**kwargs):
        raise ModelNotFound("the reader specialist is not built yet: run `make specialists SPECIALISTS=reader`")

    monkeypatch.setattr(reader_specialist, "specialist_reader", not_built)
    with pytest.raises(ModelNotFound, match="make specialists SPECIALISTS=reader"):
        run(hotpot_dir, tmp_path / "results", "--readers", readers)
    assert not (tmp_path / "results").exists()
