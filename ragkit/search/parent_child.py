"""Parent-child indexing: search small children (sentences) for precision, return their parents for context.

Taught in lessons/05_parent_child.ipynb.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ragkit.corpus import Doc, Hit, check_docs
from ragkit.text import split_sentences


@dataclass(frozen=True)
class ParentHit(Hit):
    """A parent doc returned because one of its children matched; `child` is the best-matching one."""

    child: Doc | None = None


def child_docs(parents: Sequence[Doc], *, sentences_per_child: int = 1) -> list[Doc]:
    """Each parent cut into runs of whole sentences; every child keeps the parent's fields and id."""
    if sentences_per_child < 1:
        raise ValueError(f"sentences_per_child must be at least 1, got {sentences_per_child}")
    children = []
    for parent in check_docs(list(parents)):
        sentences = split_sentences(parent.text) or [parent.text]
        for number, start in enumerate(range(0, len(sentences), sentences_per_child)):
            text = " ".join(sentences[start : start + sentences_per_child])
            children.append(Doc(f"{parent.id}#{number}", text, parent.title, parent.source, parent.lang,
                                parent.topic, parent_id=parent.id))
    return children


class ParentChildIndex:
    """Index the children with any retriever; search returns each matched parent once, best child first."""

    def __init__(self, parents: Sequence[Doc], make_index: Callable[[list[Doc]], object], *,
                 sentences_per_child: int = 1, depth_per_parent: int = 4):
        self.parents = {doc.id: doc for doc in check_docs(list(parents))}
        self.children = child_docs(list(self.parents.values()), sentences_per_child=sentences_per_child)
        self.child_index = make_index(self.children)
        self.depth_per_parent = depth_per_parent

    def search_children(self, query: str, *, k: int = 5) -> list[Hit]:
        """The k best children themselves (what the index sees)."""
        return self.child_index.search(query, k=k)

    def search(self, query: str, *, k: int = 5) -> list[ParentHit]:
        """The k best parents, each scored by its best child."""
        best: dict[str, ParentHit] = {}
        for hit in self.search_children(query, k=k * self.depth_per_parent):
            parent_id = hit.doc.parent_id or hit.id
            if parent_id not in best:
                best[parent_id] = ParentHit(self.parents[parent_id], hit.score, hit.doc)
        return list(best.values())[:k]
