"""The reader specialist's training records, RAFT-style, from training splits only (data/benchmarks/):

- SQuAD v1.1 train (reader/squad_train_sample.jsonl): the window of sentences around the answer among windows of
  other paragraphs of the same article (same topic, so they look relevant), 2-4 passages in shuffled order;
- HotpotQA train (hotpotqa/train100_hipporag.json, and reader/hotpotqa_train_sample.jsonl if present): the two
  supporting paragraphs among two of the question's distractors; comparison questions answered "yes"/"no";
- StrategyQA train (dev200 left out): a question and its facts -> "yes"/"no", so the reader learns those options.

A tenth of the records of each source, chosen by a hash of the question, have no passage holding the answer:
their answer is "none" (NOT_IN_PASSAGES). A fixed tenth of the questions is held out. A record is
{"messages", "answer" (ragkit.train.finetune's format), "question", "passages": [[title, text], ...], "answers": [...],
"kind": span|yes|no|none, "split", "source"}.
Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from pathlib import Path
from typing import Sequence

from ragkit.corpus import evaldata_files, read_json, read_jsonl
from ragkit.models.jobs import reader_messages
from ragkit.passages import NOT_IN_PASSAGES
from ragkit.train import splits
from ragkit.train.records.sources import cut, is_true, listed_field, paragraphs_of, windows

NO_GOLD_PERCENT = 10
SOURCES = {"squad": "reader/squad_train_sample.jsonl", "hotpotqa": "hotpotqa/train100_hipporag.json",
           "hotpotqa_sample": "reader/hotpotqa_train_sample.jsonl", "strategyqa": "strategyqa/strategyqa_train.json",
           "dev200": "strategyqa/dev200_qids.json"}
OPTIONAL = ("hotpotqa_sample",)
# each HotpotQA train question three times, with other distractors: the few multi-hop questions count more
HOTPOTQA_DRAWS = 3
STRATEGYQA_LIMIT = 600  # yes/no questions enough to learn the two options, not so many they crowd out spans


def no_gold(question: str) -> bool:
    """Whether this question's record is the one without its answer's passage (~10%, by a salted hash)."""
    return splits.split_of("no gold: " + question, percent=NO_GOLD_PERCENT) == "heldout"


def record(question: str, passages: list, answers: list[str], kind: str, source: str) -> dict:
    """One reader record in the reader's prompt (ragkit.models.jobs), with its held-out split. The answer starts with a
    space, so that its tokens are the passage's own (' Paris' inside a sentence)."""
    expected = {"none": NOT_IN_PASSAGES, "yes": "yes", "no": "no"}.get(kind) or answers[0]
    return {"job": "reader", "messages": reader_messages(question, passages), "answer": " " + expected,
            "question": question, "passages": passages, "answers": answers, "kind": kind,
            "split": splits.split_of(question), "source": source}


def holds(passages: Sequence[Sequence[str]], answer: str) -> bool:
    """Whether any passage (title or text) holds the answer verbatim."""
    return any(answer in f"{title}: {text}" for title, text in passages)


# --- SQuAD ------------------------------------------------------------------------------------------------


def squad_records(items: Sequence[dict], *, seed: int = 0) -> list[dict]:
    """The answer's window among 1-3 windows of the same article's other paragraphs (none: without it)."""
    rng = random.Random(seed)
    by_title = defaultdict(list)
    for item in items:
        by_title[item["title"]].append(item)
    records = []
    for item in items:
        title = item["title"].replace("_", " ")
        answer = item["answers"][0]["text"]
        gold = next((w for s, w in windows(item["context"]) if answer in w), None)
        others = [w for other in by_title[item["title"]] if other is not item for _, w in windows(other["context"])]
        if gold is None or not others:
            continue
        distractors = [[title, w] for w in rng.sample(others, min(len(others), rng.randint(1, 3)))]
        records.append(mixed(item["question"], [title, gold], distractors, answer, rng=rng, source="squad"))
    return [r for r in records if r]


