"""Checks of lesson 09's exercises (specialists: self-ask's appended question, the judge's rare label, stopping)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from numbers import Integral, Real

from ragkit.corpus import read_jsonl
from ragkit.evaluate.runners import Evaluation
from ragkit.exercises.checking import exercise, require
from ragkit.models.jobs import LABELS, MAX_STEPS, parse_label
from ragkit.models.specialists import COMMITTED_DIR, specialist_record
from ragkit.reason.step_judge import JUDGE_VERDICTS, VERDICTS

SELF_ASK = "self-ask, specialist"
ALL_GOLD = "all_gold@5"
SHARE_TOLERANCE = 0.005  # the share over all records (341 of 6,080) or over the training split alone (312 of 5,462)
HANDBOOK_QUESTIONS = 8


def _question_ids(keys, questions) -> dict:
    """Each key of a learner's dict (a question's text or id) -> its question id; None for neither."""
    by_text = {q.query: q.id for q in questions}
    ids = {q.id for q in questions}
    return {key: by_text.get(key, key if key in ids else None) for key in keys}


@exercise("9.1", names=("alone_scores", "differ", "multihop", "half"),
          expects="the Evaluation of self-ask with append_question=False on the 24 questions of `half`, and a dict "
                  "{question: True if appending the question won there} for the questions where all_gold@5 differs")
def appended_question(alone_scores, differ, multihop, half):
    """The steps-alone run covers the same questions with other rankings, and `differ` lists exactly the questions
    where one run found every gold passage and the other did not, with the right winner."""
    require(isinstance(alone_scores, Evaluation), "`alone_scores` should be what `evaluate_pipeline(...)` returned")
    appended = multihop[SELF_ASK]
    require([row["id"] for row in alone_scores.per_question] == [row["id"] for row in appended.per_question],
            f"score the steps alone on `half`, the same {len(half)} questions as section 5's table, in that order")
    require(ALL_GOLD in alone_scores.means, "evaluate with metrics=(\"all_gold\", \"recall\"), ks=(5,), as section 5")
    pairs = list(zip(alone_scores.per_question, appended.per_question))
    require(any(alone.get("retrieved") != with_question.get("retrieved") for alone, with_question in pairs),
            f"every ranking equals '{SELF_ASK}' with the question: run self_ask_run(\"specialist\", "
            "append_question=False)")
    won = {with_question["id"]: with_question[ALL_GOLD] > alone[ALL_GOLD] for alone, with_question in pairs
           if with_question[ALL_GOLD] != alone[ALL_GOLD]}
    require(isinstance(differ, Mapping), "`differ` should be a dict {question: True if appending the question won}")
    ids = _question_ids(differ, half)
    unknown = next((key for key, qid in ids.items() if qid is None), None)
    require(unknown is None, f"{unknown!r} is not a question of `half`: key `differ` by q.query (or q.id)")
    require(sorted(ids.values()) == sorted(won) and len(ids) == len(won),
            f"`differ` has {len(differ)} questions; all_gold@5 differs on {len(won)}: list exactly the questions where "
            "one of the two runs finds every gold passage and the other does not")
    wrong = next((key for key, qid in ids.items() if bool(differ[key]) != won[qid]), None)
    require(wrong is None, f"on {wrong!r} `differ` names the wrong winner: True where the run with the question "
                       "appended found every gold passage and the steps alone did not")


def _labelled_contradicts() -> list[dict]:
    """The judge's held-out records labelled contradicts."""
    return [record for record in read_jsonl(COMMITTED_DIR / "judge" / "heldout.jsonl")
            if record["answer"] == "contradicts"]


def _verdict_counts(judge_model, records) -> dict[str, int]:
    """{verdict: count} of what judge_model says to each record, read as lesson 07's verdicts."""
    return dict(Counter(JUDGE_VERDICTS.get(parse_label(judge_model.chat(record["messages"], max_tokens=4).text),
                                           "unverified") for record in records))


