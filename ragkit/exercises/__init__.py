"""ragkit.exercises: self-checks for the lessons' exercises: run `check_exercise("3.1", globals())` after your code.

| module | what it holds | taught in |
|---|---|---|
| `checking` | finding and running an exercise's check | 00 |
| `lesson_NN` | lesson NN's checks, loaded when first asked for | NN |
"""

from ragkit.exercises.checking import ExerciseFailed, check_exercise

__all__ = ["ExerciseFailed", "check_exercise"]
