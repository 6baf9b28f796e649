import numpy as np
import pytest

from ragkit.evaluate.runners import Evaluation
from ragkit.evaluate.significance import (
    PairedDifference,
    bootstrap_interval,
    paired_bootstrap,
    per_question_differences,
)


def run(values, metric="mrr@10", ids=None):
    ids = ids or [f"q{i}" for i in range(len(values))]
    return Evaluation({metric: float(np.mean(values))}, tuple({"id": i, metric: v} for i, v in zip(ids, values)))


def test_interval_matches_a_hand_written_bootstrap():
    differences = np.array([1.0, 0.0, 0.5, -0.5, 0.0, 1.0, 0.25])
    rng = np.random.default_rng(3)
    means = [differences[rng.integers(0, 7, 7)].mean() for _ in range(500)]
    assert bootstrap_interval(differences, resamples=500, seed=3) == tuple(np.percentile(means, [2.5, 97.5]))


def test_a_consistent_gain_excludes_zero_and_a_coin_flip_does_not():
    better = paired_bootstrap(run([1.0] * 30), run([0.0] * 25 + [1.0] * 5), "mrr@10")
    assert better.mean == pytest.approx(25 / 30) and better.excludes_zero and better.differing == 25
    mixed = paired_bootstrap(run([1, 0] * 10), run([0, 1] * 10), "mrr@10")
    assert mixed.mean == 0 and mixed.low < 0 < mixed.high and not mixed.excludes_zero


def test_identical_runs_give_a_zero_width_interval():
    same = paired_bootstrap(run([0.5, 1.0, 0.0]), run([0.5, 1.0, 0.0]), "mrr@10")
    assert (same.mean, same.low, same.high, same.differing, same.questions) == (0, 0, 0, 0, 3)
    assert str(same) == "+0.000 [+0.000, +0.000]" and same.one_question == pytest.approx(1 / 3)


def test_the_interval_narrows_with_more_questions():
    few = paired_bootstrap(run([1, 0, 1, 1]), run([0, 0, 1, 0]), "mrr@10")
    many = paired_bootstrap(run([1, 0, 1, 1] * 25), run([0, 0, 1, 0] * 25), "mrr@10")
    assert many.high - many.low < few.high - few.low
    assert isinstance(many, PairedDifference)


def test_runs_over_other_questions_or_without_the_metric_are_refused():
    with pytest.raises(ValueError, match="same questions"):
        per_question_differences(run([1.0, 0.0]), run([1.0, 0.0], ids=["a", "b"]), "mrr@10")
    with pytest.raises(ValueError, match="same questions"):
        per_question_differences(Evaluation({}), Evaluation({}), "mrr@10")
    with pytest.raises(ValueError, match="'recall@5' is not in the per-question rows; they have mrr@10"):
        per_question_differences(run([1.0]), run([0.0]), "recall@5")


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="at least one"):
        bootstrap_interval([])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_interval([1.0], confidence=1.5)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_interval([1.0], resamples=0)


def test_gain_rows_give_each_run_its_gain_over_the_base():
    from ragkit.evaluate.significance import gain_rows

    results = {"base": run([0.0] * 20), "better": run([1.0] * 20), "same": run([0.0] * 20)}
    rows = gain_rows(results, "base", ["mrr@10"], label="rung")
    assert [row["rung"] for row in rows] == ["better", "same"]
    assert rows[0]["mrr@10 gain [95% interval]"] == "+1.000 [+1.000, +1.000]"
    assert (rows[0]["interval excludes 0"], rows[1]["interval excludes 0"]) == ("mrr@10", "none")
    with pytest.raises(ValueError, match="base 'dense' is not among"):
        gain_rows(results, "dense", ["mrr@10"])


def test_pair_gain_rows_compare_each_pair_on_its_own_base():
    from ragkit.evaluate.significance import pair_gain_rows

    low, high = run([0.0] * 20), run([1.0] * 20)
    rows = pair_gain_rows({"up": (high, low), "down": (low, high)}, ["mrr@10"], label="pair")
    assert [row["pair"] for row in rows] == ["up", "down"]
    assert [row["mrr@10 gain [95% interval]"] for row in rows] == ["+1.000 [+1.000, +1.000]", "-1.000 [-1.000, -1.000]"]