def mixed(question: str, gold: list, distractors: list, answer: str, *, rng: random.Random, source: str) -> dict | None:
    """Gold among distractors, shuffled; for a no-gold question the distractors alone (None if they hold it)."""
    distractors = [[t, cut(x)] for t, x in distractors]
    if no_gold(question):
        return None if holds(distractors, answer) else record(question, distractors, [], "none", source)
    passages = distractors + [[gold[0], cut(gold[1])]]
    rng.shuffle(passages)
    return record(question, passages, [answer], "span", source) if holds(passages, answer) else None


# --- HotpotQA ---------------------------------------------------------------------------------------------


def hotpotqa_records(items: Sequence[dict], *, seed: int = 0) -> list[dict]:
    """Both supporting paragraphs among two distractors (none: three distractors); yes/no kept as options."""
    rng = random.Random(seed)
    records = []
    for item in items:
        paragraphs, gold_titles = paragraphs_of(item)
        gold = [[t, paragraphs[t]] for t in gold_titles if t in paragraphs]
        distractors = [[t, x] for t, x in paragraphs.items() if t not in gold_titles]
        answer, question = item["answer"].strip(), item["question"].strip()
        if len(gold) != len(gold_titles) or not answer:
            continue
        made = hotpotqa_record(question, gold, distractors, answer, rng=rng)
        if made:
            records.append(made)
    return records


def hotpotqa_record(question: str, gold: list, distractors: list, answer: str, *, rng: random.Random) -> dict | None:
    """One HotpotQA record: yes/no, a span found in the passages, or none; None if the answer is nowhere."""
    if no_gold(question):
        chosen = rng.sample(distractors, min(3, len(distractors)))
        return None if answer in ("yes", "no") or holds(chosen, answer) else record(question, chosen, [], "none",
                                                                                       "hotpotqa")
    passages = gold + rng.sample(distractors, min(2, len(distractors)))
    rng.shuffle(passages)
    if answer in ("yes", "no"):
        return record(question, passages, [answer], answer, "hotpotqa")
    return record(question, passages, [answer], "span", "hotpotqa") if holds(passages, answer) else None


# --- StrategyQA -------------------------------------------------------------------------------------------


def strategyqa_records(items: Sequence[dict], *, exclude: Sequence[str], limit: int = STRATEGYQA_LIMIT,
                       seed: int = 0) -> list[dict]:
    """Up to limit train questions (dev200 left out), yes and no in equal numbers, each with its gold facts."""
    excluded = set(exclude)
    usable = [s for s in items if s["qid"] not in excluded and listed_field(s["facts"])]
    by_answer = {answer: [s for s in usable if is_true(s["answer"]) == answer] for answer in (True, False)}
    rng = random.Random(seed)
    chosen = [s for group in by_answer.values() for s in rng.sample(group, min(len(group), limit // 2))]
    return [record(s["question"], [[s.get("term", ""), cut(fact)] for fact in listed_field(s["facts"])],
                   ["yes" if is_true(s["answer"]) else "no"], "yes" if is_true(s["answer"]) else "no", "strategyqa")
            for s in chosen]


# --- files and counts -------------------------------------------------------------------------------------


def source_files(*, root: str | Path | None = None) -> dict[str, Path]:
    """The data files the records are built from, by name (each file or its .gz copy); optional ones if present."""
    return evaldata_files(SOURCES, root=root, what="the reader's records are", optional=OPTIONAL)


def build_records(*, root: str | Path | None = None, seed: int = 0) -> tuple[list[dict], dict]:
    """Every source's records, and their counts by source, kind and split."""
    files = source_files(root=root)
    read = {name: read_jsonl(p) if SOURCES[name].endswith(".jsonl") else read_json(p) for name, p in files.items()}
    hotpotqa = list(read["hotpotqa"]) + list(read.get("hotpotqa_sample", []))
    multi_hop = [r for draw in range(HOTPOTQA_DRAWS) for r in hotpotqa_records(hotpotqa, seed=seed + draw)
                 if draw == 0 or r["split"] == "train"]
    records = (squad_records(read["squad"], seed=seed) + multi_hop
               + strategyqa_records(read["strategyqa"], exclude=read["dev200"], seed=seed))
    counts = Counter((r["source"], r["kind"], r["split"]) for r in records)
    return records, {" ".join(key): n for key, n in sorted(counts.items())}
