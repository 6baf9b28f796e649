import json

import pytest

from ragkit.errors import EmptyQueryError
from ragkit.rewrite import multi_query, parse_questions, questions_schema, rewrite_query
from tests.fakes import ScriptedChat


def test_rewrite_returns_the_models_query():
    chat = ScriptedChat('"Nghỉ ốm cần nhắn Slack lúc nào?"')
    result = rewrite_query("nghi om can nhan slack luc nao", chat=chat)
    assert result.queries == ("Nghỉ ốm cần nhắn Slack lúc nào?",)
    assert result.warnings == ()
    assert chat.calls[0][0][-1]["content"] == "nghi om can nhan slack luc nao"


def test_an_empty_rewrite_keeps_the_original_and_says_so():
    result = rewrite_query("vpn wiki", chat=ScriptedChat("  \"\"  "))
    assert result.queries == ("vpn wiki",)
    assert "empty rewrite" in result.warnings[0]


def test_rewrite_refuses_an_empty_query():
    with pytest.raises(EmptyQueryError):
        rewrite_query(" ", chat=ScriptedChat("x"))


def test_parse_questions_reads_json_and_drops_repeats():
    text = json.dumps({"questions": ["How many days?", "how many days? ", "", "Who approves?"]})
    questions, warnings = parse_questions(text)
    assert questions == ["How many days?", "Who approves?"]
    assert warnings == ["dropped empty or repeated questions"]


def test_parse_questions_accepts_a_bare_list_and_caps_it():
    questions, warnings = parse_questions(json.dumps([f"q{i}?" for i in range(7)]), limit=5)
    assert len(questions) == 5 and "kept the first 5 of 7" in warnings[-1]


def test_parse_questions_finds_json_inside_chatter():
    questions, _ = parse_questions('Sure! Here you go: {"questions": ["A?", "B?"]} Hope it helps.')
    assert questions == ["A?", "B?"]


def test_broken_json_is_read_line_by_line_and_said():
    questions, warnings = parse_questions('{"questions": ["A?", "B?"\n1. C?\n- D?')
    assert "C?" in questions and "D?" in questions
    assert "not valid JSON" in warnings[0]


def test_nothing_readable_gives_no_questions():
    assert parse_questions("")[0] == []
    assert parse_questions('{"questions": 3}')[0] == ['{"questions": 3}']


def test_multi_query_keeps_the_original_first_and_constrains_the_reply():
    chat = ScriptedChat(json.dumps({"questions": ["A?", "B?"]}))
    result = multi_query("my query", chat=chat, n=3)
    assert result.queries == ("my query", "A?", "B?")
    assert chat.calls[0][1]["json_schema"] == questions_schema(3)


def test_multi_query_with_junk_falls_back_visibly():
    result = multi_query("my query", chat=ScriptedChat(""), keep_original=False)
    assert result.queries == ("my query",)
    assert any("original query only" in w for w in result.warnings)


def test_multi_query_checks_n():
    with pytest.raises(ValueError, match="between 1 and 5"):
        multi_query("q", chat=ScriptedChat("[]"), n=6)


@pytest.mark.model
def test_multi_query_with_the_real_model_gives_at_most_five_questions(local_chat):
    result = multi_query("How do I claim a hotel bill after a business trip?", chat=local_chat)
    assert 2 <= len(result.queries) <= 6
    assert not any("not valid JSON" in w for w in result.warnings)  # the schema held
