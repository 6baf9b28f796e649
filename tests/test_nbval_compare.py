"""The comparison rules of the notebook tests, and that nbval applies them (tests/nbval_compare.py)."""

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.nbval_compare import (
    CHAT,
    COMPARE_KEY,
    COUNT_TOLERANCE,
    COUNTS,
    EXACT,
    MODEL_TOLERANCE,
    NUMBERS,
    Tolerance,
    cell_comparison,
    cell_tolerances,
    comparison_in_run,
    comparison_kind,
    exactly_compared,
    marked_source,
    source_markers,
    split_numbers,
    texts_match,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("kind", [NUMBERS, COUNTS, CHAT])
def test_a_model_number_in_its_third_decimal_passes(kind):
    assert texts_match("nDCG@5 0.694", "nDCG@5 0.695", kind)[0]
    assert texts_match("[[1.    0.866 0.873]]", "[[1.    0.865 0.873]]", kind)[0]


def test_one_question_of_the_56_may_cross_a_cut_off():
    assert texts_match("recall@1 0.536", "recall@1 0.518", NUMBERS)[0]
    assert not texts_match("recall@1 0.536", "recall@1 0.500", NUMBERS)[0]


def test_a_cell_may_widen_the_tolerance_of_its_decimals_with_a_reason():
    kind, tolerance = cell_comparison("# NBVAL_MODEL_NUMBERS ±0.07 (one question of 15)\nprint(x)")
    assert kind == NUMBERS and tolerance.absolute == 0.07
    assert texts_match("paraphrase 0.87", "paraphrase 0.80", kind, tolerance)[0]
    assert not texts_match("paraphrase 0.87", "paraphrase 0.73", kind, tolerance)[0]
    assert not texts_match("paraphrase 0.87", "paraphrase 0.80", kind)[0]
    assert cell_comparison("print(1)") == (EXACT, MODEL_TOLERANCE)
    with pytest.raises(ValueError, match="between the default"):
        cell_comparison("# NBVAL_MODEL_NUMBERS ±0.001 (a finer tolerance than the default)\n")


def test_a_cell_may_widen_the_tolerance_of_its_counts_too():
    kind, decimals, counts = cell_tolerances("# NBVAL_MODEL_COUNTS ±0.04 ±3 (both rungs move)\nprint(x)")
    assert (kind, decimals.absolute, counts.minimum) == (COUNTS, 0.04, 3)
    assert texts_match("fixed 19", "fixed 22", kind, decimals, counts)[0]
    assert not texts_match("fixed 19", "fixed 23", kind, decimals, counts)[0]
    assert cell_tolerances("# NBVAL_MODEL_COUNTS ±4 (two rungs move twice)\n")[2].minimum == 4
    with pytest.raises(ValueError, match="count tolerance"):
        cell_tolerances("# NBVAL_MODEL_COUNTS ±0.04 ±1 (a count that may move by one)\n")


@pytest.mark.parametrize("marker", ["# NBVAL_MODEL_NUMBERS ±0.07", "# NBVAL_MODEL_NUMBERS ±0.07 (why)",
                                    "# NBVAL_MODEL_COUNTS ±3 ()", "# NBVAL_CHAT_OUTPUT ±0.1 ±3 two questions of 14"])
def test_a_widened_tolerance_needs_its_reason_in_a_few_words(marker):
    with pytest.raises(ValueError, match="without a reason|cannot read"):
        cell_tolerances(marker + "\nprint(x)")


@pytest.mark.parametrize("marker", ["# NBVAL_MODEL_NUMBERS ±0.3 (the loss after six steps)",
                                    "# NBVAL_MODEL_COUNTS ±0.04 ±6 (two rungs move three times)"])
def test_a_widened_tolerance_has_an_upper_bound(marker):
    with pytest.raises(ValueError, match="NBVAL_IGNORE_OUTPUT"):
        cell_tolerances(marker + "\nprint(x)")
    assert cell_tolerances("# NBVAL_MODEL_COUNTS ±0.2 ±5 (the widest a cell may ask for)\n")[1].absolute == 0.2


def test_an_unreadable_marker_says_what_to_write():
    with pytest.raises(ValueError, match="write it as"):
        cell_tolerances("# NBVAL_MODEL_NUMBERS ±7% (seven percent of the value)\n")


def test_a_marker_may_give_a_reason_without_widening():
    assert cell_tolerances("# NBVAL_CHAT_OUTPUT (the rewrites)\n") == (CHAT, MODEL_TOLERANCE, COUNT_TOLERANCE)


def test_a_model_number_off_by_five_hundredths_fails():
    same, why = texts_match("mrr 0.70", "mrr 0.75", NUMBERS)
    assert not same and "0.70 became 0.75" in why
    assert not texts_match("mrr 0.700", "mrr 0.725", NUMBERS)[0]


def test_larger_numbers_get_a_relative_tolerance():
    assert texts_match("loss 12.50", "loss 12.70", NUMBERS)[0]
    assert not texts_match("loss 12.50", "loss 13.00", NUMBERS)[0]


def test_a_changed_word_fails():
    same, why = texts_match("answer en-sick-04 0.882", "answer en-sick-06 0.882", NUMBERS)
    assert not same and "text" in why


def test_a_changed_count_fails_unless_the_cell_opts_in():
    assert not texts_match("questions that differ: 16 of 56", "questions that differ: 17 of 56", NUMBERS)[0]
    assert texts_match("questions that differ: 16 of 56", "questions that differ: 17 of 56", COUNTS)[0]
    assert texts_match("questions that differ: 16 of 56", "questions that differ: 18 of 56", COUNTS)[0]
    assert not texts_match("questions that differ: 16 of 56", "questions that differ: 19 of 56", COUNTS)[0]


def test_exact_cells_accept_nothing_else():
    assert texts_match("bm25 3.142", "bm25 3.142", EXACT)[0]
    assert not texts_match("bm25 3.142", "bm25 3.143", EXACT)[0]


def test_ids_with_digits_are_text_not_numbers():
    words, numbers = split_numbers("q41 en-remote-01 kb-en-031 recall@5 -0.107 +0.054 1,736 tokens 1e-4 60%")
    assert numbers == ["5", "-0.107", "+0.054", "1,736", "1e-4", "60"]
    assert not texts_match("q41 -> en-remote-01", "q42 -> en-remote-02", COUNTS)[0]


def test_a_decimal_never_matches_a_whole_number():
    assert not texts_match("score 1.0", "score 1", COUNTS)[0]


def test_padding_that_follows_a_wider_number_is_ignored():
    assert texts_match("fixed  9   broke", "fixed  10  broke", COUNTS)[0]


def test_a_cell_names_its_comparison_with_one_marker():
    assert comparison_kind("x = 1\nprint(x)") == EXACT
    assert comparison_kind("# NBVAL_MODEL_NUMBERS\nprint(x)") == NUMBERS
    assert comparison_kind("#  NBVAL_MODEL_COUNTS\nprint(x)") == COUNTS
    assert comparison_kind("# NBVAL_CHAT_OUTPUT\nprint(x)") == CHAT
    with pytest.raises(ValueError, match="more than one comparison marker"):
        comparison_kind("# NBVAL_MODEL_NUMBERS\n# NBVAL_MODEL_COUNTS\n")


def test_two_markers_of_one_kind_are_an_error_too():
    with pytest.raises(ValueError, match="more than one comparison marker"):
        cell_tolerances("# NBVAL_CHAT_OUTPUT ±0.06 (three questions of 56)\n"
                        "# NBVAL_CHAT_OUTPUT ±0.04 (two questions of 56)\nprint(x)")
    with pytest.raises(ValueError, match="more than one comparison marker"):
        cell_tolerances("# NBVAL_MODEL_COUNTS\nx = 1\n# NBVAL_MODEL_COUNTS\n")


# exact whatever the cell: @k, denominators, runs of whole numbers


@pytest.mark.parametrize("kind", [NUMBERS, COUNTS, CHAT])
def test_the_k_of_a_metric_is_exact(kind):
    assert not texts_match("recall@5 0.700", "recall@3 0.700", kind)[0]
    assert not texts_match("nDCG@10 0.645", "nDCG@9 0.645", kind)[0]


@pytest.mark.parametrize("here, there", [("fixed 16 of 56", "fixed 16 of 57"), ("3/56 questions", "3/55 questions"),
                                         ("right 7 out of 8", "right 7 out of 9"), ("14 of 14", "13 of 13")])
def test_a_denominator_is_exact_in_a_counts_cell(here, there):
    same, why = texts_match(here, there, COUNTS)
    assert not same and "denominator" in why
    assert texts_match("fixed 16 of 56", "fixed 18 of 56", COUNTS)[0]


def test_a_run_of_whole_numbers_is_one_exact_token():
    assert not texts_match("ranks 1,2,3,4,5", "ranks 3,1,2,5,4", COUNTS)[0]
    assert not texts_match("steps per question: [1, 2, 2]", "steps per question: [1, 3, 2]", COUNTS)[0]
    assert not texts_match("ranks 1,2,3", "ranks 1,2,3,4", COUNTS)[0]
    assert texts_match("hops: {2: 38, 3: 9}", "hops: {2: 40, 3: 8}", COUNTS)[0]  # a dict's values are counts
    assert texts_match("scores 0.51, 0.49", "scores 0.50, 0.50", COUNTS)[0]  # decimals keep their tolerance
    assert exactly_compared(*split_numbers("fixed 20, broke 6; ranks 4,5 of 9")) == {2, 3, 4}


# chat output: exact counts where the chat model replies as recorded, outside the perturbed run


def test_chat_output_is_compared_by_where_and_how_the_run_happens():
    assert comparison_in_run(CHAT, {}, lambda: True) == CHAT
    assert comparison_in_run(CHAT, {"HARNESS_EMBEDDING_NOISE": "0", "HARNESS_SCORE_NOISE": ""}, lambda: True) == CHAT
    assert comparison_in_run(CHAT, {"HARNESS_EMBEDDING_NOISE": "1e-2"}, lambda: True) == COUNTS
    assert comparison_in_run(CHAT, {"HARNESS_SCORE_NOISE": "1e-3"}, lambda: True) == COUNTS
    assert comparison_in_run(CHAT, {}, lambda: False) is None


def test_other_cells_do_not_ask_for_the_fingerprint():
    def fingerprint():
        raise AssertionError("the chat model's fingerprint is computed for chat cells only")

    assert [comparison_in_run(kind, {"HARNESS_EMBEDDING_NOISE": "1e-2"}, fingerprint)
            for kind in (EXACT, NUMBERS, COUNTS)] == [EXACT, NUMBERS, COUNTS]


def test_whole_numbers_of_chat_output_are_exact_but_decimals_keep_their_tolerance():
    same, why = texts_match("28 model calls, accuracy 0.625", "29 model calls, accuracy 0.625", CHAT)
    assert not same and "chat output" in why
    assert texts_match("28 model calls, accuracy 0.625", "28 model calls, accuracy 0.640", CHAT)[0]
    assert texts_match("28 model calls", "29 model calls", COUNTS)[0]  # the perturbed run


def _notebook(cells: list[tuple[str, str]]) -> dict:
    """A notebook whose code cells have the given sources and committed stdout; a first-line marker goes to the
    cell's metadata, as the lessons keep it."""
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": kernel},
            "cells": [{"cell_type": "code", "id": uuid.uuid4().hex[:8], "execution_count": i, **_kept_apart(source),
                       "outputs": [{"output_type": "stream", "name": "stdout", "text": out}]}
                      for i, (source, out) in enumerate(cells, start=1)]}


