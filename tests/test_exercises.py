"""The exercise-check machinery: not-done, passed and failed, and clear errors for unknown exercises."""

import pytest

from ragkit.exercises import ExerciseFailed, check_exercise
from ragkit.exercises.checking import _EXERCISES, exercise, require


@pytest.fixture
def positive_exercise():
    @exercise("99.1", names=("value",), expects="a positive number")
    def check(value):
        require(value > 0, f"`value` is {value}; the exercise asks for a positive number")

    yield
    _EXERCISES.pop("99.1")


def test_a_missing_name_says_what_to_define(positive_exercise, capsys):
    assert check_exercise("99.1", {}) is False
    assert capsys.readouterr().out == ("Exercise 99.1: not done yet. Define `value` (a positive number), "
                                       "then run this cell again.\n")


def test_a_right_value_passes(positive_exercise, capsys):
    assert check_exercise("99.1", {"value": 3}) is True
    assert capsys.readouterr().out == "Exercise 99.1: passed.\n"


def test_a_wrong_value_fails_with_the_exercise_number(positive_exercise):
    with pytest.raises(ExerciseFailed, match=r"^Exercise 99\.1: `value` is -1; the exercise asks"):
        check_exercise("99.1", {"value": -1})


def test_a_failed_check_is_an_assertion_error(positive_exercise):
    with pytest.raises(AssertionError):
        check_exercise("99.1", {"value": 0})


def test_an_unknown_exercise_names_the_checked_ones(positive_exercise):
    with pytest.raises(ValueError, match=r"no exercise '99\.7' has a check; the checked ones are: .*99\.1"):
        check_exercise("99.7", {})


def test_a_malformed_number_is_refused():
    with pytest.raises(ValueError, match="look like '3.1'"):
        check_exercise("three", {})
