"""Checks of lesson 06's exercises (CoT-RAG)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragkit.exercises.checking import exercise, require

BUDGET = 5  # the passages every evidence row of the lesson keeps
METRICS = ("all_gold@5", "recall@5")
HOP_PIPELINES = ("question only", "iterative, no LLM")  # the rows of section 3 that exercise 6.3 counts


def require_evaluations(results: object, name: str) -> None:
    """`results` is a {name: evaluation} dict of evaluate_pipeline results with all-gold@5 and recall@5."""
    require(isinstance(results, Mapping) and results,
            f"`{name}` should be a dict of evaluate_pipeline results, got {type(results).__name__}")
    for label, result in results.items():
        require(hasattr(result, "means") and hasattr(result, "per_question")
                and all("retrieved" in row for row in result.per_question),
                f"`{name}[{label!r}]` is a {type(result).__name__}, not what evaluate_pipeline returns")
        missing = [metric for metric in METRICS if metric not in result.means]
        require(not missing, f"`{name}[{label!r}]` has no {', '.join(missing)}: evaluate with "
                             "metrics=(\"all_gold\", \"recall\"), ks=(5,) as section 2 does")


def require_questions(result, questions, where: str, advice: str) -> None:
    """The evaluation scored exactly these questions, in their order."""
    scored = [row["id"] for row in result.per_question]
    require(scored == [q.id for q in questions], f"{where} scored {len(scored)} questions ({', '.join(scored[:6])}"
                                                 f"{', …' if len(scored) > 6 else ''}); {advice}")


def carry_problem(query: str, run) -> str:
    """Why a run's sub-queries are not those of carry_findings=True ("" if they are)."""
    for before, step in zip(run.steps, run.steps[1:]):
        carried = f"{step.thought} {before.finding}".strip() if before.found else step.thought
        if step.sub_query != carried:
            return (f"step {step.number} of {query!r} searched with {step.sub_query!r}; with carry_findings=True it "
                    f"searches with {carried!r} (its question, plus the finding of the step before when that step "
                    "found something): run cot_rag(..., carry_findings=True)")
    return ""


def require_carried_runs(carried, bridge) -> None:
    """One run per bridge question, each with the sub-queries carry_findings=True gives."""
    require(isinstance(carried, Mapping), f"`carried` should be a dict {{question: run}}, got {type(carried).__name__}")
    require(set(carried) == {q.query for q in bridge},
            f"`carried` should hold a run for each of the {len(bridge)} bridge questions of `sample` (q.style == "
            f"'bridge'), keyed by q.query; it has {len(carried)} keys, {sum(q.query in carried for q in bridge)} "
            "of them bridge questions")
    for query, run in carried.items():
        require(getattr(run, "steps", None), f"`carried[{query!r}]` has no steps: store what cot_rag returns")
        problem = carry_problem(query, run)
        require(not problem, problem)


def scores_runs(result, runs, questions) -> bool:
    """True if every question's retrieved passages come from its run's steps."""
    return all(set(row["retrieved"]) <= {hit.id for step in runs[q.query].steps for hit in step.excerpts}
               for q, row in zip(questions, result.per_question))


@exercise("6.1", names=("carried", "carried_results", "sample"),
          expects="the CoT-RAG runs with carry_findings=True on the sample's bridge questions, {question: run}, and "
                  "the all-gold@5 and recall@5 of the steps' passages with and without it, {name: evaluation}")
def carry_the_finding(carried, carried_results, sample):
    """The bridge questions were rerun with carry_findings=True and scored at the 5-passage budget, with and without."""
    bridge = [q for q in sample if q.style == "bridge"]
    require_carried_runs(carried, bridge)
    require_evaluations(carried_results, "carried_results")
    require(len(carried_results) >= 2, "`carried_results` should hold two rows to compare: CoT-RAG's passages "
                                       "without carry_findings (the runs of section 5) and with it")
    for label, result in carried_results.items():
        require_questions(result, bridge, f"`carried_results[{label!r}]`",
                          f"compare on the bridge questions {[q.id for q in bridge]} only, in the order of `sample`")
        over = [row["id"] for row in result.per_question if len(row["retrieved"]) > BUDGET]
        require(not over, f"`carried_results[{label!r}]` retrieved more than {BUDGET} passages for {over}: cut the "
                          f"steps' interleaved rankings at {BUDGET}, the budget of section 5")
    require(any(scores_runs(result, carried, bridge) for result in carried_results.values()),
            "no row of `carried_results` scores the passages of the `carried` runs: interleave each run's steps' "
            "excerpts, as cot_evidence does for the runs of section 5")


def searched_per_step(result, steps: Mapping[str, int], k_step: int) -> tuple[int, str]:
    """How many questions show k_step passages searched per step, and what that looks like: one passage a step for
    k = 1 (the ideal sub-questions' top hits are distinct gold passages), more passages than steps for a larger k."""
    if k_step == 1:
        return sum(len(row["retrieved"]) == steps[row["id"]] for row in result.per_question), "one passage a step"
    return sum(len(row["retrieved"]) > steps[row["id"]] for row in result.per_question), "more passages than steps"