def _kept_apart(source: str) -> dict:
    """A cell's metadata and source, its first line moved to the metadata if it is a comparison marker."""
    first, _, rest = source.partition("\n")
    if first.startswith("# NBVAL_"):
        return {"metadata": {COMPARE_KEY: {"compare": first.removeprefix("# ")}}, "source": rest}
    return {"metadata": {}, "source": source}


def test_marked_source_reads_the_comparison_from_the_metadata_and_tags():
    chat = {"metadata": {COMPARE_KEY: {"compare": "NBVAL_CHAT_OUTPUT ±0.14 (three questions of 22 move)"}},
            "source": ["print(f1)\n"]}
    assert marked_source(chat) == "# NBVAL_CHAT_OUTPUT ±0.14 (three questions of 22 move)\nprint(f1)\n"
    assert cell_tolerances(marked_source(chat))[0] == CHAT
    ignored = {"metadata": {"tags": ["nbval-ignore-output"]}, "source": "print(versions)"}
    assert marked_source(ignored) == "# NBVAL_IGNORE_OUTPUT\nprint(versions)"
    assert marked_source({"metadata": {}, "source": "print(1)"}) == "print(1)"
    assert source_markers(chat) == [] and source_markers(ignored) == []
    assert source_markers({"source": ["x = 1\n", "# NBVAL_MODEL_NUMBERS\n"]}) == ["# NBVAL_MODEL_NUMBERS"]


