"""Lesson 00's exercise checks: a right answer passes, a typical wrong one fails with a pointer."""

import dataclasses
import json

import numpy as np
import pytest

import ragkit.exercises.lesson_00 as lesson_00
from ragkit.config import Settings, load_settings
from ragkit.exercises import ExerciseFailed, check_exercise
from ragkit.models.llm import ChatReply

SCHEMA = {"type": "object", "properties": {"advice": {"type": "string"}, "rota_weeks": {"type": "integer"}},
          "required": ["advice", "rota_weeks"]}


def reply(text, tokens=20, finish_reason="stop"):
    """A chat reply as llm.chat returns it."""
    return ChatReply(text=text, model="smollm2", completion_tokens=tokens, seconds=0.4, finish_reason=finish_reason)


OWN = reply("Share the rota weekly and swap fairly.", tokens=80, finish_reason="length")
OWN_JSON = reply(json.dumps({"advice": "2023-01-01", "rota_weeks": 2}))


def exercise_0_1(own=OWN, answer_schema=SCHEMA, own_json=OWN_JSON):
    return check_exercise("0.1", {"own": own, "answer_schema": answer_schema, "own_json": own_json})


def test_0_1_a_reply_and_a_json_reply_of_your_schema_pass(capsys):
    assert exercise_0_1()
    assert capsys.readouterr().out == "Exercise 0.1: passed.\n"


def test_0_1_a_missing_name_is_not_done(capsys):
    assert check_exercise("0.1", {"own": OWN}) is False
    assert "Define `answer_schema`, `own_json`" in capsys.readouterr().out


@pytest.mark.parametrize("changes, message", [
    ({"own": OWN.text}, "not only its text"),
    ({"own": dataclasses.replace(OWN, completion_tokens=200)}, "max_tokens=80"),
    ({"answer_schema": {"type": "object", "properties": {"topic": {"type": "string"}, "days": {"type": "integer"}},
                        "required": ["topic", "days"]},
      "own_json": reply('{"topic": "leave", "days": 25}')}, "a schema of your own"),
    ({"answer_schema": {"type": "object", "properties": SCHEMA["properties"]}}, "no keys under required"),
    ({"own_json": reply("Two weeks is a good cycle.")}, "not JSON"),
    ({"own_json": reply('{"advice": "Rotate every', tokens=60, finish_reason="length")}, "before its JSON closed"),
    ({"own_json": reply('{"advice": "rotate"}')}, "ask with json_schema=answer_schema"),
    ({"own_json": reply('{"advice": "rotate", "rota_weeks": "two"}')}, "declares it integer"),
    ({"own_json": reply('{"advice": "rotate", "rota_weeks": true}')}, "declares it integer"),
])
def test_0_1_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_0_1(**changes)


SENTENCES = ["The office is closed on public holidays.", "Laptops are replaced every three years.",
             "Submit receipts within thirty days.", "Văn phòng đóng cửa vào các ngày lễ.",
             "Máy tính xách tay được thay mới ba năm một lần.", "Nộp hóa đơn trong vòng ba mươi ngày."]
MATRIX = np.array([[1.00, 0.79, 0.79, 0.85, 0.72, 0.77],  # solutions/00_setup.ipynb's matrix, as printed
                   [0.79, 1.00, 0.88, 0.79, 0.85, 0.81],
                   [0.79, 0.88, 1.00, 0.82, 0.80, 0.88],
                   [0.85, 0.79, 0.82, 1.00, 0.87, 0.90],
                   [0.72, 0.85, 0.80, 0.87, 1.00, 0.89],
                   [0.77, 0.81, 0.88, 0.90, 0.89, 1.00]])
CLEAR = np.full((6, 6), 0.5) + 0.5 * np.eye(6) + 0.3 * np.roll(np.eye(6), 3, axis=1)  # translations clearly closest


