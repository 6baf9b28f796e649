"""The few-shot examples of the reasoning prompts, all about animals: a domain far from the course data, so a
reply that copies an example's entity instead of reading the question is visible (ragkit.models.replies.copy_warnings
looks for the marker words below). Taught in lessons/06_cot_rag.ipynb and lessons/07_rethinking_with_retrieval.ipynb.
"""

from __future__ import annotations

# (question, its steps) for decomposition; (question, its steps, the answer) for a chain of thought
DECOMPOSE_EXAMPLES = (
    ("Does the animal that eats eucalyptus leaves live on the same continent as the kiwi bird?",
     ("Which animal eats eucalyptus leaves?", "On which continent does the koala live?",
      "On which continent does the kiwi bird live?")),
    ("How many legs does the insect that makes honey have?",
     ("Which insect makes honey?", "How many legs does a honey bee have?")),
)
COT_EXAMPLES = (
    ("Could a koala swim from Australia to New Zealand in one day?",
     ("Koalas live in eastern Australia.", "New Zealand is about 2,000 km from Australia across the sea.",
      "Koalas can swim only short distances."), "no"),
    ("What do the young of the animal that eats eucalyptus leaves drink?",
     ("The koala eats eucalyptus leaves.", "Young koalas drink their mother's milk."), "milk"),
)
# Words only each set of examples uses: a step with one that its question lacks copied an example's pattern.
DECOMPOSE_MARKERS = frozenset({"animal", "eucalyptus", "kiwi", "koala", "koalas", "continent", "legs",
                               "insect", "honey", "bee", "bees"})
COT_MARKERS = frozenset({"koala", "koalas", "eucalyptus", "joey", "marsupial", "kiwi", "zealand"})
# (steps verified so far, evidence, step, verdict, correction) for judging a step
VERIFY_EXAMPLES = (
    ((), "[1] Koala: The koala lives in the eucalyptus forests of eastern Australia.",
     "Koalas live in eastern Australia.", "confirmed", ""),
    (("Koalas live in eastern Australia.",), "[1] Koala: Koalas sleep up to 20 hours a day.",
     "Koalas sleep about 8 hours a day.", "corrected", "Koalas sleep up to 20 hours a day."),
    (("Koalas live in eastern Australia.",), "[1] Kiwi: The kiwi is a flightless bird of New Zealand.",
     "Koalas can swim only short distances.", "unverified", ""),
)


def decompose_example_texts() -> list[str]:
    """Every question and step of the decomposition examples, for the copy check."""
    return [text for question, steps in DECOMPOSE_EXAMPLES for text in (question, *steps)]


def cot_example_steps() -> list[str]:
    """Every step of the chain-of-thought examples, for the copy check."""
    return [text for _, steps, _ in COT_EXAMPLES for text in steps]