@pytest.mark.model
def test_nbval_applies_the_rules_cell_by_cell(tmp_path):
    folder = ROOT / ".cache" / f"nbval-compare-{uuid.uuid4().hex[:8]}"  # under the root conftest.py
    folder.mkdir(parents=True)
    notebook = folder / "rules.ipynb"
    notebook.write_text(json.dumps(_notebook([
        ("# NBVAL_MODEL_NUMBERS\nprint(0.695)", "0.694\n"),  # passes
        ("print(0.695)", "0.694\n"),  # exact: fails
        ("# NBVAL_MODEL_NUMBERS\nprint('count', 17)", "count 16\n"),  # a count without opting in: fails
        ("# NBVAL_MODEL_COUNTS\nprint('count', 17)", "count 16\n"),  # passes
    ])), encoding="utf-8")
    try:
        command = [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider", "-q",
                   str(notebook)]
        run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
    assert "2 failed, 2 passed" in run.stdout, run.stdout
    assert "rules.ipynb::Cell 1" in run.stdout and "rules.ipynb::Cell 2" in run.stdout


def _sanitize(text: str) -> str:
    """The text as nbval sanitizes it with tests/nbval_sanitize.cfg."""
    import re

    from nbval.plugin import get_sanitize_patterns

    patterns = get_sanitize_patterns((ROOT / "tests" / "nbval_sanitize.cfg").read_text(encoding="utf-8"))
    for regex, replacement in patterns:
        text = re.sub(regex, replacement, text)
    return text


