import math

import pytest

from ragkit.corpus import Doc, Hit, Question
from ragkit.evaluate.reading import content_words, evaluate_reader, groundedness
from ragkit.generate.answering import NO_PASSAGES, ChatReader, read, reader_prompt, short_answer
from ragkit.passages import NOT_IN_PASSAGES
from tests.fakes import ScriptedChat, ScriptedReader

SICK = Hit(Doc("en-sick-02", "A doctor's note is needed after three consecutive days of sick leave.", "Sick notes"),
           0.9)
TRAVEL = Hit(Doc("en-travel-01", "Book trains through the travel portal.", "Travel"), 0.5)


def question(qid="q01", answer="three consecutive days"):
    return Question(qid, "How many sick days before a doctor's note?", ("en-sick-02",), answer=answer)


def test_the_prompt_numbers_the_passages_after_one_worked_example():
    prompt = reader_prompt("When?", [SICK, TRAVEL])
    assert [m["role"] for m in prompt] == ["system", "user", "assistant", "user"]
    assert "[1] Sick notes" in prompt[-1]["content"] and "[2] Travel" in prompt[-1]["content"]
    assert prompt[-1]["content"].endswith("Question: When?")
    assert NO_PASSAGES in reader_prompt("When?", [])[-1]["content"]


@pytest.mark.parametrize("reply, expected", [
    ("Answer: three days.", "three days"), ('"until 21:00"\nmore text', "until 21:00"),
    ("The answer is 25 days", "25 days"), ("", ""), ("\n\n  five \n", "five")])
def test_short_answer_keeps_the_first_line_without_its_lead(reply, expected):
    assert short_answer(reply) == expected


def test_read_returns_the_short_answer_and_the_context_it_showed():
    chat = ScriptedChat("Answer: after three consecutive days.")
    reading = read("How many sick days before a note?", [SICK], chat=chat)
    assert reading.answer == "after three consecutive days"
    assert reading.context == (SICK,) and "three consecutive days" in reading.context_text
    assert "Question:" not in reading.context_text
    assert chat.calls[0][1]["temperature"] == 0.0 and chat.calls[0][1]["stop"] == ["\n"]
    with pytest.raises(ValueError, match="empty"):
        read("  ", [SICK], chat=chat)


def test_the_chat_reader_sends_exactly_the_prompt_read_sends():
    chat = ScriptedChat("Answer: three days.")
    read("How many sick days before a note?", [SICK, TRAVEL], chat=chat)
    answer = ChatReader(chat).answer("How many sick days before a note?", [SICK, TRAVEL])
    assert chat.calls[1] == chat.calls[0]
    assert chat.calls[1] == (reader_prompt("How many sick days before a note?", [SICK, TRAVEL]),
                             {"max_tokens": 32, "temperature": 0.0, "stop": ["\n"]})
    assert (answer.text, answer.passage, answer.found) == ("three days", None, True) and math.isnan(answer.score)
    assert ChatReader(chat).name == "scripted" and not ChatReader(ScriptedChat("")).answer("When?", [SICK]).found


def test_read_with_a_reader_returns_its_answer_and_refuses_a_chat_model_too():
    reader = ScriptedReader(("three consecutive days", 0))
    reading = read("How many sick days before a note?", [SICK, TRAVEL], reader=reader)
    assert reading.answer == reading.reply == "three consecutive days" and reading.context == (SICK, TRAVEL)
    assert reader.calls == [("How many sick days before a note?", ["en-sick-02", "en-travel-01"])]
    with pytest.raises(ValueError, match="not both"):
        read("When?", [SICK], chat=ScriptedChat("x"), reader=reader)


def test_groundedness_lists_the_words_the_context_does_not_have():
    grounded = groundedness("three consecutive days", SICK.doc.text)
    assert grounded.share == 1.0 and grounded.unsupported == ()
    half = groundedness("five consecutive weeks", SICK.doc.text)
    assert half.share == pytest.approx(1 / 3) and half.unsupported == ("five", "week")
    assert groundedness("the", SICK.doc.text).share is None  # stop words only: nothing to check
    assert groundedness("", "").unsupported == ()


def test_content_words_fold_stem_and_drop_stop_words():
    assert content_words("The Days of Tết") == ["day", "tet"]
    assert content_words("年假") == ["年假"]


def test_evaluate_reader_scores_answers_and_groundedness_per_question():
    chat = ScriptedChat("three consecutive days", "the travel portal", "")
    gold = [question("q01"), question("q02", answer="through the travel portal"), question("q03")]
    contexts = {"q01": [SICK], "q02": [SICK], "q03": []}
    result = evaluate_reader(lambda q: contexts[q.id], gold, chat=chat)
    rows = {row["id"]: row for row in result.per_question}
    assert rows["q01"]["exact_match"] == 1.0 and rows["q01"]["grounded"] == 1.0
    assert rows["q02"]["exact_match"] == 0.0 and rows["q02"]["f1"] > 0.5
    assert rows["q02"]["contains_gold"] == 0.0 and rows["q01"]["contains_gold"] == 1.0
    assert rows["q02"]["unsupported"] == ("travel", "portal") and rows["q02"]["grounded"] == 0.0
    assert rows["q03"]["grounded"] is None and rows["q03"]["context"] == ()
    assert result.means["grounded"] == 0.5  # over the two answers that have content words
    assert result.means["exact_match"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="no gold questions"):
        evaluate_reader(lambda q: [], [], chat=chat)


def test_evaluate_reader_takes_a_reader_and_does_not_score_its_abstention_for_groundedness():
    reader = ScriptedReader("three consecutive days", NOT_IN_PASSAGES)
    result = evaluate_reader(lambda q: [SICK], [question("q01"), question("q02")], reader=reader)
    rows = {row["id"]: row for row in result.per_question}
    assert rows["q01"]["exact_match"] == 1.0 and rows["q01"]["grounded"] == 1.0
    assert rows["q02"]["prediction"] == NOT_IN_PASSAGES and rows["q02"]["grounded"] is None
    assert rows["q02"]["unsupported"] == () and result.means["grounded"] == 1.0


@pytest.mark.model
def test_the_real_reader_answers_from_the_passage(local_chat):
    reading = read("After how many days of sick leave is a doctor's note needed?", [SICK], chat=local_chat)
    assert reading.answer and "\n" not in reading.answer and reading.seconds > 0
    assert groundedness(reading.answer, reading.context_text).share > 0  # it answers with words of the passage
