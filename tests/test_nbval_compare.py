"""The comparison rules of the notebook tests, and that nbval applies them (tests/nbval_compare.py)."""

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.nbval_compare import (CHAT, COUNTS, EXACT, MODEL_TOLERANCE, NUMBERS, cell_comparison, cell_tolerances,
                                 comparison_kind, split_numbers, texts_match)

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
    with pytest.raises(ValueError, match="below the default"):
        cell_comparison("# NBVAL_MODEL_NUMBERS ±0.001\n")


def test_a_cell_may_widen_the_tolerance_of_its_counts_too():
    kind, decimals, counts = cell_tolerances("# NBVAL_MODEL_COUNTS ±0.04 ±3 (both rungs move)\nprint(x)")
    assert (kind, decimals.absolute, counts.minimum) == (COUNTS, 0.04, 3)
    assert texts_match("fixed 19", "fixed 22", kind, decimals, counts)[0]
    assert not texts_match("fixed 19", "fixed 23", kind, decimals, counts)[0]
    with pytest.raises(ValueError, match="count tolerance"):
        cell_tolerances("# NBVAL_MODEL_COUNTS ±0.04 ±1\n")


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
    with pytest.raises(ValueError, match="conflicting"):
        comparison_kind("# NBVAL_MODEL_NUMBERS\n# NBVAL_MODEL_COUNTS\n")


def _notebook(cells: list[tuple[str, str]]) -> dict:
    """A notebook whose code cells have the given sources and committed stdout."""
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                            "language": "python"}},
            "cells": [{"cell_type": "code", "id": uuid.uuid4().hex[:8], "execution_count": i, "metadata": {},
                       "source": source, "outputs": [{"output_type": "stream", "name": "stdout", "text": out}]}
                      for i, (source, out) in enumerate(cells, start=1)]}


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
        run = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider",
                              "-q", str(notebook)], cwd=ROOT, capture_output=True, text=True, timeout=300)
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


def test_an_interval_keeps_its_ends_and_its_verdict_becomes_a_token():
    here = "+ cross-encoder  -0.117 [-0.226, +0.001]     -0.131 [-0.243, -0.011]    mrr@5      \n"
    there = "+ cross-encoder  -0.117 [-0.226, +0.001]     -0.131 [-0.243, -0.011]    ndcg@5, mrr@5\n"
    assert _sanitize(here) == _sanitize(there) == (
        "+ cross-encoder  -0.117 [-0.226, +0.001]     -0.131 [-0.243, -0.011]  <VERDICT>\n")
    row = "05 parent-child  +0.054 [-0.018, +0.143]    +0.024 [-0.036, +0.081]  neither           11     6\n"
    assert _sanitize(row) == "05 parent-child  +0.054 [-0.018, +0.143]    +0.024 [-0.036, +0.081]  <VERDICT>           11     6\n"
    assert _sanitize("recall@5 and MRR\n[0.643 0.306 0.772]  done\n") == "recall@5 and MRR\n[0.643 0.306 0.772]  done\n"


def test_the_sanitizer_keeps_what_is_data():
    assert _sanitize("/work/data/root/file 25 days\n") == "/work/data/root/file 25 days\n"
