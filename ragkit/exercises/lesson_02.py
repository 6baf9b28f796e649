"""Checks of lesson 02's exercises (dense search: a language filter, the RRF constant, an English-only embedder).

Embedding scores move a little between CPUs, so these checks test relations that hold on any machine (a filter
that keeps the answer cannot lower recall@1; k = 60 is the hybrid index of section 8) and never a recorded score.
"""

from __future__ import annotations

import numbers
from collections import Counter
from collections.abc import Mapping

from ragkit.corpus import Question
from ragkit.exercises.checking import exercise, require

RRF_KS = (0, 10, 60, 200)  # the values of rrf_k exercise 2.2 asks for
HYBRID = "hybrid (RRF)"  # section 8's name for the hybrid index, whose rrf_k is ragkit's default, 60
ONE_QUESTION = 0.02  # a score's room for one of the 56 questions to swap near-tied places between two runs
CROSSLINGUAL = "crosslingual"  # the style where an English-only embedder falls behind


@exercise("2.1", names=("vi_questions", "plain", "scoped", "questions"),
          expects="the Vietnamese-language gold questions, and dense recall@1 on them without and with a filter "
                  "to the language of each answer document")
def scope_by_language(vi_questions, plain, scoped, questions):
    """All the Vietnamese-language questions, two possible recall@1 values, and no loss from the filter."""
    expected = {q.id for q in questions if q.lang == "vi"}
    require(isinstance(vi_questions, (list, tuple)) and all(isinstance(q, Question) for q in vi_questions),
            "`vi_questions` should be a list of gold questions")
    ids = [q.id for q in vi_questions]
    require(len(ids) == len(set(ids)) and set(ids) == expected,
            f"`vi_questions` holds {len(ids)} questions; the gold set has {len(expected)} with q.lang == 'vi', "
            "each once: keep exactly those")
    for name, value in (("plain", plain), ("scoped", scoped)):
        require(is_share(value, len(ids)), f"`{name}` is {value!r}: recall@1 over {len(ids)} questions is the "
                                           f"share with the answer first, a multiple of 1/{len(ids)} from 0 to 1")
    require(scoped >= plain - 1e-9,
            f"`scoped` ({scoped:.2f}) is below `plain` ({plain:.2f}): a filter to the answer's own language keeps "
            "the answer and only removes other documents, so it cannot push an answer out of first place; filter "
            "on by_id[q.relevant[0]].lang, not on the question's language")


def is_share(value, count: int) -> bool:
    """Whether value is a share of count questions: k / count for a whole k from 0 to count."""
    return is_fraction(value) and abs(value * count - round(value * count)) < 1e-6


@exercise("2.2", names=("rrf_rows", "favours_top", "results"),
          expects="one row per rrf_k with its rrf_k and evaluate_retrieval's scores, and the rrf_k that favours "
                  "the documents one retriever puts at the very top; section 8's results are read beside them")
def rrf_constant(rrf_rows, favours_top, results):
    """Each k once, k = 60 scoring as section 8's hybrid index does, and the smallest k named as favouring the top."""
    require(isinstance(rrf_rows, (list, tuple)) and all(isinstance(row, Mapping) and "rrf_k" in row
                                                        for row in rrf_rows),
            "`rrf_rows` should be a list of dicts, one per rrf_k, each with its rrf_k and its scores")
    require(sorted(row["rrf_k"] for row in rrf_rows) == sorted(RRF_KS),
            f"`rrf_rows` has the rrf_k {[row['rrf_k'] for row in rrf_rows]}: the exercise asks for each of "
            f"{list(RRF_KS)} once")
    for row in rrf_rows:
        require(is_scores(row), f"`rrf_rows`' row for rrf_k={row['rrf_k']} has no recall@1 and MRR between 0 and "
                                "1: add evaluate_retrieval(variant.search, questions, ks=...)'s scores to it")
    conventional = next(row for row in rrf_rows if row["rrf_k"] == 60)
    hybrid = results.get(HYBRID) if isinstance(results, Mapping) else None
    require(hybrid, f"section 8's `results` has no {HYBRID!r} row: run section 8, then this exercise")
    shared = [key for key in conventional if isinstance(key, str) and key.startswith("recall@") and key in hybrid]
    require(shared and all(abs(conventional[key] - hybrid[key]) <= ONE_QUESTION for key in shared),
            "`rrf_rows`' row for rrf_k=60 does not score as section 8's hybrid index: fuse bm25.search and "
            "dense.search with depth=50, as `hybrid` does, and change only rrf_k")
    require(isinstance(favours_top, numbers.Real) and not isinstance(favours_top, bool) and favours_top == min(RRF_KS),
            f"`favours_top` is {favours_top!r}: RRF adds 1/(k + rank), so compare what ranks 1 and 2 earn at each k "
            "(1 and 1/2 at k = 0, 1/61 and 1/62 at k = 60): the smaller k, the more one list's first place weighs")


def is_scores(row: Mapping) -> bool:
    """Whether the row holds recall@1 and an MRR, each from 0 to 1, with MRR at least recall@1."""
    mrrs = [value for key, value in row.items() if isinstance(key, str) and key.startswith("mrr@")]
    values = [row.get("recall@1"), *mrrs]
    return bool(mrrs) and all(is_fraction(value) for value in values) and min(mrrs) >= row["recall@1"] - 1e-9


def is_fraction(value) -> bool:
    """Whether value is a number from 0 to 1 (not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and 0 <= value <= 1


@exercise("2.3", names=("minilm", "embedder_rows", "questions"),
          expects="the DenseIndex built with MiniLM, and two rows of recall@5 by question style, e5's first, then "
                  "MiniLM's, each with the style's name as its key")
def english_only_embedder(minilm, embedder_rows, questions):
    """A MiniLM index, a recall@5 for every style in both rows, and MiniLM behind e5 on cross-lingual questions."""
    name = getattr(getattr(minilm, "embedder", None), "name", "")
    require(callable(getattr(minilm, "search", None)) and "minilm" in str(name).lower(),
            "`minilm` should be the DenseIndex over the handbook built with models.embedder(\"minilm\")")
    require(isinstance(embedder_rows, (list, tuple)) and len(embedder_rows) == 2
            and all(isinstance(row, Mapping) for row in embedder_rows),
            "`embedder_rows` should be two dicts: e5's recall@5 by style, then MiniLM's")
    for row in embedder_rows:
        for style, count in Counter(q.style for q in questions).items():
            require(is_share(row.get(style), count),
                    f"a row of `embedder_rows` has {style} = {row.get(style)!r}: give each style's recall@5 on its "
                    f"{count} questions under the style's name")
    e5, english = embedder_rows
    require(english[CROSSLINGUAL] < e5[CROSSLINGUAL],
            "MiniLM's row is not behind e5's on the cross-lingual questions: put e5's row first, then MiniLM's, "
            "each from its own index (and check that `dense` is e5: RAGKIT_EMBEDDER may have changed it)")
