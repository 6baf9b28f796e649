"""The relevance judge's training records, from training splits only (data/benchmarks/): a query and one passage ->
"yes" (it helps answer the query) or "no", every positive beside as many hard negatives of the same query, and
each query once more with another query's relevant passage (an easy negative, "negative": "random"):

- SciFact train claims (qrels/train.tsv): each cited abstract (yes), and as many of BM25's best uncited abstracts
  (no); the train claims whose text is also a test claim's are left out;
- HotpotQA train (hotpotqa/train100_hipporag.json, reader/hotpotqa_train_sample.jsonl if present): both
  supporting paragraphs (yes), and the two of the question's distractors BM25 ranks highest (no); HotpotQA chose
  those distractors as look-alikes already;
- SQuAD v1.1 train (reader/squad_train_sample.jsonl, a sample of its questions): the window of sentences that holds
  the answer (yes), and BM25's best window of another paragraph of the same article that does not (no): same title,
  same topic, so only the content tells them apart;
- StrategyQA train (dev200 left out): one of the question's facts (yes), and BM25's best fact of another question
  that does not restate it (no). These negatives are the easiest of the four, so it gives the fewest questions.

Negatives come from BM25 alone, not dense search: BM25 ranks the same on every CPU, so the records, and with
them a build's key and provenance, are byte-identical everywhere. A fixed tenth of the queries is held out.
A record is {"messages", "answer" (ragkit.train.finetune's format), "query", "passage": [title, text], "split",
"source"}. Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Sequence

from ragkit.corpus import Doc, evaldata_files, read_evaldata
from ragkit.models.rerankers import relevance_messages
from ragkit.passages import PASSAGE_CHARS
from ragkit.search.lexical import BM25Index
from ragkit.text import restates, search_tokenize
from ragkit.train import splits
from ragkit.train.records.sources import cut, is_true, listed_field, paragraphs_of, windows

SOURCES = {"scifact_queries": "scifact/queries.jsonl", "scifact_corpus": "scifact/corpus.jsonl",
           "scifact_train": "scifact/qrels/train.tsv", "scifact_test": "scifact/qrels/test.tsv",
           "hotpotqa": "hotpotqa/train100_hipporag.json", "hotpotqa_sample": "reader/hotpotqa_train_sample.jsonl",
           "squad": "reader/squad_train_sample.jsonl", "strategyqa": "strategyqa/strategyqa_train.json",
           "dev200": "strategyqa/dev200_qids.json",
           "facts": "strategyqa/facts_corpus.jsonl"}
OPTIONAL = ("hotpotqa_sample",)
STRATEGYQA_LIMIT = 300  # questions: their negatives are easy; enough to learn short facts, not to crowd out the rest
SQUAD_LIMIT = 700  # questions: as many as HotpotQA gives, so no source outweighs the others


def record(query: str, title: str, text: str, relevant: bool, source: str) -> dict:
    """One training record: the query and passage in the relevance prompt, answer 'yes' or 'no'."""
    query = " ".join(query.split())
    return {"messages": relevance_messages(query, title, text), "answer": "yes" if relevant else "no",
            "query": query, "passage": [title, cut(text, PASSAGE_CHARS)],
            "split": splits.split_of(query), "source": source}


def ranked_apart(index: BM25Index, query: str, keep_out: set[str], n: int) -> list[Doc]:
    """BM25's best n documents for the query whose ids are not in keep_out (fewer if fewer share a word with it);
    a query with fewer negatives than relevant passages is left out, so that yes and no stay equal in number."""
    hits = index.search(query, k=n + len(keep_out))
    return [hit.doc for hit in hits if hit.doc.id not in keep_out][:n]


# --- SciFact ----------------------------------------------------------------------------------------------


def scifact_records(queries: Sequence[dict], corpus: Sequence[dict], train: dict[str, dict[str, int]],
                    test: dict[str, dict[str, int]]) -> list[dict]:
    """Each train claim with its cited abstracts (yes) and as many of BM25's best uncited ones (no)."""
    claims = {str(q["_id"]): q["text"] for q in queries}
    test_texts = {claims[qid] for qid in test if qid in claims}
    docs = [Doc(str(d["_id"]), d["text"], title=d.get("title", "")) for d in corpus]
    by_id, index = {doc.id: doc for doc in docs}, BM25Index(docs, tokenizer=search_tokenize)
    records = []
    for qid, grades in train.items():
        cited = [doc_id for doc_id, grade in grades.items() if grade > 0]
        claim, relevant = claims.get(qid), [by_id[d] for d in cited if d in by_id]
        negatives = ranked_apart(index, claim, set(cited), len(relevant)) if claim else []
        if claim in test_texts or not relevant or len(negatives) < len(relevant):
            continue
        records += [record(claim, doc.title, doc.text, True, f"scifact:{qid}") for doc in relevant]
        records += [record(claim, doc.title, doc.text, False, f"scifact:{qid}") for doc in negatives]
    return records


# --- HotpotQA ---------------------------------------------------------------------------------------------