def _contradicts_share() -> float:
    """The share of all the judge's records labelled contradicts, from its committed record."""
    labels = specialist_record(COMMITTED_DIR / "judge")["data"]["counts"]["labels"]
    return labels["contradicts"] / sum(labels.values())


@exercise("9.2", names=("contradicts_share", "contradicted_verdicts", "judge_model"),
          expects="the share of the judge's records labelled contradicts (a number from 0 to 1), and a dict "
                  "{verdict: count} of what it says to its held-out records labelled contradicts, read as "
                  "confirmed / corrected / unverified")
def rare_label(contradicts_share, contradicted_verdicts, judge_model):
    """The share is the committed record's, and the verdicts are the ones the judge gives the held-out contradicts
    records (asked again here)."""
    require(isinstance(contradicts_share, Real) and not isinstance(contradicts_share, bool),
            "`contradicts_share` should be a number: the records labelled contradicts over all the records")
    require(0.0 <= contradicts_share <= 1.0,
            f"`contradicts_share` is {contradicts_share}; a share is between 0 and 1 (not a percent, not a count)")
    expected = _contradicts_share()
    require(abs(contradicts_share - expected) <= SHARE_TOLERANCE,
            f"`contradicts_share` is {contradicts_share:.3f}, but the judge's record counts {expected:.3f} of its "
            "records as contradicts: divide counts['labels']['contradicts'] by the sum of all labels")
    require(isinstance(contradicted_verdicts, Mapping) and contradicted_verdicts,
            "`contradicted_verdicts` should be a non-empty dict (or Counter) {verdict: count}")
    keys = set(contradicted_verdicts)
    require(not keys & set(LABELS),
            f"{sorted(keys)} are the judge's own labels: read each as lesson 07's verdict with "
            "JUDGE_VERDICTS.get(parse_label(reply.text), 'unverified')")
    require(keys <= set(VERDICTS), f"{sorted(keys - set(VERDICTS))} is not a verdict; the verdicts are "
                                   f"{', '.join(VERDICTS)}")
    counts = list(contradicted_verdicts.values())
    require(all(isinstance(n, Integral) and n >= 0 for n in counts), "each verdict's count is a whole number")
    labelled = _labelled_contradicts()
    require(sum(counts) == len(labelled),
            f"the verdicts add up to {sum(counts)}, but {len(labelled)} held-out records are labelled contradicts: "
            "judge each of them once")
    yours = {verdict: n for verdict, n in contradicted_verdicts.items() if n}
    judged = _verdict_counts(judge_model, labelled)
    require(yours == judged, f"your counts {yours} are not the judge's, {judged}: send each record's `messages` to "
                             "judge_model.chat with max_tokens=4 and read the reply with parse_label")


@exercise("9.3", names=("step_counts",),
          expects="a dict {'few-shot': [...], 'specialist': [...]}: how many steps each model wrote for each of "
                  "the 8 handbook questions")
def learns_to_stop(step_counts):
    """Both models counted on the 8 questions, every count one decompose can return, and the specialist the one
    that splits."""
    require(isinstance(step_counts, Mapping) and set(step_counts) == {"few-shot", "specialist"},
            "`step_counts` should be a dict with two keys, 'few-shot' and 'specialist'")
    for name, counts in step_counts.items():
        require(isinstance(counts, Sequence) and len(counts) == HANDBOOK_QUESTIONS,
                f"`step_counts[{name!r}]` should hold one count for each of the {HANDBOOK_QUESTIONS} handbook "
                "questions")
        require(all(isinstance(n, Integral) and 1 <= n <= MAX_STEPS for n in counts),
                f"`step_counts[{name!r}]` has {list(counts)}; decompose(..., max_steps={MAX_STEPS}) returns 1 to "
                f"{MAX_STEPS} steps: count the steps of its first value")
    split = sum(n >= 2 for n in step_counts["specialist"])
    require(split > HANDBOOK_QUESTIONS / 2,
            f"the specialist wrote two steps or more for only {split} of {HANDBOOK_QUESTIONS}: did you decompose "
            "with `decomposer` (the specialist) for 'specialist' and `few_shot` for 'few-shot'?")
