"""Checks of lesson 01's exercises (BM25: tuning k1 and b, why a question missed, a title boost)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from functools import partial
from itertools import product

from ragkit.corpus import Doc, Question
from ragkit.evaluate.runners import evaluate_retrieval
from ragkit.exercises.checking import exercise, require
from ragkit.search.lexical import BM25Index
from ragkit.text import tokenize

GRID = set(product((0.9, 1.2, 1.5, 2.0), (0.3, 0.75, 1.0)))  # the (k1, b) pairs exercise 1.1 asks for
DEFAULT = (1.5, 0.75)  # rank_bm25's k1 and b, which the ladder's indexes use
KS = (1, 5, 10)  # the cut-offs of the ladder's table, so that MRR is mrr@10 there and here
# "The best tokenizer of the ladder": folding leads on recall@1, recall@10 and MRR, stop words and stems on
# recall@5 (section 5's table), so either one counts.
BEST_RUNGS = {"+ folding": partial(tokenize, fold=True),
              "+ stop words, stems": partial(tokenize, fold=True, stopwords=True, stem=True)}


@exercise("1.1", names=("grid", "ladder_results"),
          expects="a list of rows, one per (k1, b) pair, each a dict with its k1, b and evaluate_retrieval's scores "
                  "at ks=(1, 5, 10); section 5's ladder_results are read beside it")
def tune_bm25(grid, ladder_results):
    """Every pair of the grid once, scores that can be, and the default pair scoring as a best ladder rung does."""
    rows = metric_rows(grid, "grid", ("k1", "b", "mrr@10"))
    pairs = [(round(float(row["k1"]), 6), round(float(row["b"]), 6)) for row in rows]
    require(len(pairs) == len(set(pairs)) and set(pairs) == GRID,
            f"`grid` has the pairs {sorted(set(pairs))}{' (some twice)' if len(pairs) != len(set(pairs)) else ''}: "
            f"the exercise asks for each of {sorted(GRID)} once")
    default = rows[pairs.index(DEFAULT)]
    require(isinstance(ladder_results, Mapping), "`ladder_results` is not section 5's dict of the ladder's scores: "
                                                 "run section 5 again")
    require(any(same_scores(default, ladder_results.get(name, {})) for name in BEST_RUNGS),
            "`grid`'s row for the default pair (k1=1.5, b=0.75) does not score as the ladder's best rungs do "
            f"({' or '.join(repr(name) for name in BEST_RUNGS)} in ladder_results): build every index of the grid "
            "over `docs` with the best tokenizer of section 5")


def metric_rows(rows, name: str, keys: Sequence[str]) -> list[Mapping]:
    """The rows as a list of dicts holding keys, each with recall and MRR between 0 and 1."""
    require(isinstance(rows, (list, tuple)) and rows and all(isinstance(row, Mapping) for row in rows),
            f"`{name}` should be a list of dicts, one per setting, as the rows format_table prints")
    for row in rows:
        missing = [key for key in keys if key not in row]
        require(not missing, f"a row of `{name}` has no {', '.join(missing)}: give each row its setting and "
                             f"evaluate_retrieval(..., ks={KS})'s scores")
        require_possible_scores(row, f"`{name}`'s row {dict(setting(row))}")
    return list(rows)


def setting(row: Mapping) -> dict:
    """The entries of a row that are not scores."""
    return {key: value for key, value in row.items() if not is_metric(key)}


def is_metric(key) -> bool:
    """Whether a row's key names a recall or MRR score."""
    return isinstance(key, str) and key.startswith(("recall@", "mrr@"))


def require_possible_scores(scores: Mapping, where: str) -> None:
    """Fail unless every recall and MRR lies in [0, 1] and MRR@k lies between recall@1 and recall@k."""
    for key, value in scores.items():
        if is_metric(key):
            require(isinstance(value, numbers.Real) and 0 <= value <= 1,
                    f"{where} has {key} = {value!r}: recall and MRR are shares between 0 and 1")
    for key in [key for key in scores if isinstance(key, str) and key.startswith("mrr@")]:
        top = scores.get(f"recall@{key.removeprefix('mrr@')}", 1)
        require(scores.get("recall@1", 0) - 1e-9 <= scores[key] <= top + 1e-9,
                f"{where} has {key} outside [recall@1, recall@k]: these are not evaluate_retrieval's scores")


def same_scores(mine: Mapping, reference: Mapping) -> bool:
    """Whether two score dicts agree (to rounding) on every metric both have, mrr@10 among them."""
    shared = [key for key in mine if is_metric(key) and key in reference]
    return "mrr@10" in shared and all(math.isclose(mine[key], reference[key], abs_tol=1e-9) for key in shared)


@exercise("1.2", names=("missed", "top", "shared_with_answer", "shared_with_top", "docs"),
          expects="a paraphrase question the best BM25 does not rank first, the document it ranks first, and the "
                  "tokens the question shares with its answer document and with that document")
