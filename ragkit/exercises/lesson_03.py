"""Checks of lesson 03's exercises (query rewriting).

The chat model's replies differ between machines and seeds, so these checks test the policy and what was measured
against the lesson's own values in the same run, never a rewrite's wording or a score.
"""

from collections.abc import Mapping
from numbers import Integral

import numpy as np

from ragkit.corpus import Question
from ragkit.evaluate.metrics import relevance_of, score_ranking
from ragkit.evaluate.runners import Evaluation
from ragkit.exercises.checking import exercise, require

SAME = 1e-9  # two means of the same per-question scores agree to rounding


def gold_by_id(chosen, expected, name: str, what: str = "gold questions") -> dict[str, Question]:
    """The learner's questions by id, refusing anything but each expected question once."""
    require(isinstance(chosen, (list, tuple)) and all(isinstance(q, Question) for q in chosen),
            f"`{name}` should be a list of {what} (Question objects, as `questions` holds), not {kind(chosen)}")
    ids, wanted = [q.id for q in chosen], [q.id for q in expected]
    strangers = sorted(set(ids) - set(wanted))
    require(not strangers, f"`{name}` should hold only {what}; it has {', '.join(strangers[:3])}")
    require(sorted(ids) == sorted(wanted),
            f"`{name}` should hold each of the {len(wanted)} {what} once; it has {len(set(ids))} of them, "
            f"{len(ids)} items in all")
    return {q.id: q for q in chosen}


def kind(value) -> str:
    """What a value is, for a message: its type, and its items' types for a list."""
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {', '.join(sorted({type(v).__name__ for v in value})) or 'nothing'}"
    return f"a {type(value).__name__}"


def means_of(scores, name: str, keys: tuple[str, ...]) -> Mapping[str, float]:
    """The mean scores of an evaluation (what evaluate_retrieval returns, or an Evaluation), with the keys asked."""
    means = scores.means if isinstance(scores, Evaluation) else scores
    require(isinstance(means, Mapping), f"`{name}` should be what evaluate_retrieval returns ({{'mrr@5': ...}}), "
                                        f"not {type(scores).__name__}")
    missing = [key for key in keys if key not in means]
    require(not missing, f"`{name}` has no {', '.join(missing)}: evaluate with ks=(1, 5); it has "
                         f"{', '.join(map(str, means))}")
    require(all(isinstance(means[key], (int, float)) and 0 <= means[key] <= 1 for key in keys),
            f"`{name}`'s scores should lie between 0 and 1: {dict(means)}")
    return means


@exercise("3.1", names=("selective", "calls", "questions", "bm25", "rewrites"),
          expects="the gold questions with only the weak ones rewritten, and how many model calls that took")
def only_when_needed(selective, calls, questions, bm25, rewrites):
    """Exactly the questions whose BM25 top score is below the median carry their rewrite; one call each."""
    chosen = gold_by_id(selective, questions, "selective")
    tops = {q.id: float(bm25.scores(q.query).max()) for q in questions}
    median = float(np.median(list(tops.values())))
    for q in questions:
        query, top = chosen[q.id].query, tops[q.id]
        if top > median + SAME:
            require(query == q.query, f"{q.id} is not weak (BM25 top score {top:.2f}, the median is {median:.2f}) but "
                                      f"its query became {query!r}: keep the questions above the median as they are")
        elif top < median - SAME:
            require(query == rewrites[q.id].queries[0],
                    f"{q.id} is weak (BM25 top score {top:.2f}, below the median {median:.2f}) but its query is "
                    f"{query!r}: give it its rewrite from section 4, rewrites[q.id].queries[0]")
    weak = sum(top < median - SAME for top in tops.values())
    at_median = sum(abs(top - median) <= SAME for top in tops.values())
    require(isinstance(calls, Integral) and not isinstance(calls, bool),
            f"`calls` should be a whole number of model calls, not {type(calls).__name__}")
    require(weak <= calls <= weak + at_median,
            f"`calls` is {calls}, but {weak} of the {len(questions)} questions score below the median: the policy "
            "calls the model once for each of them and never for the others")