def require_k_per_step(result, questions, k_step) -> None:
    """The evaluation's passages are those of k_step hits for each ideal sub-question, cut at the budget."""
    steps = {q.id: len(q.extra["decomposition"]) for q in questions}
    over = [row["id"] for row in result.per_question if len(row["retrieved"]) > min(BUDGET, k_step * steps[row["id"]])]
    require(not over, f"`oracle_by_k[{k_step}]` retrieved more passages than {k_step} per sub-question (at most "
                      f"{BUDGET}) for {over[:3]}: search each ideal sub-question with k={k_step}")
    shown, pattern = searched_per_step(result, steps, k_step)
    require(shown > len(questions) / 2,
            f"`oracle_by_k[{k_step}]` has {pattern} for only {shown} of {len(questions)} questions: search every "
            f"sub-question of q.extra['decomposition'] (ideal_steps) with k={k_step}, not the question itself, and "
            "interleave the rankings")


@exercise("6.2", names=("oracle_by_k", "questions"),
          expects="the ideal sub-questions searched with k = 1 and k = 2 per step, interleaved and cut at 5, each "
                  "evaluated on all the questions: {k: evaluation}")
def plan_or_retrieval(oracle_by_k, questions):
    """Each k's row searched the ideal sub-questions with k passages each, on every question, within the budget."""
    require(isinstance(oracle_by_k, Mapping),
            f"`oracle_by_k` should be a dict {{k: evaluation}}, got {type(oracle_by_k).__name__}")
    require({1, 2} <= set(oracle_by_k) and all(isinstance(k, int) and k >= 1 for k in oracle_by_k),
            f"`oracle_by_k` should have the keys 1 and 2 (k per step, whole numbers); it has "
            f"{sorted(oracle_by_k, key=str)}")
    require_evaluations(oracle_by_k, "oracle_by_k")
    for k_step, result in oracle_by_k.items():
        require_questions(result, questions, f"`oracle_by_k[{k_step}]`",
                          f"evaluate on all {len(questions)} of `questions`, as the oracle row of section 2")
        require_k_per_step(result, questions, k_step)


def gold_found(result, questions, by_id) -> dict[tuple[str, str], tuple[int, int]]:
    """(found, total) gold passages of an evaluation's rows, by hop ('first hop' / 'later hop') and language."""
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for q, row in zip(questions, result.per_question):
        for position, doc_id in enumerate(q.relevant):
            kind = ("first hop" if position == 0 else "later hop", by_id[doc_id].lang)
            found, total = counts.get(kind, (0, 0))
            counts[kind] = (found + (doc_id in row["retrieved"]), total + 1)
    return counts


def is_count_pair(value) -> bool:
    """True for a (found, total) pair of whole numbers."""
    return isinstance(value, Sequence) and len(value) == 2 and all(isinstance(n, int) for n in value)


def require_hop_counts(counts, expected, name: str, gold: int) -> None:
    """One pipeline's {(hop, lang): (found, total)} against the counts its retrieved passages give."""
    require(isinstance(counts, Mapping) and all(is_count_pair(value) for value in counts.values()),
            f"`found_by[{name!r}]` should be a dict {{(hop, lang): (found, total)}} of whole numbers")
    require(set(counts) == set(expected),
            f"`found_by[{name!r}]` has the keys {sorted(counts, key=str)}; use (hop, lang) pairs: hop 'first hop' "
            "for q.relevant[0] and 'later hop' for the others, lang by_id[doc_id].lang, which gives "
            f"{sorted(expected)}")
    totals = sum(total for _, total in counts.values())
    require(totals == gold, f"the totals of `found_by[{name!r}]` add up to {totals}; each of the {gold} gold passages "
                            "of the questions counts once (loop over q.relevant of every question)")
    for kind, (found, total) in expected.items():
        require(tuple(counts[kind]) == (found, total),
                f"`found_by[{name!r}][{kind}]` is {tuple(counts[kind])}; results[{name!r}] has {found} of {total} such "
                "gold passages among its retrieved ids (a row's 'retrieved' holds its 5 passages)")


@exercise("6.3", names=("found_by", "results", "questions", "by_id"),
          expects="for the question alone and the iteration without a model, how many gold passages each found, by "
                  "hop and language: found_by[name][(hop, lang)] = (found, total)")
def missing_hops(found_by, results, questions, by_id):
    """Every gold passage of every question counted once per pipeline, found when its id is among the retrieved."""
    require(isinstance(found_by, Mapping), f"`found_by` should be a dict, got {type(found_by).__name__}")
    gold = sum(len(q.relevant) for q in questions)
    for name in HOP_PIPELINES:
        require(name in found_by, f"`found_by` has no {name!r}: count for both rows of section 3, "
                                  f"{' and '.join(map(repr, HOP_PIPELINES))}")
        require_hop_counts(found_by[name], gold_found(results[name], questions, by_id), name, gold)