def hotpotqa_records(items: Sequence[dict]) -> list[dict]:
    """Both supporting paragraphs (yes) and the two distractors BM25 ranks highest for the question (no)."""
    records = []
    for item in items:
        paragraphs, gold_titles = paragraphs_of(item)
        others = [Doc(title, text, title=title) for title, text in paragraphs.items() if title not in gold_titles]
        if not others or not all(title in paragraphs for title in gold_titles):
            continue
        question, source = item["question"], f"hotpotqa:{item.get('_id') or item.get('id')}"
        negatives = ranked_apart(BM25Index(others, tokenizer=search_tokenize), question, set(), len(gold_titles))
        if len(negatives) < len(gold_titles):
            continue
        records += [record(question, title, paragraphs[title], True, source) for title in gold_titles]
        records += [record(question, doc.title, doc.text, False, source) for doc in negatives]
    return records


# --- SQuAD ------------------------------------------------------------------------------------------------


def squad_records(items: Sequence[dict], *, limit: int = SQUAD_LIMIT, seed: int = 0) -> list[dict]:
    """Up to limit sampled train questions: the window holding the answer (yes), and BM25's best window of another
    paragraph of the same article without the answer (no)."""
    chosen = random.Random(seed).sample(list(items), min(len(items), limit))
    by_title: dict[str, list[dict]] = {}
    for item in items:
        by_title.setdefault(item["title"], []).append(item)
    records = []
    for item in sorted(chosen, key=lambda item: item["id"]):
        title, answer = item["title"].replace("_", " "), item["answers"][0]["text"]
        gold = next((window for _, window in windows(item["context"]) if answer in window), None)
        others = [Doc(f"{other['id']}#{start}", window, title=title) for other in by_title[item["title"]]
                  if other["context"] != item["context"] for start, window in windows(other["context"])
                  if answer not in window]
        index = BM25Index(others, tokenizer=search_tokenize) if others else None
        negative = ranked_apart(index, item["question"], set(), 1) if index else []
        if gold is None or not negative:
            continue
        source = f"squad:{item['id']}"
        records += [record(item["question"], title, gold, True, source),
                    record(item["question"], title, negative[0].text, False, source)]
    return records


# --- StrategyQA -------------------------------------------------------------------------------------------


def strategyqa_records(items: Sequence[dict], facts: Sequence[dict], *, exclude: Sequence[str],
                       limit: int = STRATEGYQA_LIMIT, seed: int = 0) -> list[dict]:
    """Up to limit train questions (dev200 out; yes and no questions alike): one own fact (yes), and BM25's best
    fact of another train question that does not restate it (no)."""
    excluded, rng = set(exclude), random.Random(seed)
    usable = [s for s in items if s["qid"] not in excluded and listed_field(s["facts"])]
    by_answer = [[s for s in usable if is_true(s["answer"]) == answer] for answer in (True, False)]
    chosen = sorted((s for group in by_answer for s in rng.sample(group, min(len(group), limit // 2))),
                    key=usable.index)
    index = BM25Index([Doc(f["_id"], f["text"], source=f["qid"]) for f in facts if f["qid"] not in excluded],
                      tokenizer=search_tokenize)
    records = []
    for item in chosen:
        fact, source = rng.choice(listed_field(item["facts"])), f"strategyqa:{item['qid']}"
        other = next((hit.doc.text for hit in index.search(item["question"], k=20)
                      if hit.doc.source != item["qid"] and not restates(hit.doc.text, fact)), None)
        if other is None:
            continue
        records += [record(item["question"], "", fact, True, source),
                    record(item["question"], "", other, False, source)]
    return records


# --- easy negatives ---------------------------------------------------------------------------------------


def random_negatives(records: Sequence[dict], *, seed: int = 0) -> list[dict]:
    """Per query, one relevant passage of another query of the same set (no), marked "negative": "random": the
    topic itself differs, which the hard negatives alone never show."""
    rng, firsts, positives, titles = random.Random(seed), {}, {}, {}
    for r in records:
        firsts.setdefault(r["source"], r)
        titles.setdefault(r["source"], set()).add(r["passage"][0])
        if r["answer"] == "yes":
            positives.setdefault(r["source"].split(":")[0], []).append(r)
    added = []
    for source, first in firsts.items():
        others = [p for p in positives.get(source.split(":")[0], []) if p["source"] != source
                  and (not p["passage"][0] or p["passage"][0] not in titles[source])]  # not a SQuAD article's own
        if others:
            title, text = rng.choice(others)["passage"]
            added.append({**record(first["query"], title, text, False, source), "negative": "random"})
    return added


# --- files and counts -------------------------------------------------------------------------------------


def source_files(*, root: str | Path | None = None) -> dict[str, Path]:
    """The data files the records are built from, by name (each file or its .gz copy); optional ones if present."""
    return evaldata_files(SOURCES, root=root, what="the relevance judge's records are", optional=OPTIONAL)


def build_records(*, root: str | Path | None = None, seed: int = 0) -> tuple[list[dict], dict]:
    """Every source's records, and their counts by source, answer and split."""
    files = source_files(root=root)
    read = {name: read_evaldata(path) for name, path in files.items()}
    hard = (scifact_records(read["scifact_queries"], read["scifact_corpus"], read["scifact_train"],
                            read["scifact_test"])
            + hotpotqa_records([*read["hotpotqa"], *read.get("hotpotqa_sample", [])])
            + squad_records(read["squad"], seed=seed)
            + strategyqa_records(read["strategyqa"], read["facts"], exclude=read["dev200"], seed=seed))
    records = hard + random_negatives(hard, seed=seed)
    counts = Counter((r["source"].split(":")[0], r["answer"], r.get("negative", ""), r["split"]) for r in records)
    return records, {" ".join(part for part in key if part): n for key, n in sorted(counts.items())}