@exercise("3.2", names=("paraphrases", "hyde_hits", "hyde_scores", "questions", "by_id"),
          expects="the paraphrase questions, the hits each one's hypothetical passage found (keyed by the "
                  "question's text), and HyDE's recall@5 and MRR@5 on them")
def hypothetical_document(paraphrases, hyde_hits, hyde_scores, questions, by_id):
    """HyDE searched for every paraphrase question, found handbook documents, and its scores are those hits'."""
    wanted = [q for q in questions if q.style == "paraphrase"]
    gold_by_id(paraphrases, wanted, "paraphrases", "paraphrase questions")
    require(isinstance(hyde_hits, Mapping), f"`hyde_hits` should map each question's text to the hits its passage "
                                            f"found, not be a {type(hyde_hits).__name__}")
    per_question = []
    for q in wanted:
        hits = hyde_hits.get(q.query, hyde_hits.get(q.id))
        require(hits, f"`hyde_hits` has no hits for {q.id} ({q.query!r}): store each question's hits under its text")
        ids = [getattr(hit, "id", None) for hit in hits]
        require(all(doc_id in by_id for doc_id in ids),
                f"the hits for {q.id} should be handbook documents (dense.store.search returns them), not {ids}")
        require(len(set(ids)) == len(ids), f"the hits for {q.id} list a document twice: {ids}")
        per_question.append(score_ranking(ids, relevance_of(q), metrics=("recall", "mrr"), ks=(5,)))
    means = means_of(hyde_scores, "hyde_scores", ("recall@5", "mrr@5"))
    for key in ("recall@5", "mrr@5"):
        found = float(np.mean([row[key] for row in per_question]))
        require(abs(means[key] - found) <= SAME,
                f"`hyde_scores` has {key} {means[key]:.3f}, but the hits in `hyde_hits` give {found:.3f} on the "
                f"{len(wanted)} paraphrase questions: measure the HyDE search on `paraphrases`")


@exercise("3.3", names=("by_count", "baseline", "expansions"),
          expects="dense search's recall@5 and MRR@5 for each number of generated questions fused with the "
                  "original: 0, 1, 2 and 5 (all of them)")
def how_many_queries(by_count, baseline, expansions):
    """One row per count of generated questions; with none, the fusion is dense search on the question; with some,
    it ranks differently wherever the model generated questions."""
    require(isinstance(by_count, Mapping) and {0, 1, 2, 5} <= set(by_count),
            "`by_count` should map 0, 1, 2 and 5 (the number of generated questions used) to the scores, "
            f"not {sorted(by_count, key=str) if isinstance(by_count, Mapping) else type(by_count).__name__}")
    rows = {used: means_of(by_count[used], f"by_count[{used}]", ("recall@5", "mrr@5")) for used in (0, 1, 2, 5)}
    dense = baseline["dense"]
    for key in ("recall@5", "mrr@5"):
        require(abs(rows[0][key] - dense[key]) <= SAME,
                f"with no generated question the fusion searches the original alone, which is dense search on the "
                f"question ({key} {dense[key]:.3f} in section 4), but `by_count[0]` has {rows[0][key]:.3f}: fuse "
                "expansions[q.id].queries[:1 + n] with dense.search")
    generated = sum(len(expansion.queries) > 1 for expansion in expansions.values())
    alike = [used for used in (1, 2, 5)
             if all(abs(rows[used][key] - rows[0][key]) <= SAME for key in ("recall@5", "mrr@5"))]
    require(not generated or len(alike) < 3,
            f"`by_count[1]`, `[2]` and `[5]` all score as the original alone, though {generated} of the "
            f"{len(expansions)} expansions hold generated questions: fuse every query of "
            "expansions[q.id].queries[:1 + n], not only the first")
