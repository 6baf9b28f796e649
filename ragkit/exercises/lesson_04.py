"""Checks of lesson 04's exercises (reranking).

The cross-encoder is trained again on every machine, so its scores move a little between machines. These checks
compare the learner's lists with stage 1 and stage 2 of the same run (`stage1`, `stage2`), which moved with them.
"""

from collections.abc import Mapping
from functools import partial
from numbers import Integral

from ragkit.corpus import Question
from ragkit.exercises.checking import evaluated_lists, exercise, require

SCORE_NOISE = 1e-4  # the same pair scored in another batch may differ in its last digits


retrieved_lists = partial(evaluated_lists, metric="ndcg@5", label="nDCG@5", how="metrics=('ndcg', 'mrr') and ks=(5,)")


def cross_encoder_scores(question, stage1, stage2) -> dict[str, float]:
    """The cross-encoder's score of each of stage 1's candidates for a question, as stage 2 holds them."""
    scores = {hit.id: hit.score for hit in stage2[question.query]}
    require(scores.keys() == {hit.id for hit in stage1[question.query]},
            f"stage2 should hold stage 1's candidates for {question.id}, reordered: run section 7's cells again")
    return scores


def reranking_problem(ids: list[str], candidates: list[str], scores: Mapping[str, float]) -> str:
    """Why ids are not the best of the candidates in the cross-encoder's order ("" if they are)."""
    outside = [doc_id for doc_id in ids if doc_id not in candidates]
    if outside:
        return f"{outside[0]} is not among the {len(candidates)} candidates"
    if len(set(ids)) < len(ids) or len(ids) < min(5, len(candidates)):
        return "it should list 5 different candidates"
    if any(scores[a] < scores[b] - SCORE_NOISE for a, b in zip(ids, ids[1:])):
        return "it is not in the order of the cross-encoder's scores"
    left_out = [doc_id for doc_id in candidates if doc_id not in ids]
    if any(scores[doc_id] > scores[ids[-1]] + SCORE_NOISE for doc_id in left_out):
        return "it leaves out a candidate the cross-encoder scored higher"
    return ""


def answer_rank(hits, question) -> int | None:
    """The rank of the question's first relevant document among the hits (None if absent)."""
    return next((rank for rank, hit in enumerate(hits, 1) if hit.id in question.relevant), None)


def moved_down_by_reranker(question, stage1, stage2) -> bool:
    """True if the question's answer ranks lower after reranking than in stage 1."""
    before, after = answer_rank(stage1[question.query], question), answer_rank(stage2[question.query], question)
    return before is not None and after > before


@exercise("4.1", names=("by_depth", "questions", "stage1", "stage2"),
          expects="evaluate_pipeline's result for reranking the top 5, 10 and 20 of stage 1, keyed by the depth")
def stage_two_depth(by_depth, questions, stage1, stage2):
    """At each depth every list is stage 1's top d in the cross-encoder's order."""
    require(isinstance(by_depth, Mapping) and {5, 10, 20} <= set(by_depth),
            "`by_depth` should map the depths 5, 10 and 20 to their runs, not "
            f"{sorted(by_depth, key=str) if isinstance(by_depth, Mapping) else type(by_depth).__name__}")
    for depth in (5, 10, 20):
        for q, ids in zip(questions, retrieved_lists(by_depth[depth], questions, f"by_depth[{depth}]")):
            scores = cross_encoder_scores(q, stage1, stage2)
            problem = reranking_problem(ids, [hit.id for hit in stage1[q.query][:depth]], scores)
            require(not problem, f"at depth {depth}, {q.id}'s list {ids}: {problem}. Rerank only "
                                 f"stage1[query][:{depth}], by the cross-encoder's scores (stage2's hits hold them)")


@exercise("4.2", names=("moved_down", "token_counts", "questions", "stage1", "stage2", "by_id"),
          expects="the gold questions whose answer ranks lower after reranking, and {document id: (tokens that "
                  "are [UNK] or one character, all tokens)} for a Vietnamese and a Russian document")
