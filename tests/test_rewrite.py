import json

import pytest

from ragkit.errors import EmptyQueryError
from ragkit.models.jobs import rewriter_messages
from ragkit.models.llm import ChatReply
from ragkit.search.rewrite import multi_query, parse_questions, questions_schema, rewrite_query
from tests.fakes import JobChat, ScriptedChat


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
    assert warnings == ["question 2 repeated question 1; dropped it"]


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
    assert parse_questions("") == ([], ["the reply was not valid JSON; read it line by line instead"])


@pytest.mark.parametrize("text, shape", [
    ('{"questions": 3}', '"questions" is a number'),
    ('{"questions": "How many days?"}', '"questions" is a string'),
    ('{"questions": {"first": "How many days?"}}', '"questions" is an object'),
    ('{"questions": [1, 2.5]}', '"questions" is a list of numbers'),
    ('{"questions": [{"q": "How many days?"}, null]}', '"questions" is a list of nulls and objects'),
    ('[1, 2]', "a list of numbers"),
    ('{"topic": "leave", "days": 25}', 'an object without a "questions" list (keys: "topic", "days")'),
    ("25", "a number"),
    ("true", "true/false"),
    ('Sure! {"questions": 3} Hope it helps.', '"questions" is a number'),
])
def test_json_of_the_wrong_shape_gives_no_question_and_names_its_shape(text, shape):
    questions, warnings = parse_questions(text)
    assert questions == []
    assert warnings == [f"the reply was valid JSON of the wrong shape: {shape}, not a list of strings"]


def test_items_that_are_not_strings_are_dropped_and_counted():
    questions, warnings = parse_questions('{"questions": ["How many days?", 3, {"q": "Who?"}]}')
    assert questions == ["How many days?"]
    assert warnings == ["dropped 2 of 3 JSON items that were not strings (numbers and objects)"]


def test_a_quoted_line_or_a_citation_list_is_text_not_json():
    assert parse_questions('"How many days?"')[0] == ["How many days?"]
    questions, warnings = parse_questions("1. How many days? [1]\n2. Who approves?")
    assert questions == ["How many days? [1]", "Who approves?"]
    assert warnings == ["the reply was not valid JSON; read it line by line instead"]


def test_multi_query_keeps_the_original_first_and_constrains_the_reply():
    chat = ScriptedChat(json.dumps({"questions": ["A?", "B?"]}))
    result = multi_query("my query", chat=chat, n=3)
    assert result.queries == ("my query", "A?", "B?")
    assert chat.calls[0][1]["json_schema"] == questions_schema(3)


def test_multi_query_with_junk_falls_back_visibly():
    result = multi_query("my query", chat=ScriptedChat(""), keep_original=False)
    assert result.queries == ("my query",)
    assert any("original query only" in w for w in result.warnings)


def test_multi_query_with_json_of_the_wrong_shape_searches_the_original_only():
    result = multi_query("my query", chat=ScriptedChat('{"questions": 3}'), keep_original=False)
    assert result.queries == ("my query",) and not result.truncated
    assert result.warnings == ('the reply was valid JSON of the wrong shape: "questions" is a number, not a list '
                               "of strings", "no questions could be read from the reply; searching with the "
                               "original query only")


def test_a_question_equal_to_the_original_query_is_searched_once():
    result = multi_query("How many days?", chat=ScriptedChat('{"questions": ["how many days", "Who?"]}'))
    assert result.queries == ("How many days?", "Who?")


CUT = "the model hit the token limit while {}: its reply was cut off"


def test_a_rewrite_cut_at_the_token_limit_is_flagged_and_counted():
    replies = [ChatReply("What are the rules for working from home with a", "m", 9, 32, finish_reason="length"),
               ChatReply("What are the rules?", "m", 9, 5, finish_reason="stop"),
               ChatReply("", "m", 9, 32, finish_reason="length")]
    rewrites = [rewrite_query("wfh rules", chat=ScriptedChat(reply)) for reply in replies]
    assert [r.truncated for r in rewrites] == [True, False, True]
    assert sum(r.truncated for r in rewrites) == 2
    assert rewrites[0].queries == ("What are the rules for working from home with a",)
    assert rewrites[0].warnings == (CUT.format("rewriting the query"),)
    assert rewrites[1].warnings == ()
    assert rewrites[2].queries == ("wfh rules",)
    assert rewrites[2].warnings == (CUT.format("rewriting the query"),
                                    "the model returned an empty rewrite; kept the original query")


def test_multi_query_cut_at_the_token_limit_is_flagged_and_its_broken_json_read_by_line():
    cut = ChatReply('{"questions": ["A?", "B?",\n"C', "m", 9, 150, finish_reason="length")
    result = multi_query("my query", chat=ScriptedChat(cut))
    assert result.truncated and result.warnings[0] == CUT.format("writing the search questions")
    assert "the reply was not valid JSON; read it line by line instead" in result.warnings
    assert not multi_query("my query", chat=ScriptedChat('{"questions": ["A?"]}')).truncated


def test_multi_query_checks_n():
    with pytest.raises(ValueError, match="between 1 and 5"):
        multi_query("q", chat=ScriptedChat("[]"), n=6)


@pytest.mark.model
def test_multi_query_with_the_real_model_gives_at_most_five_questions(local_chat):
    result = multi_query("How do I claim a hotel bill after a business trip?", chat=local_chat)
    assert 2 <= len(result.queries) <= 6
    assert not any("not valid JSON" in w for w in result.warnings)  # the schema held


def test_the_rewriter_specialist_is_asked_in_its_own_prompt_for_each_form():
    keywords, questions = JobChat("rewriter", "sick leave notice"), JobChat("rewriter", '{"questions": ["A?"]}')
    assert rewrite_query("nghi om", chat=keywords).queries == ("sick leave notice",)
    assert multi_query("nghi om", chat=questions, keep_original=False).queries == ("A?",)
    assert keywords.calls[0][0] == rewriter_messages("keywords", "nghi om")
    assert questions.calls[0][0] == rewriter_messages("questions", "nghi om")
