"""Checks of lesson 07's exercises (Rethinking with Retrieval)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragkit.corpus import Hit
from ragkit.exercises.checking import exercise, require
from ragkit.reason.step_judge import VERDICTS, judge
from ragkit.reason.steps import Meter
from ragkit.reason.voting import weighted_vote
from ragkit.text import answer_key

CLOSE = 1e-9  # two supports this close are the same score


def require_same_paths(rescored_paths, votes) -> None:
    """Every question's rescored paths are its sampled paths of section 4, in order: only their supports may differ."""
    require(isinstance(rescored_paths, Mapping) and set(rescored_paths) == set(votes),
            f"`rescored_paths` should be a dict {{question id: paths}} with the {len(votes)} question ids of `votes`")
    for qid, paths in rescored_paths.items():
        sampled = votes[qid].paths
        require(isinstance(paths, Sequence) and [getattr(p, "text", None) for p in paths] == [p.text for p in sampled],
                f"`rescored_paths[{qid!r}]` is not the {len(sampled)} paths of votes[{qid!r}].paths in order: rescore "
                "the sampled paths with support_of, do not sample new ones")
        require(all(0.0 <= p.support <= 1.0 for p in paths),
                f"a support in `rescored_paths[{qid!r}]` is outside [0, 1]: keep the path support_of returns")


def embedding_supports_kept(rescored_paths, votes) -> bool:
    """True if every path the embedding scorer supported at all still has exactly its embedding support."""
    pairs = [(new.support, old.support) for qid, paths in rescored_paths.items()
             for new, old in zip(paths, votes[qid].paths) if old.support > 0]
    return bool(pairs) and all(abs(new - old) <= CLOSE for new, old in pairs)


@exercise("7.1", names=("rescored_paths", "rescored", "changed", "votes"),
          expects="each question's sampled paths scored by the cross-encoder, {question id: paths}, the weighted "
                  "vote's answer over them, {question id: answer}, and how many answers differ from section 4's vote")
def another_scorer(rescored_paths, rescored, changed, votes):
    """The same paths rescored by another scorer, each answer the weighted vote over them, the changes counted."""
    require_same_paths(rescored_paths, votes)
    require(not embedding_supports_kept(rescored_paths, votes),
            "every support in `rescored_paths` is the embedding scorer's of section 4: score the paths with "
            "support_of(path, hybrid.search, scorers['cross-encoder'], meter, k=3)")
    require(isinstance(rescored, Mapping) and set(rescored) == set(votes),
            f"`rescored` should be a dict {{question id: answer}} with the {len(votes)} question ids of `votes`")
    for qid, paths in rescored_paths.items():
        winner = weighted_vote(paths)[0]
        require(answer_key(rescored[qid]) == answer_key(winner),
                f"`rescored[{qid!r}]` is {rescored[qid]!r}, but weighted_vote over rescored_paths[{qid!r}] picks "
                f"{winner!r}: take the first value weighted_vote returns")
    differ = sum(answer_key(rescored[qid]) != answer_key(votes[qid].answer) for qid in votes)
    require(isinstance(changed, int) and changed == differ,
            f"`changed` is {changed!r}; {differ} of the {len(votes)} answers in `rescored` differ from "
            "votes[id].answer (compare with answer_key, so 'Yes, ...' and 'yes' are the same answer)")


WRONG_PLACE = "kb-en-042"  # the Moscow Metro passage: about none of the probes' statements


@exercise("7.2", names=("wrong_place", "probes", "by_id", "meter"),
          expects="the judge's verdict on each of the first 3 true statements of section 3, judged against the "
                  "Moscow Metro passage kb-en-042: {statement: verdict}")
def wrong_place_verdicts(wrong_place, probes, by_id, meter):
    """For each of the first three true statements, the verdict the judge gives it against the Moscow Metro passage
    (asked again here through a meter of its own, so the lesson's counts stay as they are)."""
    statements = [true for _, true, _ in probes[:3]]
    require(isinstance(wrong_place, Mapping), f"`wrong_place` should be a dict {{statement: verdict}}, got "
                                              f"{type(wrong_place).__name__}")
    require(set(wrong_place) == set(statements),
            f"`wrong_place` should have the first 3 true statements of `probes` as keys, {statements}; it has "
            f"{sorted(wrong_place)}")
    unknown = {statement: verdict for statement, verdict in wrong_place.items() if verdict not in VERDICTS}
    require(not unknown, f"{unknown} are not verdicts: store the first value judge(...) returns, one of {VERDICTS}")
    evidence = [Hit(by_id[WRONG_PLACE], 1.0)]
    judged = {statement: judge(statement, [], evidence, Meter(meter.inner))[0] for statement in statements}
    differ = {statement: (wrong_place[statement], verdict) for statement, verdict in judged.items()
              if wrong_place[statement] != verdict}
    require(not differ, f"(yours, the judge's) verdicts differ for {differ}: judge each statement with no steps "
                        f"before it and the one hit Hit(by_id[{WRONG_PLACE!r}], 1.0) as its evidence")


def right_wrong_pairs(votes, yes_no) -> list[tuple[float, float]]:
    """(right path's support, wrong path's support) for each such pair of paths within a question."""
    pairs = []
    for q in yes_no:
        paths = votes[q.id].paths
        right = [p.support for p in paths if answer_key(p.answer) == q.answer]
        pairs += [(r, p.support) for r in right for p in paths if answer_key(p.answer) != q.answer]
    return pairs


def same_pairs(found, expected) -> bool:
    """True if the two lists hold the same (support, support) pairs, in any order."""
    return len(found) == len(expected) and all(
        abs(a - c) <= CLOSE and abs(b - d) <= CLOSE for (a, b), (c, d) in zip(sorted(found), sorted(expected)))


@exercise("7.3", names=("support_pairs", "votes", "yes_no"),
          expects="every pair of a right and a wrong sampled path of the same question, as (right path's support, "
                  "wrong path's support)")
def support_picks_the_path(support_pairs, votes, yes_no):
    """Each right path paired with each wrong path of its own question, supports in that order."""
    require(isinstance(support_pairs, Sequence) and all(isinstance(pair, Sequence) and len(pair) == 2
                                                        for pair in support_pairs),
            "`support_pairs` should be a list of (right path's support, wrong path's support) pairs")
    found = [(float(right), float(wrong)) for right, wrong in support_pairs]
    expected = right_wrong_pairs(votes, yes_no)
    if same_pairs(found, expected):
        return
    require(not same_pairs([(b, a) for a, b in found], expected),
            "each pair should be (right path's support, wrong path's support); yours are the other way round")
    require(len(found) == len(expected),
            f"`support_pairs` has {len(found)} pairs; the sampled paths give {len(expected)}: pair each path whose "
            "answer_key is the gold answer with each path of the same question whose answer is not (a question "
            "with 2 right paths and 1 wrong one gives 2 pairs, one whose paths all agree gives none)")
    require(False, "`support_pairs` has the right number of pairs, but not the supports of votes[q.id].paths: take "
                   "path.support of a right and a wrong path of the same question")
