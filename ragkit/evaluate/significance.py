"""Is a gain more than chance? The paired bootstrap over gold questions.

Two pipelines scored on the same questions give one difference per question. Resampling the questions
with replacement, and taking the mean difference of each resample, shows how much the mean would move
with another draw of questions of the same kind; the middle 95% of those means is the interval. A gain
whose interval contains 0 could be the luck of which questions were written.

Taught in lessons/03_query_rewriting.ipynb (a short box), lessons/04_reranking.ipynb and
lessons/08_evaluation.ipynb (exercise 8.3 builds it by hand).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragkit.evaluate.runners import Evaluation


@dataclass(frozen=True)
class PairedDifference:
    """The mean per-question difference new − old of one metric, and its bootstrap interval."""

    metric: str
    mean: float
    low: float
    high: float
    differing: int  # questions on which the two scores differ
    questions: int

    @property
    def excludes_zero(self) -> bool:
        """True if the whole interval lies on one side of 0."""
        return self.low > 0 or self.high < 0

    @property
    def one_question(self) -> float:
        """How far one question moves a mean over this many questions, for a metric in [0, 1]."""
        return 1 / self.questions

    def __str__(self) -> str:
        return f"{self.mean:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def bootstrap_interval(differences: Sequence[float], *, resamples: int = 2000, seed: int = 0,
                       confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the mean of differences over resamples with replacement."""
    values = np.asarray(differences, dtype=float)
    if values.ndim != 1 or len(values) == 0:
        raise ValueError("give at least one per-question difference")
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError(f"need resamples ≥ 1 and 0 < confidence < 1, got {resamples} and {confidence}")
    rng = np.random.default_rng(seed)
    means = [values[rng.integers(0, len(values), len(values))].mean() for _ in range(resamples)]
    tail = round((1 - confidence) * 50, 9)  # 2.5 exactly, not 2.5000000000000022
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def per_question_differences(new: Evaluation, old: Evaluation, metric: str) -> list[float]:
    """new − old of metric for each question, refusing runs over different questions."""
    new_ids, old_ids = ([row["id"] for row in run.per_question] for run in (new, old))
    if not new_ids or new_ids != old_ids:
        raise ValueError("both runs must have per-question rows for the same questions in the same order")
    missing = [run for run in (new, old) if any(metric not in row for row in run.per_question)]
    if missing:
        raise ValueError(f"metric {metric!r} is not in the per-question rows; they have "
                         f"{', '.join(key for key in new.per_question[0] if key != 'id')}")
    return [a[metric] - b[metric] for a, b in zip(new.per_question, old.per_question)]


def paired_bootstrap(new: Evaluation, old: Evaluation, metric: str, *, resamples: int = 2000, seed: int = 0,
                     confidence: float = 0.95) -> PairedDifference:
    """The mean gain of new over old on metric, with its paired bootstrap interval.

    Taught in lessons/08_evaluation.ipynb.
    """
    differences = per_question_differences(new, old, metric)
    low, high = bootstrap_interval(differences, resamples=resamples, seed=seed, confidence=confidence)
    return PairedDifference(metric, float(np.mean(differences)), low, high,
                            sum(d != 0 for d in differences), len(differences))


def gain_rows(results: Mapping[str, Evaluation], base: str, metrics: Sequence[str], *,
              label: str = "pipeline") -> list[dict]:
    """Rows for format_table: each run's gain over base on each metric with its 95% interval, and which
    intervals exclude 0. Taught in lessons/08_evaluation.ipynb."""
    if base not in results:
        raise ValueError(f"base {base!r} is not among the results: {', '.join(results)}")
    pairs = {name: (run, results[base]) for name, run in results.items() if name != base}
    return pair_gain_rows(pairs, metrics, label=label)


def pair_gain_rows(pairs: Mapping[str, tuple[Evaluation, Evaluation]], metrics: Sequence[str], *,
                   label: str = "comparison") -> list[dict]:
    """Rows for format_table: each (new, base) pair's gain on each metric with its 95% interval, and which
    intervals exclude 0. Taught in lessons/08_evaluation.ipynb."""
    rows = []
    for name, (new, base) in pairs.items():
        gains = {metric: paired_bootstrap(new, base, metric) for metric in metrics}
        beyond = [metric for metric, gain in gains.items() if gain.excludes_zero]
        rows.append({label: name, **{f"{metric} gain [95% interval]": str(gain) for metric, gain in gains.items()},
                     "interval excludes 0": ", ".join(beyond) or "none"})
    return rows
