"""The prose of every notebook states only numbers it printed, set in code, or names a source for, at the
precision it writes them (tests/prose_numbers.py), and the guard's extraction and matching rules on small
hand-made notebooks."""

import json
import subprocess
import sys

import pytest

from tests.prose_numbers import NOTEBOOKS, ROOT, check_file, check_notebook, main, source_markers, written_numbers


def markdown(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def code(source, printed="", stderr=""):
    outputs = [{"output_type": "stream", "name": "stdout", "text": printed}] if printed else []
    if stderr:
        outputs.append({"output_type": "stream", "name": "stderr", "text": stderr})
    return {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": source, "outputs": outputs}


def notebook(*cells):
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def unmatched(*cells):
    """The numbers of the notebook's prose that the guard reports."""
    return [violation.number for violation in check_notebook(notebook(*cells))]


def numbers(text):
    return [number.text for number in written_numbers(text) if not number.exempt]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_the_prose_states_only_numbers_the_notebook_shows_or_sources(path):
    violations = check_file(path)
    assert not violations, (f"{len(violations)} number(s) in the prose of {path.relative_to(ROOT)} appear in no "
                            "output or code cell and have no <!-- source: x = where it comes from --> marker in "
                            "their cell:\n"
                            + "\n".join(map(str, violations)))


# extraction


def test_decimals_thousands_percentages_and_signs_are_numbers():
    assert numbers("recall 0.467, 1,127 pairs, 77% of them, +0.054 and −0.036, ±0.07, -0.5") == \
        ["0.467", "1,127", "77%", "+0.054", "−0.036", "±0.07", "-0.5"]
    assert [n.value for n in written_numbers("1,127 and −0.036 and 77 %")] == [1127, -0.036, 77]
    assert numbers("ranks 16-20, and 1e-3") == ["16", "20", "1e-3"]


def test_parts_of_names_are_not_numbers():
    assert numbers("q41, kb-en-031, SmolLM2-135M-Instruct, e5, nDCG@10, x86_64, Q4_1, Qwen2.5-1.5B, a 135M model, "
                   "the 25th, python 3.11.7, issue #12, en-sick-02") == []


def test_code_comments_urls_headings_list_items_and_references_are_not_prose():
    text = ("# 01 · Bag of words\n## 3. The ladder\n### Exercise 4.2 — Depth 20\n"
            "Run `k=200` and\n```python\nx = 0.123\n```\n<!-- 0.999 -->\n<b>bold</b>\n"
            "[the paper 42](https://arxiv.org/abs/2402.05672) and https://example.com/55\n"
            "1. first\n12. twelfth\n"
            "See lesson 04, lessons 01–05, exercises 8.2 and 8.3, section 15, §12, steps 11 to 14.")
    assert numbers(text) == ["20", "42"]


def test_years_count_as_numbers_except_in_a_citation():
    assert numbers("(He, Zhang and Roth,\n2022) and (Wang et al., 2024, *E5*) and Wang et al. (2024)") == []
    assert numbers("in 2024 the handbook grew") == ["2024"]


def test_whole_numbers_up_to_ten_are_exempt_but_not_decimals_percentages_or_deltas():
    assert numbers("top 5, 2 cores, 3 steps, 10 documents, 0 errors") == []
    assert numbers("11 documents, 1.00, 5%, +2") == ["11", "1.00", "5%", "+2"]


# matching


def test_a_number_matches_an_output_at_its_written_precision():
    printed = code("print(score)", "recall@5 0.467\n")
    assert unmatched(markdown("recall@5 is 0.467, about 0.47 or 0.5"), printed) == []
    assert unmatched(markdown("recall@5 is 0.46"), printed) == ["0.46"]
    assert unmatched(markdown("recall@5 is 0.468"), printed) == ["0.468"]


def test_a_percentage_matches_a_share_or_a_printed_percentage():
    assert unmatched(markdown("77% of the questions"), code("print(x)", "share 0.774\n")) == []
    assert unmatched(markdown("77% of the questions"), code("print(x)", "share 77%\n")) == []
    assert unmatched(markdown("78% of the questions"), code("print(x)", "share 0.774\n")) == ["78%"]


def test_a_thousands_comma_and_a_unicode_minus_match_plain_outputs():
    assert unmatched(markdown("1,127 pairs, a change of −0.036"), code("print(x)", "1127 pairs -0.036\n")) == []


def test_a_sign_must_agree_but_a_magnitude_may_describe_a_negative_change():
    printed = code("print(delta)", "delta -0.054\n")
    assert unmatched(markdown("it falls by 0.054"), printed) == []
    assert unmatched(markdown("a change of +0.054"), printed) == ["+0.054"]


def test_a_model_cell_lends_its_prose_no_tolerance():
    prose = markdown("paraphrase recall 0.87")
    assert unmatched(prose, code("# NBVAL_MODEL_NUMBERS ±0.07 (one question of 15)\nprint(r)", "0.80\n")) == ["0.87"]
    assert unmatched(prose, code("# NBVAL_MODEL_NUMBERS\nprint(r)", "0.855\n")) == ["0.87"]
    assert unmatched(prose, code("# NBVAL_CHAT_OUTPUT ±0.15 (two questions of 14)\nprint(r)", "0.866\n")) == []
    assert unmatched(markdown("recall 0.467"), code("# NBVAL_MODEL_NUMBERS\nprint(r)", "0.466\n")) == ["0.467"]


def test_whole_numbers_match_at_written_precision_in_counts_and_chat_cells_too():
    prose = markdown("28 model calls")
    assert unmatched(prose, code("# NBVAL_MODEL_COUNTS\nprint(n)", "30 calls\n")) == ["28"]
    assert unmatched(prose, code("# NBVAL_CHAT_OUTPUT\nprint(n)", "26 calls\n")) == ["28"]
    assert unmatched(prose, code("# NBVAL_MODEL_COUNTS ±3 (two rungs move twice)\nprint(n)", "28 calls\n")) == []


def test_a_setting_in_code_matches_at_written_precision_only():
    assert unmatched(markdown("the top 20, with 2,000 resamples"),
                     code("hits = search(q, k=20)\nci = bootstrap(x, resamples=2_000)")) == []
    assert unmatched(markdown("b = 0.78"),
                     code("# NBVAL_MODEL_NUMBERS ±0.07 (one question of 15)\nindex(b=0.75)")) == ["0.78"]


def test_stderr_is_not_evidence():
    assert unmatched(markdown("99% done"), code("run()", stderr="99%|#########|\n")) == ["99%"]


def test_a_number_from_another_cell_of_prose_is_not_evidence():
    assert unmatched(markdown("0.677 published"), markdown("0.677 again")) == ["0.677", "0.677"]


# source markers


def test_a_source_marker_covers_the_numbers_it_names_with_their_source():
    cell = markdown("e5 reports 0.677 on SciFact, 7 a topic, 12 on 1,127 pairs.\n"
                    "<!-- source: 0.677 = multilingual-e5-small's published SciFact nDCG@10 (Wang et al., 2024); "
                    "12, 1,127 = the design of data/ -->")
    assert unmatched(cell) == []
    assert [(number.text, where[:12]) for number, where in source_markers(cell["source"])] == \
        [("0.677", "multilingual"), ("12", "the design o"), ("1,127", "the design o")]


def test_a_bare_list_or_an_empty_source_covers_nothing():
    assert unmatched(markdown("e5 reports 0.677 <!-- source: 0.677 -->")) == ["0.677"]
    assert unmatched(markdown("e5 reports 0.677 <!-- source: 0.677 = -->")) == ["0.677"]
    assert unmatched(markdown("e5 reports 0.677 <!-- 0.677 = the paper -->")) == ["0.677"]


def test_a_marker_covers_its_own_cell_only_and_a_chain_of_numbers_shares_one_source():
    sourced = markdown("473 of 494 tokens <!-- source: 473 = 494 = the counts lesson 04's exercise prints -->")
    assert unmatched(sourced) == []
    assert unmatched(sourced, markdown("494 tokens")) == ["494"]


def test_a_percentage_is_covered_by_its_share():
    assert unmatched(markdown("77% of them <!-- source: 0.77 = the share in the paper's table -->")) == []


# the command line


def test_the_command_line_prints_one_violation_a_line(tmp_path, capsys):
    path = tmp_path / "lesson.ipynb"
    path.write_text(json.dumps(notebook(code("print(0.5)", "0.5\n"), markdown("It is 0.5, not 0.25."))))
    assert main([str(path)]) == 1
    assert capsys.readouterr().out == f"{path} [1] 0.25: …It is 0.5, not [0.25].…\n"
    path.write_text(json.dumps(notebook(code("print(0.5)", "0.5\n"), markdown("It is 0.5."))))
    assert main([str(path)]) == 0


def test_the_module_runs_as_a_command(tmp_path):
    path = tmp_path / "lesson.ipynb"
    path.write_text(json.dumps(notebook(markdown("Exactly 42 of them."))))
    run = subprocess.run([sys.executable, "-m", "tests.prose_numbers", str(path)], cwd=ROOT, capture_output=True,
                         text=True, check=False)
    assert run.returncode == 1 and run.stdout.splitlines() == [f"{path} [0] 42: …Exactly [42] of them.…"]


def test_a_whole_number_does_not_stretch_to_a_decimal():
    assert unmatched(markdown("nDCG@10 0.645"), code("# NBVAL_MODEL_COUNTS\nprint(n)", "found 1\n")) == ["0.645"]
    assert unmatched(markdown("found 3 of 14 questions"),
                     code("# NBVAL_MODEL_COUNTS\nprint(r)", "0.75 12.9\n")) == ["14"]


def test_a_cell_whose_marker_the_comparison_rejects_is_still_evidence():
    assert unmatched(markdown("loss 1.34"), code("# NBVAL_MODEL_NUMBERS ±0.3\nprint(loss)", "loss 1.34\n")) == []


def test_a_reference_names_only_numbers_written_like_its_own():
    assert numbers("lessons 01 and 02, exercises 8.2, 8.3 and 8.4, sections 3–12") == []
    assert numbers("as in lesson 02 and 56 questions, section 4 and 15 paraphrases") == ["56", "15"]
