"""Self-checks for the lessons' exercises: run `check_exercise("3.1", globals())` after your code.

Each lesson's checks live in `ragkit/exercises/lesson_NN.py` and are loaded when first asked for.
"""

from ragkit.exercises.checking import ExerciseFailed, check_exercise

__all__ = ["ExerciseFailed", "check_exercise"]
