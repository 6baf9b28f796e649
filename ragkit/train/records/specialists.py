"""The specialists' training records (in each job's prompt, ragkit.models.jobs), built from the
public evaluation sets (data/benchmarks/), with a fixed held-out tenth (by a hash of the question or claim).

- decomposer: MuSiQue dev decompositions (Wikidata-style steps "Erik Hort >> place of birth" read as
  "Where was Erik Hort born?") and StrategyQA train decompositions -> "1. …\\n2. …", at most 4 steps;
- answerer: a StrategyQA train question with its gold facts, or with the BM25 top facts -> "yes" / "no",
  labels balanced;
- judge: a statement and numbered evidence -> "supports" / "contradicts" / "unrelated": a StrategyQA fact
  among retrieved look-alikes (supports) or only the look-alikes (unrelated), SciFact train claims with their
  rationale sentences (SUPPORT, CONTRADICT) or another claim's (unrelated); the test claims, which the SciFact
  benchmark scores, are read only to leave out the train claims that share their text.
- reader: ragkit.train.records.reader (SQuAD v1.1 and HotpotQA train passages among distractors, StrategyQA yes/no);
- relevance: ragkit.train.records.relevance (SciFact train claims, HotpotQA, SQuAD and StrategyQA train questions, each
  with relevant passages and as many BM25-hard negatives: "yes" / "no");
- rewriter: ragkit.train.records.rewriter (the rewrites of training queries that retrieval judged better than the query,
  and Vietnamese questions with their diacritics restored).
StrategyQA's fixed dev200 questions never enter any training set. Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter
from pathlib import Path
from typing import Sequence

from ragkit.corpus import Doc, evaldata_files, read_json, read_jsonl
from ragkit.errors import CorpusError
from ragkit.models.jobs import MAX_STEPS, answerer_messages, decomposer_messages, judge_messages
from ragkit.search.lexical import BM25Index
from ragkit.text import numbered, restates, search_tokenize
from ragkit.train import splits
from ragkit.train.records import reader as reader_records
from ragkit.train.records import relevance as relevance_records
from ragkit.train.records import rewriter as rewriter_records

SCIFACT_LABELS = {"SUPPORT": "supports", "CONTRADICT": "contradicts"}
SOURCES = {"musique": "musique/dev_decompositions.json", "strategyqa": "strategyqa/strategyqa_train.json",
           "dev200": "strategyqa/dev200_qids.json", "facts": "strategyqa/facts_corpus.jsonl",
           "scifact_claims": "scifact/claims_train_with_evidence.jsonl",
           "scifact_test_claims": "scifact/claims_dev_with_evidence.jsonl",
           "scifact_sentences": "scifact/corpus_sentences.jsonl"}
OWN_MODULES = {"reader": reader_records, "relevance": relevance_records,  # jobs whose records have a module
               "rewriter": rewriter_records}
JOB_SOURCES = {"decomposer": ("musique", "strategyqa", "dev200"),
               "answerer": ("strategyqa", "dev200", "facts"),
               "judge": ("strategyqa", "dev200", "facts", "scifact_claims", "scifact_test_claims",
                         "scifact_sentences")}

# How a Wikidata relation reads as a question; any other relation reads "What is the <relation> of X?"
# ("... of X?" relations ending in a preposition read "What is X <relation>?").
RELATION_QUESTIONS = {
    "place of birth": "Where was {x} born?", "place of death": "Where did {x} die?",
    "located in the administrative territorial entity": "In which administrative territorial entity is {x} located?",
    "headquarters location": "Where is the headquarters of {x}?",
    "shares border with": "What shares a border with {x}?",
    "member of sports team": "Which sports team is {x} a member of?", "educated at": "Where was {x} educated?",
    "owned by": "Who owns {x}?", "founded by": "Who founded {x}?", "instance of": "What kind of thing is {x}?",
    "work location": "Where did {x} work?", "location of formation": "Where was {x} formed?",
    "country of citizenship": "What is the country of citizenship of {x}?", "employer": "Who is the employer of {x}?",
}
PERSON_RELATIONS = frozenset({"performer", "spouse", "author", "child", "creator", "cast member", "father", "mother",
                              "sibling", "composer", "producer", "director", "screenwriter", "winner"})
_TRAILING_PREPOSITION = re.compile(r"\b(of|by|with|to|after|in|at|on|for|from)$")


def make_record(job: str, messages: list[dict], answer: str, *, key: str, source: str, **extra) -> dict:
    """One training record (ragkit.train.finetune's format) with its job, source and held-out split."""
    return {"job": job, "messages": messages, "answer": answer, "split": splits.split_of(key), "source": source,
            **extra}


# --- decomposer -------------------------------------------------------------------------------------------


def wikidata_question(step: str) -> str:
    """'Erik Hort >> place of birth' -> 'Where was Erik Hort born?'; a natural-language step stays as it is.

    Taught in lessons/09_specialists.ipynb.
    """
    if ">>" not in step:
        return step.strip()
    subject, _, relation = (part.strip() for part in step.rpartition(">>"))
    if relation in RELATION_QUESTIONS:
        return RELATION_QUESTIONS[relation].format(x=subject)
    if relation in PERSON_RELATIONS:
        return f"Who is the {relation} of {subject}?"
    if _TRAILING_PREPOSITION.search(relation):
        return f"What is {subject} {relation}?"
    return f"What is the {relation} of {subject}?"


def decomposer_records(musique: Sequence[dict], strategyqa: Sequence[dict], *,
                       exclude: Sequence[str] = ()) -> tuple[list[dict], dict]:
    """Decomposition records (at most 4 steps; longer ones dropped and counted) and their counts.

    Taught in lessons/09_specialists.ipynb.
    """
    records, counts, seen, excluded = [], Counter(), set(), set(exclude)
    items = [(f"musique:{m['id']}", m["question"], [wikidata_question(step["question"])
                                                      for step in m["question_decomposition"]]) for m in musique]
    items += [(f"strategyqa:{s['qid']}", s["question"], list(s["decomposition"]))
              for s in strategyqa if s["qid"] not in excluded]
    for source, question, steps in items:
        corpus = source.split(":")[0]
        if question.casefold() in seen or not steps:
            counts[f"{corpus} duplicate or empty"] += 1
            continue
        seen.add(question.casefold())
        if len(steps) > MAX_STEPS:
            counts[f"{corpus} dropped (over {MAX_STEPS} steps)"] += 1
            continue
        records.append(make_record("decomposer", decomposer_messages(question), numbered(steps), key=question,
                                   source=source, steps=len(steps)))
        counts[corpus] += 1
    steps = dict(sorted(Counter(r["steps"] for r in records).items()))
    return records, {**counts, **split_counts(records), "steps": steps}


# --- answerer ---------------------------------------------------------------------------------------------


def facts_index(facts: Sequence[dict]) -> BM25Index:
    """BM25 (lesson 01's best tokenizer) over the StrategyQA facts corpus; each doc's source is its question id."""
    return BM25Index([Doc(f["_id"], f["text"], source=f["qid"]) for f in facts], tokenizer=search_tokenize)


def answerer_records(strategyqa: Sequence[dict], index: BM25Index, *, exclude: Sequence[str] = (), k: int = 5,
                     seed: int = 0) -> tuple[list[dict], dict]:
    """Per question two records, gold facts and BM25 top-k facts -> 'yes'/'no'; the larger label is cut to balance.

    Taught in lessons/09_specialists.ipynb.
    """
    excluded = set(exclude)
    questions = [s for s in strategyqa if s["qid"] not in excluded and s["facts"]]
    questions = balance(questions, key=lambda s: bool(s["answer"]), seed=seed)
    records = []
    for item in questions:
        answer = "yes" if item["answer"] else "no"
        retrieved = [hit.doc.text for hit in index.search(item["question"], k=k)]
        for variant, facts in (("gold", item["facts"]), ("bm25", retrieved)):
            records.append(make_record("answerer", answerer_messages(item["question"], facts), answer,
                                       key=item["question"], source=f"strategyqa:{item['qid']}", facts=variant))
    return records, {"questions": len(questions), **split_counts(records), **label_counts(records)}


def balance(items: list, *, key, seed: int = 0) -> list:
    """The items with every label cut (at random, seeded) to the count of the rarest, in their first order."""
    groups: dict = {}
    for number, item in enumerate(items):
        groups.setdefault(key(item), []).append(number)
    smallest = min(map(len, groups.values()), default=0)
    rng = random.Random(seed)
    kept = sorted(n for numbers in groups.values() for n in rng.sample(numbers, smallest))
    return [items[n] for n in kept]


# --- judge ------------------------------------------------------------------------------------------------


def judge_records(strategyqa: Sequence[dict], index: BM25Index, claims: Sequence[dict], sentences: dict[str, dict], *,
                  exclude: Sequence[str] = (), distractors: int = 2, seed: int = 0) -> tuple[list[dict], dict]:
    """Step-judgement records from StrategyQA facts (supports / unrelated) and SciFact rationales (all three).

    Taught in lessons/09_specialists.ipynb.
    """
    rng = random.Random(seed)
    records = strategyqa_judgements(strategyqa, index, exclude=exclude, distractors=distractors, rng=rng)
    records += scifact_judgements(claims, sentences, rng=rng)
    return records, {**split_counts(records), **label_counts(records),
                     "by source": dict(Counter(f"{r['source'].split(':')[0]} {r['answer']}" for r in records))}


def strategyqa_judgements(strategyqa: Sequence[dict], index: BM25Index, *, exclude: Sequence[str], distractors: int,
                          rng: random.Random) -> list[dict]:
    """Per question one fact as the step: with it among look-alike facts of other questions (supports), and with
    the look-alikes alone (unrelated)."""
    excluded, records = set(exclude), []
    for item in strategyqa:
        if item["qid"] in excluded or not item["facts"]:
            continue
        fact = rng.choice(item["facts"])
        others = [hit.doc.text for hit in index.search(fact, k=distractors + 10)
                  if hit.doc.source != item["qid"] and not restates(hit.doc.text, fact)]
        others = list(dict.fromkeys(others))
        if len(others) <= distractors:
            continue
        with_fact = others[:distractors] + [fact]
        rng.shuffle(with_fact)
        source = f"strategyqa:{item['qid']}"
        records.append(make_record("judge", judge_messages(fact, with_fact), "supports", key=fact, source=source))
        records.append(make_record("judge", judge_messages(fact, others[: distractors + 1]), "unrelated", key=fact,
                                   source=source))
    return records


def scifact_judgements(claims: Sequence[dict], sentences: dict[str, dict], *, rng: random.Random) -> list[dict]:
    """Per SciFact rationale: the claim with its sentences (supports / contradicts), and with another claim's
    rationale (unrelated)."""
    rationales = [(claim, rationale_text(sentences, evidence), SCIFACT_LABELS[evidence["label"]])
                  for claim in claims for evidence in claim["evidence"]]
    records = []
    for claim, text, label in rationales:
        source = f"scifact:{claim['id']}"
        records.append(make_record("judge", judge_messages(claim["claim"], [text]), label, key=claim["claim"],
                                   source=source))
        other = rng.choice([r for r in rationales if r[0]["id"] != claim["id"]])
        records.append(make_record("judge", judge_messages(claim["claim"], [other[1]]), "unrelated",
                                   key=claim["claim"], source=source))
    return records


def rationale_text(sentences: dict[str, dict], evidence: dict) -> str:
    """'Title: sentence sentence' of a SciFact rationale."""
    doc = sentences.get(str(evidence["doc_id"]))
    if doc is None:
        raise CorpusError(f"SciFact rationale names an unknown document {evidence['doc_id']!r}")
    return f"{doc['title']}: " + " ".join(doc["sentences"][i] for i in evidence["sentences"])


# --- counts and files -------------------------------------------------------------------------------------


def split_counts(records: Sequence[dict]) -> dict:
    """{'train': n, 'heldout': n}."""
    counts = Counter(r["split"] for r in records)
    return {"train": counts["train"], "heldout": counts["heldout"]}


def heldout_sample(records: Sequence[dict], limit: int) -> list[dict]:
    """Up to limit held-out records, the corpora (the part of 'source' before ':') taken in turn, each in order."""
    by_corpus: dict[str, list[dict]] = {}
    for record in records:
        if record["split"] == "heldout":
            by_corpus.setdefault(record["source"].split(":")[0], []).append(record)
    taken = [r for rank in itertools.zip_longest(*by_corpus.values()) for r in rank if r is not None]
    return taken[:limit]


def label_counts(records: Sequence[dict]) -> dict:
    """{'labels': {answer: n}} in a fixed order."""
    return {"labels": dict(sorted(Counter(r["answer"] for r in records).items()))}


def source_files(job: str, *, root: str | Path | None = None) -> dict[str, Path]:
    """The evaluation-data files a job's records are built from, by name (each file, or its gzip-compressed
    copy <file>.gz as data/benchmarks/ keeps the large ones)."""
    if job in OWN_MODULES:
        return OWN_MODULES[job].source_files(root=root)
    return evaldata_files({name: SOURCES[name] for name in JOB_SOURCES[job]}, root=root,
                          what=f"the {job} records are")


def build_records(job: str, *, root: str | Path | None = None, seed: int = 0) -> tuple[list[dict], dict]:
    """A job's records from the evaluation data under root (default ragkit.config.evaldata_dir()), with counts.

    Taught in lessons/09_specialists.ipynb.
    """
    if job in OWN_MODULES:
        return OWN_MODULES[job].build_records(root=root, seed=seed)
    files = source_files(job, root=root)
    read = {name: read_jsonl(path) if SOURCES[name].endswith(".jsonl") else read_json(path)
            for name, path in files.items()}
    exclude = read["dev200"]
    if job == "decomposer":
        return decomposer_records(read["musique"], read["strategyqa"], exclude=exclude)
    index = facts_index(read["facts"])
    if job == "answerer":
        return answerer_records(read["strategyqa"], index, exclude=exclude, seed=seed)
    sentences = {str(doc["_id"]): doc for doc in read["scifact_sentences"]}
    claims = train_claims(read["scifact_claims"], read["scifact_test_claims"])
    return judge_records(read["strategyqa"], index, claims, sentences, exclude=exclude, seed=seed)


def train_claims(train: Sequence[dict], test: Sequence[dict]) -> list[dict]:
    """The SciFact train claims whose text is no test claim's (two train claims repeat a test claim word for word)."""
    test_texts = {claim["claim"].casefold() for claim in test}
    return [claim for claim in train if claim["claim"].casefold() not in test_texts]
