"""The machinery behind `check_exercise`: a registry of exercises and the names each one reads."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class ExerciseFailed(AssertionError):
    """An exercise's result that does not do what the exercise asks; the message says what to look at."""


@dataclass(frozen=True)
class Exercise:
    """One exercise: the names the learner defines, what they should hold, and the check of their values."""

    number: str
    names: tuple[str, ...]
    expects: str
    check: Callable[..., Any]


_EXERCISES: dict[str, Exercise] = {}


def exercise(number: str, names: tuple[str, ...], expects: str) -> Callable:
    """Register the decorated function as the check of exercise `number`; it receives the named values."""

    def register(check: Callable) -> Callable:
        _EXERCISES[number] = Exercise(number, tuple(names), expects, check)
        return check

    return register


def require(condition: object, message: str) -> None:
    """Fail the exercise with `message` (what is wrong and what to look at) unless `condition` holds."""
    if not condition:
        raise ExerciseFailed(message)


def evaluated_lists(run: Any, questions, name: str, *, metric: str, label: str, how: str) -> list[list[str]]:
    """Each gold question's retrieved ids from an Evaluation over the gold questions that holds `metric` and an
    MRR, refusing anything else; `label` and `how` name the metric and the evaluate call in the message."""
    require(hasattr(run, "per_question") and hasattr(run, "means"),
            f"`{name}` should be what evaluate_pipeline returns (an Evaluation, which keeps each question's list), "
            f"not a {type(run).__name__}")
    ids = [row.get("id") for row in run.per_question]
    require(ids == [q.id for q in questions], f"`{name}` should be evaluated on the {len(questions)} gold questions "
                                              f"(`questions`, in order); it has {len(ids)}")
    require(metric in run.means and any(key.startswith("mrr@") for key in run.means),
            f"`{name}` has no {label} or no MRR: evaluate with {how}; it has {', '.join(run.means)}")
    return [list(row["retrieved"]) for row in run.per_question]


def find_exercise(number: str) -> Exercise:
    """The registered exercise `number` ("3.1"), loading its lesson's checks first."""
    lesson, _, _ = number.partition(".")
    if not lesson.isdigit():
        raise ValueError(f"exercise numbers look like '3.1' (lesson.exercise), not {number!r}")
    try:
        importlib.import_module(f"ragkit.exercises.lesson_{int(lesson):02d}")
    except ModuleNotFoundError as missing:
        if missing.name != f"ragkit.exercises.lesson_{int(lesson):02d}":
            raise
    if number not in _EXERCISES:
        known = ", ".join(sorted(_EXERCISES)) or "none"
        raise ValueError(f"no exercise {number!r} has a check; the checked ones are: {known}")
    return _EXERCISES[number]


def check_exercise(number: str, namespace: Mapping[str, Any]) -> bool:
    """Check exercise `number` on the names it reads from `namespace` (pass `globals()`); True when it passed."""
    found = find_exercise(number)
    missing = [name for name in found.names if name not in namespace]
    if missing:
        listed = ", ".join(f"`{name}`" for name in missing)
        print(f"Exercise {number}: not done yet. Define {listed} ({found.expects}), then run this cell again.")
        return False
    try:
        found.check(*(namespace[name] for name in found.names))
    except ExerciseFailed as failed:
        raise ExerciseFailed(f"Exercise {number}: {failed}") from None
    print(f"Exercise {number}: passed.")
    return True
