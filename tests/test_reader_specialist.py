"""The reader specialist's prompt, reply reading, exact extraction, scores and Reader wrapper (fakes, no model)."""

import math

import pytest

from ragkit.corpus import Doc, Hit
from ragkit.generate.reader_specialist import SpecialistReader
from ragkit.generate.spans import closest_span, extract
from ragkit.models.jobs import PASSAGE_CHARS, SYSTEMS, parse_reader, reader_messages
from ragkit.passages import NOT_IN_PASSAGES
from ragkit.train.heldout import heldout_scores, reader_scores
from ragkit.train.records import reader as reader_records
from tests.fakes import ScriptedChat


def test_the_reader_prompt_numbers_titled_passages_and_cuts_long_ones():
    messages = reader_messages("Where  is\nBergen?", [("Bergen", "A city  in Norway."), ("", "x " * 1000)])
    assert messages[0] == {"role": "system", "content": SYSTEMS["reader"]}
    lines = messages[1]["content"].split("\n")
    assert lines[:2] == ["Passages:", "[1] Bergen: A city in Norway."]
    assert lines[2].startswith("[2] x x") and len(lines[2]) <= len("[2] ") + PASSAGE_CHARS
    assert lines[-1] == "Question: Where is Bergen?"


@pytest.mark.parametrize("reply, answer", [(" Saint Bernadette.\nmore", "Saint Bernadette"), ('"Oslo"', "Oslo"),
                                           ("", ""), ("\n\n no", "no")])
def test_a_reader_reply_is_its_first_line_without_quotes_or_final_period(reply, answer):
    assert parse_reader(reply) == answer


def test_extraction_keeps_the_passage_wording_and_says_which_passage():
    bodies = ["Oslo: Oslo is the capital.", "Paris: The Eiffel Tower is tall."]
    assert extract("the eiffel tower", bodies) == ("The Eiffel Tower", 1)
    assert extract("tower of Eiffel", bodies) == ("Eiffel Tower", 1)  # the closest run of words, by token F1
    assert extract("Yes", bodies) == ("yes", None) and extract(NOT_IN_PASSAGES, bodies) == (NOT_IN_PASSAGES, None)
    assert extract("Zork", bodies) == ("Zork", None)  # shares no word: kept as written
    assert closest_span("", bodies) is None


def test_reader_scores_compare_with_each_records_answer_per_source_and_kind():
    records = [{"answer": " Oslo", "source": "squad", "kind": "span"},
               {"answer": " no", "source": "strategyqa", "kind": "no"}]
    scores = reader_scores(["oslo", "yes"], records)
    assert scores["em"] == 0.5 and scores["f1[squad]"] == 1.0 and scores["f1[no]"] == 0.0 and scores["n"] == 2
    with pytest.raises(ValueError):
        reader_scores(["oslo"], records)


def test_heldout_scores_read_the_reply_as_the_reader_does():
    records = [{"messages": [], "answer": " The Eiffel Tower", "passages": [["Paris", "The Eiffel Tower is tall."]],
                "source": "squad", "kind": "span"}]
    scores = heldout_scores(ScriptedChat("the eiffel tower.\nignored"), records, job="reader")
    assert scores["em"] == 1.0


def test_the_specialist_reader_asks_in_the_reader_prompt_and_returns_a_span_with_its_passage():
    chat = ScriptedChat(" capital of norway")
    reader = SpecialistReader(chat)
    hits = [Hit(Doc("d1", "Bergen is on the coast."), 1.0),
            Hit(Doc("d2", "Oslo is the Capital of Norway.", "Oslo"), 0.5)]
    answer = reader.answer("What is Oslo?", hits)
    assert (answer.text, answer.passage, answer.found) == ("Capital of Norway", 1, True) and math.isnan(answer.score)
    assert chat.calls[0][0] == reader_messages("What is Oslo?", [("", hits[0].doc.text), ("Oslo",
                                                                                                    hits[1].doc.text)])
    with pytest.raises(ValueError):
        reader.answer(" ", hits)


def test_a_reader_record_is_a_training_chat_with_the_answer_after_a_space():
    made = reader_records.record("Is it?", [["T", "text"]], ["yes"], "yes", "strategyqa")
    assert made["messages"] == reader_messages("Is it?", [["T", "text"]]) and made["answer"] == " yes"
    assert reader_records.record("Q?", [["T", "x"]], [], "none", "squad")["answer"] == " " + NOT_IN_PASSAGES
    assert reader_records.record("Q?", [["T", "Oslo x"]], ["Oslo"], "span", "squad")["answer"] == " Oslo"