def where_it_hurts(moved_down, token_counts, questions, stage1, stage2, by_id):
    """The list is exactly the questions the reranker moved down; the token counts are MiniLM's."""
    require(isinstance(moved_down, (list, tuple)) and all(isinstance(q, Question) for q in moved_down),
            "`moved_down` should be a list of gold questions (Question objects, as `questions` holds), not a "
            f"{type(moved_down).__name__}")
    listed = [q.id for q in moved_down]
    require(len(set(listed)) == len(listed), "`moved_down` lists a question twice")
    for q in questions:
        cross_encoder_scores(q, stage1, stage2)  # stage 2 reorders stage 1: an answer is in both lists or in neither
    lower = [q.id for q in questions if moved_down_by_reranker(q, stage1, stage2)]
    extra, missing = sorted(set(listed) - set(lower)), sorted(set(lower) - set(listed))
    require(not extra, f"`moved_down` has {', '.join(extra[:5])}, whose answer did not rank lower in stage2 than in "
                       "stage1 (or is in neither): compare the first relevant rank of each")
    require(not missing, f"`moved_down` leaves out {', '.join(missing[:5])}, whose answer ranks lower in stage2 than "
                         "in stage1")
    check_token_counts(token_counts, by_id)


def check_token_counts(token_counts, by_id) -> None:
    """Counts a tokenizer could give, for a Vietnamese and a Russian document, with Russian mostly single letters."""
    require(isinstance(token_counts, Mapping) and token_counts,
            "`token_counts` should map document ids to (odd tokens, all tokens), as {'ru-office-01': (odd, total)}")
    for doc_id, counts in token_counts.items():
        require(doc_id in by_id, f"`token_counts` has {doc_id!r}, which is no handbook document id")
        require(isinstance(counts, (tuple, list)) and len(counts) == 2 and all(isinstance(c, Integral) for c in counts),
                f"`token_counts[{doc_id!r}]` should be two whole numbers, (odd tokens, all tokens), not {counts!r}")
        odd, total = counts
        text = by_id[doc_id].text
        require(len(text.split()) <= total <= len(text),
                f"{doc_id} has {len(text.split())} words and {len(text)} characters, so MiniLM's tokenizer gives it "
                f"between those many tokens, not {total}: count tokenizer.tokenize(text)")
        require(0 <= odd <= total, f"`token_counts[{doc_id!r}]` counts {odd} odd tokens of {total}")
    langs = {by_id[doc_id].lang for doc_id in token_counts}
    require({"vi", "ru"} <= langs, f"`token_counts` should count a Vietnamese and a Russian document; its documents "
                                   f"are in {', '.join(sorted(langs))}")
    for doc_id, (odd, total) in token_counts.items():
        require(by_id[doc_id].lang != "ru" or odd > total / 2,
                f"{doc_id}: {odd} of {total} tokens counted as [UNK] or one character. MiniLM's English vocabulary "
                "cuts Russian into single letters: count the pieces whose text without '##' is one character, "
                "as well as [UNK]")


@exercise("4.3", names=("english_only", "questions", "stage1", "stage2"),
          expects="evaluate_pipeline's result for the pipeline that reranks only the English questions")
def trusted_where_trained(english_only, questions, stage1, stage2):
    """English questions get the cross-encoder's order, the others keep stage 1's."""
    for q, ids in zip(questions, retrieved_lists(english_only, questions, "english_only")):
        if q.lang == "en":
            scores = cross_encoder_scores(q, stage1, stage2)
            problem = reranking_problem(ids, [hit.id for hit in stage1[q.query]], scores)
            require(not problem, f"{q.id} is English, so the pipeline reranks it, but its list {ids}: {problem}. "
                                 "Take stage2's list for English questions")
        else:
            first = [hit.id for hit in stage1[q.query]][: max(len(ids), 1)]
            require(ids == first, f"{q.id} is in {q.lang!r}, so the pipeline keeps stage 1's order {first}, but it "
                                  f"returned {ids}")