def exercise_0_2(sentences=SENTENCES, matrix=MATRIX, closest_to_own=False):
    return check_exercise("0.2", {"sentences": sentences, "matrix": matrix, "closest_to_own": closest_to_own})


def test_0_2_the_answers_the_matrix_bears_out_pass():
    assert exercise_0_2()
    assert exercise_0_2(matrix=CLEAR, closest_to_own=True)
    assert exercise_0_2(matrix=MATRIX.astype(np.float32), closest_to_own=np.bool_(False))


def test_0_2_a_margin_within_rounding_accepts_either_answer():
    tie = CLEAR.copy()
    tie[0, 1] = tie[1, 0] = tie[0, 3]  # sentence 0 is as close to sentence 1 as to its translation
    assert exercise_0_2(matrix=tie, closest_to_own=True) and exercise_0_2(matrix=tie, closest_to_own=False)


@pytest.mark.parametrize("changes, message", [
    ({"closest_to_own": True}, "closer to another sentence than to its translation"),
    ({"matrix": CLEAR}, "the translation has the highest cosine"),
    ({"closest_to_own": "no"}, "store True or False"),
    ({"sentences": SENTENCES[:3]}, "six different sentences"),
    ({"matrix": MATRIX[:3, :3]}, "has shape"),
    ({"matrix": MATRIX * 3}, "not a matrix of cosines"),
    ({"matrix": np.eye(6)}, "the same cosine"),
])
def test_0_2_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_0_2(**changes)


@pytest.fixture
def own_config(tmp_path):
    path = tmp_path / "ragkit.toml"
    path.write_text('embedder = "minilm"\nthreads = 1\n')
    return path


def exercise_0_3(own_config, **changes):
    names = {"own_config": own_config, "from_file": load_settings(environ={}, config_file=own_config),
             "overridden": load_settings(environ={"RAGKIT_EMBEDDER": "e5"}, config_file=own_config)}
    return check_exercise("0.3", {**names, **changes})


def test_0_3_a_file_of_your_own_and_an_overriding_variable_pass(own_config):
    assert exercise_0_3(own_config)
    assert exercise_0_3(str(own_config))


def test_0_3_the_file_must_say_what_the_exercise_asks(tmp_path):
    for text, message in (('embedder = "e5"\nthreads = 1\n', 'write embedder = "minilm"'),
                          ('embedder = "minilm"\n', "write threads = 1"),
                          ('embedder = "minilm"\nthread = 1\n', "cannot read `own_config`")):
        path = tmp_path / "ragkit.toml"
        path.write_text(text)
        with pytest.raises(ExerciseFailed, match=message):
            check_exercise("0.3", {"own_config": path, "from_file": None, "overridden": None})


@pytest.mark.parametrize("changes, message", [
    ({"from_file": Settings(embedder="minilm", threads=1, store="./qdrant")}, "not what your file gives"),
    ({"from_file": {"embedder": "minilm", "threads": 1}}, "store what load_settings"),
    ({"overridden": Settings(embedder="e5")}, "your file's one"),
])
def test_0_3_settings_not_loaded_as_asked_fail(own_config, changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_0_3(own_config, **changes)


def test_0_3_an_overridden_file_must_select_e5(own_config):
    with pytest.raises(ExerciseFailed, match="RAGKIT_EMBEDDER"):
        exercise_0_3(own_config, overridden=load_settings(environ={}, config_file=own_config))


def test_0_3_a_missing_file_fails(tmp_path):
    with pytest.raises(ExerciseFailed, match="names no file"):
        check_exercise("0.3", {"own_config": tmp_path / "gone.toml", "from_file": None, "overridden": None})


def test_0_3_the_projects_own_file_fails_whatever_it_says(own_config, monkeypatch):
    monkeypatch.setattr(lesson_00, "CONFIG_FILE", own_config)  # as if the learner had written it at the root
    with pytest.raises(ExerciseFailed, match="project's own ragkit.toml"):
        exercise_0_3(own_config)