def why_it_missed(missed, top, shared_with_answer, shared_with_top, docs):
    """A paraphrase the best BM25 misses, its real first hit, and the question's tokens each document holds."""
    require(isinstance(missed, Question), f"`missed` is a {type(missed).__name__}: store the gold question itself")
    require(missed.style == "paraphrase", f"`missed` is a {missed.style!r} question: pick a paraphrase")
    require(isinstance(top, Doc), f"`top` is a {type(top).__name__}: store the document BM25 put first "
                                  "(a Doc: hit.doc, not the hit)")
    require(top.id not in missed.relevant, f"`top` ({top.id}) answers `missed`: pick a question whose answer BM25 "
                                           "does not rank first")
    rungs = [name for name, tokenizer in BEST_RUNGS.items() if first_hit(docs, tokenizer, missed.query) == top.id]
    require(rungs, f"`top` ({top.id}) is not the document the best BM25 ranks first for `missed`: search with the "
                   f"index of {' or '.join(repr(name) for name in BEST_RUNGS)} from section 5's ladder")
    tokenizers = [BEST_RUNGS[name] for name in rungs]
    answer = next((doc for doc in docs if doc.id in missed.relevant), None)
    require(answer is not None, f"`docs` holds no answer of `missed` ({', '.join(missed.relevant)})")
    for shared, doc, name in ((shared_with_answer, answer, "shared_with_answer"), (shared_with_top, top,
                                                                                   "shared_with_top")):
        require(isinstance(shared, (set, frozenset, list, tuple)) and all(isinstance(t, str) for t in shared),
                f"`{name}` should be the shared tokens, a set of strings")
        require(any(tokens_shared(set(shared), missed.query, doc, tokenizer) for tokenizer in tokenizers),
                f"`{name}` is not the set of tokens `missed` shares with {doc.id}: tokenize the question and the "
                "document with the tokenizer of your BM25 index and intersect the two sets")


def first_hit(docs: Sequence[Doc], tokenizer, query: str) -> str:
    """The id of the document BM25 with this tokenizer ranks first for the query."""
    return BM25Index(docs, tokenizer=tokenizer).search(query, k=1)[0].id


def tokens_shared(shared: set, query: str, doc: Doc, tokenizer) -> bool:
    """Whether shared is the question's tokens found in the document's text (its title may add some)."""
    asked = set(tokenizer(query))
    return asked & set(tokenizer(doc.text)) <= shared <= asked & set(tokenizer(f"{doc.title} {doc.text}"))


@exercise("1.3", names=("boosted_docs", "boosted_results", "docs", "questions"),
          expects="the handbook's documents with each title three times, and evaluate_retrieval's scores "
                  "(ks=(1, 5, 10)) of a BM25 index over them with the best tokenizer")
def title_boost(boosted_docs, boosted_results, docs, questions):
    """The same documents with their title three times, and scores that are a best-tokenizer BM25's over them."""
    require_boosted(boosted_docs, docs)
    require(isinstance(boosted_results, Mapping) and {"recall@1", "mrr@10"} <= set(boosted_results),
            f"`boosted_results` should be evaluate_retrieval(..., ks={KS})'s dict, with recall@1 and mrr@10 to "
            "compare with the ladder")
    require_possible_scores(boosted_results, "`boosted_results`")
    scores = [evaluate_retrieval(BM25Index(boosted_docs, tokenizer=tokenizer).search, questions, ks=KS)
              for tokenizer in BEST_RUNGS.values()]
    require(any(same_scores(boosted_results, reference) for reference in scores),
            "`boosted_results` are not the scores of a BM25 index over `boosted_docs`: evaluate "
            "BM25Index(boosted_docs, tokenizer=...) with the best tokenizer of section 5, not the ladder's index")


def require_boosted(boosted_docs, docs: Sequence[Doc]) -> None:
    """Fail unless boosted_docs are docs, each once, with its title three times in what BM25 indexes."""
    require(isinstance(boosted_docs, (list, tuple)) and all(isinstance(doc, Doc) for doc in boosted_docs),
            "`boosted_docs` should be a list of Docs (dataclasses.replace(doc, text=...) for each doc)")
    originals = {doc.id: doc for doc in docs}
    ids = [doc.id for doc in boosted_docs]
    require(sorted(ids) == sorted(originals), "`boosted_docs` should hold every document of `docs` once, no other")
    for doc in boosted_docs:
        original, indexed = originals[doc.id], f"{doc.title} {doc.text}"  # what BM25Index indexes
        require(original.text in indexed and (not original.title or indexed.count(original.title) >= 3),
                f"{doc.id} in `boosted_docs` does not hold its title three times and its whole text: BM25Index "
                "indexes title + text, so add the title twice to the text")
