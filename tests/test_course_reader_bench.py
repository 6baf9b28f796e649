"""benchmarks.course_reader with scripted readers on a tiny corpus: each reader reads each context, and the gains
compare the pairs they name."""

from collections import Counter

from benchmarks import course_reader
from benchmarks.harness import StageRecorder
from ragkit import load_docs, load_questions
from ragkit.corpus import Doc, Hit, Question
from tests.fakes import ScriptedChat, stub_setting

DOCS = [Doc("d0", "Sick leave: message your lead on Slack before 10:00."), Doc("d1", "Parking is for visitors.")]
QUESTIONS = [Question("q1", "When do I message my lead?", ("d0",), answer="before 10:00"),
             Question("q2", "Who may park?", ("d1",), answer="visitors")]
CONTEXTS = {"full pipeline": {"q1": [Hit(DOCS[0], 1.0)], "q2": [Hit(DOCS[0], 1.0)]},
            "gold passages": {"q1": [Hit(DOCS[0], 1.0)], "q2": [Hit(DOCS[1], 1.0)]},
            "closed book": {"q1": [], "q2": []}}


def test_the_sample_is_lesson_08s_every_third_question_of_each_style_with_chinese_and_russian_in_it():
    questions = load_questions(corpus=load_docs())
    sample = course_reader.answer_sample(questions)
    assert len(sample) == 22 and Counter(q.style for q in sample)["zh"] == 1 and Counter(
        q.style for q in sample)["ru"] == 1
    assert sample[0] is questions[0] and len({q.id for q in sample}) == 22


def test_each_reader_reads_every_context_and_the_gains_compare_the_pairs_they_name(monkeypatch):
    replies = {"small": ScriptedChat("no idea"), "big": ScriptedChat("before 10:00", "visitors")}
    stub_setting(monkeypatch, "chat_model", lambda setting=None: replies[setting])
    runs = course_reader.read_all(QUESTIONS, CONTEXTS, {"small": "small", "big": "big"}, StageRecorder())
    assert set(runs) == {f"{r}, {c}" for r in ("small", "big") for c in CONTEXTS}
    assert [row["context"] for row in runs["big, gold passages"].per_question] == [("d0",), ("d1",)]
    assert [row["prediction"] for row in runs["small, full pipeline"].per_question] == ["no idea", "no idea"]
    assert runs["big, full pipeline"].means["exact_match"] == 1.0
    pairs = course_reader.gain_pairs(["small", "big"])
    assert pairs["big over small: full pipeline"] == ("big, full pipeline", "small, full pipeline")
    assert pairs["big: full pipeline over closed book"] == ("big, full pipeline", "big, closed book")
    gains = {row["comparison"]: row for row in course_reader.paired_gains(runs, pairs)["gains"]}
    assert gains["big over small: full pipeline"]["exact_match gain [95% interval]"].startswith("+1.000")
    assert gains["small: full pipeline over closed book"]["f1 gain [95% interval]"].startswith("+0.000")


def test_the_answers_table_holds_each_readers_full_pipeline_answer_per_question(monkeypatch):
    stub_setting(monkeypatch, "chat_model", lambda setting=None: ScriptedChat(setting))
    runs = course_reader.read_all(QUESTIONS, CONTEXTS, {"a": "first", "b": "second"}, StageRecorder())
    table = course_reader.answers_table(QUESTIONS, runs)
    assert table[1] == {"id": "q2", "style": "", "gold": "visitors", "a": "first", "b": "second"}
