"""The span reader: its input, where answers sit in it, the best span, the loss; and its training records."""

import json
import re

import numpy as np
import pytest

from benchmarks import span_head as span_reader
from benchmarks.span_head import OPTIONS, UNANSWERABLE, answer_positions, best_span, encode, span_text
from ragkit.passages import NOT_IN_PASSAGES
from ragkit.train.records import reader as reader_records
from ragkit.train.splits import split_of


class WordTokenizer:
    """Words with their leading spaces as tokens (like a BPE tokenizer's 'Ġword'), with character offsets."""

    def __init__(self):
        self.vocab: dict[str, int] = {}

    def __call__(self, text, add_special_tokens=False, return_offsets_mapping=False):
        pieces = [(m.group(), m.span()) for m in re.finditer(r"\s*[^\s]+|\s+", text)]
        ids = [self.vocab.setdefault(piece, len(self.vocab)) for piece, _ in pieces]
        return {"input_ids": ids, "offset_mapping": [span for _, span in pieces]}


PASSAGES = [("Oslo", "Oslo is the capital of Norway."), ("Bergen", "Bergen lies on the west coast of Norway.")]


def test_the_input_marks_passage_tokens_and_ends_with_the_three_options():
    encoded = encode(WordTokenizer(), "Where is Bergen?", PASSAGES)
    assert encoded.bodies == ["Oslo: Oslo is the capital of Norway.",
                              "Bergen: Bergen lies on the west coast of Norway."]
    assert encoded.passage[-3:] == [2, 3, 4]  # yes, no, none after both passages
    assert encoded.passage[0] == UNANSWERABLE  # the question itself is never an answer
    assert {p for p in encoded.passage if 0 <= p < 2} == {0, 1}


def test_every_occurrence_of_the_answer_is_a_target_and_an_option_kind_points_at_its_token():
    encoded = encode(WordTokenizer(), "Which country?", PASSAGES)
    starts, ends = answer_positions(encoded, ["Norway"], "span")
    assert len(starts) == 2 and [span_text(encoded, s, e)[0] for s, e in zip(starts, ends)] == ["Norway", "Norway"]
    assert {span_text(encoded, s, e)[1] for s, e in zip(starts, ends)} == {0, 1}
    for option in OPTIONS:
        at = encoded.option_position(option)
        assert answer_positions(encoded, [], option) == ([at], [at])
    assert span_text(encoded, encoded.option_position("none"), encoded.option_position("none")) == (NOT_IN_PASSAGES,
                                                                                                    None)


def test_a_multi_word_answer_maps_to_its_first_and_last_tokens():
    encoded = encode(WordTokenizer(), "Where is Bergen?", PASSAGES)
    (start,), (end,) = answer_positions(encoded, ["the west coast"], "span")
    assert end - start == 2 and span_text(encoded, start, end) == ("the west coast", 1)


def test_the_best_span_stays_inside_one_passage_and_an_option_wins_when_it_scores_higher():
    encoded = encode(WordTokenizer(), "q?", PASSAGES)
    start, end = np.zeros(len(encoded.ids)), np.zeros(len(encoded.ids))
    last_of_first = max(i for i, p in enumerate(encoded.passage) if p == 0)
    first_of_second = min(i for i, p in enumerate(encoded.passage) if p == 1)
    start[last_of_first], end[first_of_second] = 5.0, 5.0  # the best pair would cross two passages
    first, last, _ = best_span(start, end, encoded)
    assert encoded.passage[first] == encoded.passage[last]
    start[encoded.option_position("no")] = end[encoded.option_position("no")] = 20.0
    assert span_text(encoded, *best_span(start, end, encoded)[:2]) == ("no", None)


def test_a_span_is_never_longer_than_max_tokens():
    encoded = encode(WordTokenizer(), "q?", PASSAGES)
    start, end = np.zeros(len(encoded.ids)), np.zeros(len(encoded.ids))
    tokens = [i for i, p in enumerate(encoded.passage) if p == 1]
    start[tokens[0]], end[tokens[-1]] = 3.0, 3.0
    first, last, _ = best_span(start, end, encoded, max_tokens=3)
    assert last - first < 3


