"""Checks of lesson 05's exercises (parent-child indexing).

Dense scores move a little between machines, so the checks of dense runs test what the lists are made of and how
they relate to section 4 and 6's runs in the same notebook; BM25 is exact everywhere, so its lists are compared.
"""

from collections.abc import Mapping
from functools import partial

from ragkit.exercises.checking import evaluated_lists, exercise, require
from ragkit.search.lexical import BM25Index
from ragkit.search.parent_child import child_docs
from ragkit.text import search_tokenize

retrieved_lists = partial(evaluated_lists, metric="hit@1", label="hit@1", how="metrics=('hit', 'mrr') and ks=(1, 5)")


def parents_once(lists: list[list[str]], questions, by_id, name: str) -> None:
    """Every list holds handbook documents (parents, not children), each once."""
    for q, ids in zip(questions, lists):
        require(ids and all(doc_id in by_id for doc_id in ids),
                f"`{name}` lists {ids} for {q.id}: a parent-child search returns parent documents, not children "
                "(ids with '#')")
        require(len(set(ids)) == len(ids), f"`{name}` lists a parent twice for {q.id}: {ids}")


@exercise("5.1", names=("bigger", "results", "questions", "by_id"),
          expects="evaluate_pipeline's result for children of 2 and of 3 sentences, keyed by the sentences per child")
def bigger_children(bigger, results, questions, by_id):
    """Runs of two new indexes that return parents, each different from the one-sentence index."""
    require(isinstance(bigger, Mapping) and {2, 3} <= set(bigger),
            "`bigger` should map 2 and 3 (the sentences per child) to their runs, not "
            f"{sorted(bigger, key=str) if isinstance(bigger, Mapping) else type(bigger).__name__}")
    lists = {n: retrieved_lists(bigger[n], questions, f"bigger[{n}]") for n in (2, 3)}
    one = [list(row["retrieved"]) for row in results["children -> parents"].per_question]
    for n in (2, 3):
        parents_once(lists[n], questions, by_id, f"bigger[{n}]")
        require(lists[n] != one, f"children of {n} sentences return the one-sentence index's lists for every question: "
                                 f"build a new ParentChildIndex with sentences_per_child={n} and a collection name "
                                 "of its own")
    require(lists[2] != lists[3], "children of 2 and of 3 sentences return the same lists for every question: give "
                                  "each DenseIndex its own collection name")


@exercise("5.2", names=("window", "window_has", "window_words", "questions", "parent_child", "child_has",
                        "parent_has", "child_words"),
          expects="window(child), the child's text with its neighbours; for each gold question, whether the top "
                  "window contains the answer and its length in words")
def sentence_window(window, window_has, window_words, questions, parent_child, child_has, parent_has, child_words):
    """The window is the child and its two neighbours, and sits between section 4's child and parent."""
    check_window(window, parent_child.children)
    for name, values in (("window_has", window_has), ("window_words", window_words)):
        require(isinstance(values, (list, tuple)) and len(values) == len(questions),
                f"`{name}` should hold one value for each of the {len(questions)} gold questions, in order")
    for q, has, child, parent in zip(questions, window_has, child_has, parent_has):
        require(has or not child, f"{q.id}: the top child contains the answer but its window does not. Take the top "
                                  "hit of parent_child.search(q.query, k=1) as section 4 does; the window holds it")
        require(parent or not has, f"{q.id}: the window contains the answer but the top parent does not; a window "
                                   "holds only sentences of that parent")
    for q, words, child in zip(questions, window_words, child_words):
        require(words >= child, f"{q.id}: the window has {words} words, fewer than its child's {child}")


def check_window(window, children) -> None:
    """window(child) holds the child and its neighbours in the same parent, and nothing more."""
    require(callable(window), "`window` should be a function: window(child) returns the child's text with the "
                              "sentence before and after it")
    by_id = {child.id: child for child in children}
    for child in children:
        text = window(child)
        require(isinstance(text, str), f"window({child.id}) should return text, not a {type(text).__name__}")
        parent_id, number = child.id.rsplit("#", 1)
        around = [by_id[i] for i in (f"{parent_id}#{int(number) + step}" for step in (-1, 0, 1)) if i in by_id]
        missing = [part.id for part in around if part.text not in text]
        require(not missing, f"window({child.id}) leaves out {', '.join(missing)}: look its neighbours up by id, "
                             f"{parent_id}#<number - 1> and #<number + 1>")
        require(len(text) <= sum(len(part.text) + 1 for part in around),
                f"window({child.id}) holds more than the child and its neighbours in {parent_id}")


@exercise("5.3", names=("bm25_whole", "bm25_children", "questions", "docs"),
          expects="evaluate_pipeline's result for BM25 over whole documents and for BM25 over the children")
def keyword_children(bm25_whole, bm25_children, questions, docs):
    """Both runs are BM25 with lesson 01's tokenizer: over the documents, and over the children returning parents
    (each parent once, where its best child ranks: worked out here from the children, not by ParentChildIndex)."""
    whole = BM25Index(docs, tokenizer=search_tokenize)
    children = BM25Index(child_docs(list(docs)), tokenizer=search_tokenize)
    for name, run, search, how in (
            ("bm25_whole", bm25_whole, lambda query, k: [hit.id for hit in whole.search(query, k=k)],
             "BM25Index(docs, tokenizer=search_tokenize)"),
            ("bm25_children", bm25_children, partial(parents_by_best_child, children),
             "ParentChildIndex(docs, lambda kids: BM25Index(kids, tokenizer=search_tokenize))")):
        for q, ids in zip(questions, retrieved_lists(run, questions, name)):
            expected = search(q.query, max(5, len(ids)))
            require(ids == expected, f"`{name}` ranks {ids} for {q.id}, where {how} ranks {expected}")


def parents_by_best_child(children: BM25Index, query: str, k: int, depth_per_parent: int = 4) -> list[str]:
    """The parents of the k x depth best children, each once, in the order of its best child, the first k."""
    ranked = [hit.doc.parent_id or hit.id for hit in children.search(query, k=k * depth_per_parent)]
    return list(dict.fromkeys(ranked))[:k]