@pytest.mark.parametrize("here, there", [
    ("took 2.19 s, 49 tokens/s\n", "took 0.4 s, 120 tokens/s\n"),
    ("no GGUF file at /root/models/q.gguf\n", "no GGUF file at /home/ana/models/q.gguf\n"),
    ("rung  1,749 ms  \n", "rung  12 ms\n"),
])
def test_the_sanitizer_hides_what_depends_on_the_machine(here, there):
    assert _sanitize(here) == _sanitize(there)


def test_the_sanitizer_leaves_a_verdict_to_the_comparison():
    row = "05 parent-child  +0.054 [-0.018, +0.143]    +0.024 [-0.036, +0.081]  neither           11     6\n"
    assert _sanitize(row) == row


# verdicts after 95% intervals

_ROW = "+ cross-encoder  -0.117 [-0.226, +0.001]     -0.131 [-0.243, -0.051]    {}\n"


def _compared(here: str, there: str, *rules) -> tuple[bool, str]:
    """texts_match after the sanitizer, as nbval compares."""
    return texts_match(_sanitize(here), _sanitize(there), *rules)


def test_a_verdict_no_allowed_move_can_change_is_compared():
    decided = "+ rung  +0.232 [+0.107, +0.375]  +0.219 [+0.104, +0.335]  recall@5 and MRR  20     6\n"
    flipped = "+ rung  +0.232 [+0.107, +0.375]  +0.219 [+0.104, +0.335]  MRR               20     6\n"
    assert not _compared(decided, flipped, NUMBERS, Tolerance(0.04, 0.02))[0]
    row = _ROW.replace("+0.001", "+0.041")  # no end within 0.04 of 0
    assert not _compared(row.format("mrr@5"), row.format("none"), NUMBERS, Tolerance(0.04, 0.02))[0]


def test_a_verdict_may_differ_when_an_end_lies_within_the_tolerance_of_0():
    assert _compared(_ROW.format("mrr@5"), _ROW.format("ndcg@5, mrr@5"), NUMBERS)[0]  # +0.001 may cross 0
    assert _compared("+0.070 [-0.008, +0.175]  none\n", "+0.071 [+0.004, +0.176]  f1\n", CHAT,
                     Tolerance(0.15, 0.02))[0]
    assert not _compared("gain [+0.050, +0.300]  f1\n", "gain [+0.045, +0.300]  none\n", NUMBERS)[0]


def test_a_verdict_is_judged_by_every_interval_of_its_row():
    row = "+0.054 [-0.018, +0.143]    +0.024 [-0.236, -0.081]  {}\n"
    assert _compared(row.format("MRR"), row.format("neither"), COUNTS)[0]  # -0.018 may cross 0
    decided = row.replace("-0.018", "-0.118")
    assert not _compared(decided.format("MRR"), decided.format("neither"), COUNTS)[0]


def test_the_sanitizer_keeps_what_is_data():
    assert _sanitize("/work/data/root/file 25 days\n") == "/work/data/root/file 25 days\n"


def test_the_committed_value_picks_the_rule_so_a_number_near_one_cannot_switch_rules():
    widened = Tolerance(absolute=0.1, relative=0.02)
    assert widened.accepts(0.97, 1.05)  # 0.97 was committed: within ±0.1, although 1.05 is above 1
    assert not Tolerance(absolute=0.02, relative=0.02).accepts(1.5, 1.45)  # above 1: within 2% only


def test_a_chat_cell_whose_counts_also_follow_the_embedder_may_widen_them_and_only_then():
    widened = cell_tolerances("# NBVAL_CHAT_OUTPUT ±0.06 ±3 (fixed and broke follow e5's near-ties)\nx = 1")
    plain = cell_tolerances("# NBVAL_CHAT_OUTPUT\nx = 1")
    assert texts_match("broke 16", "broke 18", *widened)[0]
    assert not texts_match("broke 16", "broke 20", *widened)[0]
    assert not texts_match("broke 16", "broke 18", *plain)[0]