def test_the_loss_is_lower_when_the_logits_point_at_a_gold_position():
    torch = pytest.importorskip("torch")
    answerable = torch.tensor([[False, True, True, True]])
    targets = torch.tensor([[False, False, True, False]])
    right = torch.tensor([[0.0, 0.0, 4.0, 0.0]])
    wrong = torch.tensor([[0.0, 4.0, 0.0, 0.0]])
    assert span_reader.span_loss(right, right, answerable, targets, targets) < span_reader.span_loss(
        wrong, wrong, answerable, targets, targets)
    masked = torch.tensor([[50.0, 0.0, 4.0, 0.0]])  # a huge logit on an unanswerable token changes nothing
    assert torch.isclose(span_reader.span_loss(masked, masked, answerable, targets, targets),
                         span_reader.span_loss(right, right, answerable, targets, targets))


# --- records ----------------------------------------------------------------------------------------------


def squad_item(title, context, question, answer):
    return {"title": title, "context": context, "question": question,
            "answers": [{"text": answer, "answer_start": context.find(answer)}]}


def test_squad_records_put_the_answer_window_among_same_article_windows_or_leave_it_out():
    items = [squad_item("T", f"Sentence {i} says {i}{i}{i}. Another line here.", f"What does sentence {i} say?",
                        f"{i}{i}{i}") for i in range(1, 40)]
    records = reader_records.squad_records(items)
    answer_of = {i["question"]: i["answers"][0]["text"] for i in items}
    assert records and {r["kind"] for r in records} == {"span", "none"}
    for record in records:
        assert reader_records.holds(record["passages"], answer_of[record["question"]]) == (record["kind"] == "span")
        assert {title for title, _ in record["passages"]} == {"T"}
        assert 1 <= len(record["passages"]) <= 4


def test_no_gold_records_never_hold_the_answer_and_the_split_follows_the_question():
    records, _ = reader_records.build_records()
    assert {r["kind"] for r in records} == {"span", "yes", "no", "none"}
    squad = {r["question"]: r for r in records if r["source"] == "squad"}
    originals = {json.dumps(i["question"]): i["answers"][0]["text"] for i in _squad_items()}
    for question, record in list(squad.items())[:2000]:
        if record["kind"] == "none":
            assert not reader_records.holds(record["passages"], originals[json.dumps(question)])
    assert all(r["split"] == split_of(r["question"]) for r in records)


def _squad_items():
    from ragkit.corpus import read_jsonl

    return read_jsonl(reader_records.source_files()["squad"])


def test_strategyqa_records_leave_dev200_out_and_balance_yes_and_no():
    items = [{"qid": f"q{i}", "question": f"Is {i} even?", "facts": [f"{i} is a number."], "answer": i % 2 == 0,
              "term": "numbers"} for i in range(20)]
    records = reader_records.strategyqa_records(items, exclude=["q0", "q1"], limit=10)
    assert len(records) == 10 and {r["kind"] for r in records} == {"yes", "no"}
    assert not {"Is 0 even?", "Is 1 even?"} & {r["question"] for r in records}


def test_hotpotqa_records_read_both_copies_the_same_way():
    context = [["A", ["Alpha is in ", "Zed."]], ["B", ["Zed is a city."]], ["C", ["Other."]], ["D", ["More."]]]
    listed = {"question": "Where is Alpha?", "answer": "Zed",
              "supporting": [{"title": "A", "text": "Alpha is in Zed."}, {"title": "B", "text": "Zed is a city."}],
              "distractors": [{"title": "C", "text": "Other."}, {"title": "D", "text": "More."}]}
    original = {"question": "Where is Alpha?", "answer": "Zed", "context": context,
                "supporting_facts": [["A", 0], ["B", 0]]}
    assert reader_records.paragraphs_of(original) == reader_records.paragraphs_of(listed)
