"""The rewriter's training data by rejection sampling: nobody labelled "a better query", so the retriever labels it.

For training questions whose relevant documents are known (SciFact train claims, StrategyQA train questions with
their facts, HotpotQA train questions with their supporting paragraphs; never dev200, never a benchmark's test
questions, never the course's handbook), the chat model writes several rewrites in each of the two forms the course
uses (lesson 03), a keyword query for BM25 and a JSON list of search questions fused with the original,
and a rule adds the query's content words alone. Each candidate is searched with BM25 and with dense search; it
is kept only if it ranks the relevant documents higher than the original query did (mean reciprocal rank over the
two retrievers), and the best kept one per question and form becomes the training answer. Queries typed without
diacritics are a third kind: text that has them (not the handbook) with them stripped, answered by the text itself.
Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import random
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ragkit.config import evaldata_dir
from ragkit.corpus import Doc, Search, check_query, evaldata_files, read_evaldata, read_jsonl
from ragkit.errors import EmptyQueryError
from ragkit.evaluate.metrics import mean, reciprocal_rank
from ragkit.models import resolve
from ragkit.models.jobs import RESTORED, REWRITE_FORMS, checked_form, rewriter_messages
from ragkit.models.llm import ChatModel, seeded
from ragkit.models.replies import clean_item
from ragkit.search.dense import DenseIndex
from ragkit.search.fusion import fuse_queries
from ragkit.search.lexical import BM25Index
from ragkit.search.rewrite import MAX_QUERIES, MULTI_QUERY_PROMPT, parse_questions, questions_schema
from ragkit.text import fold_diacritics, search_tokenize
from ragkit.train import splits
from ragkit.train.records import relevance as relevance_records
from ragkit.train.records.sources import cut, paragraphs_of

DEPTH = 10  # a candidate is scored by the reciprocal rank of the first relevant document in its top 10 (MRR@10)
KEYWORD_PROMPT = [
    {"role": "system", "content": "Turn the query into a short keyword search query in the same language. "
                                  "Reply with the keywords only."},
    {"role": "user", "content": "can I expense a taxi to the airport"},
    {"role": "assistant", "content": "taxi airport expense reimbursement"},
]


@dataclass(frozen=True)
class Task:
    """A training query, the ids of the documents it should find, and the corpus they are in."""

    id: str
    query: str
    relevant: tuple[str, ...]
    corpus: str


def rule_keywords(query: str) -> str:
    """The rule-made keyword query: the query's words that BM25 keeps (stop words and punctuation dropped)."""
    words = [word.strip(".,;:!?\"'()") for word in query.split()]
    return " ".join(word for word in words if word and search_tokenize(word))


def sample_keywords(chat: ChatModel, query: str, *, n: int, temperature: float = 0.8) -> list[str]:
    """n keyword queries sampled from the chat model (its seed moved for each), empty replies dropped."""
    prompt = KEYWORD_PROMPT + [{"role": "user", "content": check_query(query)}]
    return [text for text in (clean_item(reply.text) for reply in _samples(chat, prompt, n, temperature, 32)) if text]


def sample_questions(chat: ChatModel, query: str, *, n: int, temperature: float = 0.8) -> list[list[str]]:
    """n lists of search questions sampled from the chat model in lesson 03's multi-query JSON prompt; unreadable
    ones dropped."""
    system = MULTI_QUERY_PROMPT[0]["content"].format(n=MAX_QUERIES)
    prompt = [{"role": "system", "content": system}, *MULTI_QUERY_PROMPT[1:],
              {"role": "user", "content": check_query(query)}]
    replies = _samples(chat, prompt, n, temperature, 150, json_schema=questions_schema())
    return [questions for questions in (parse_questions(reply.text)[0] for reply in replies) if questions]


def _samples(chat: ChatModel, prompt: list[dict], n: int, temperature: float, max_tokens: int, **options) -> list:
    first = getattr(chat, "seed", 0) or 0
    replies = []
    for offset in range(n):
        with seeded(chat, first + offset):
            replies.append(chat.chat(prompt, max_tokens=max_tokens, temperature=temperature, **options))
    return replies


def fused_ranking(queries: Sequence[str], search: Search, *, depth: int = DEPTH) -> list[str]:
    """The ids of the top depth documents: one query's search, or several queries' searches fused by RRF (as
    multi_query's are searched); a query with no searchable word (only stop words, as 'How is it?') finds nothing."""
    try:
        return [hit.id for hit in fuse_queries(search, queries, k=depth, depth=depth)]
    except EmptyQueryError:
        return []


def searched_queries(form: str, original: str, candidate: str | Sequence[str]) -> list[str]:
    """What a candidate searches with: a keyword query alone; a question list with the original, as multi_query."""
    return [candidate] if checked_form(form) == "keywords" else [original, *candidate]


def reciprocal_ranks(queries: Sequence[str], relevant: Sequence[str], searches: dict[str, Search]) -> dict[str, float]:
    """The reciprocal rank of the first relevant document in the queries' (fused) top DEPTH, under each search."""
    return {name: reciprocal_rank(fused_ranking(queries, search), relevant) for name, search in searches.items()}


def judged(task: Task, form: str, candidates: Sequence, searches: dict[str, Search]) -> dict:
    """The original's reciprocal ranks and each candidate's, with its gain over the original (mean over searches)."""
    original = reciprocal_ranks([task.query], task.relevant, searches)
    rows = []
    for candidate, origin in candidates:
        ranks = reciprocal_ranks(searched_queries(form, task.query, candidate), task.relevant, searches)
        rows.append({"rewrite": candidate, "origin": origin, "rr": ranks,
                     "gain": mean(ranks[name] - original[name] for name in searches)})
    return {"id": task.id, "query": task.query, "form": form, "original_rr": original, "candidates": rows}


def kept(judgement: dict) -> dict | None:
    """The candidate with the largest gain if it beats the original (gain > 0; the shortest among equals), marked
    "beat"; for a keyword query that none beats, the shortest candidate with fewer words than the query that loses
    nothing under any search where the original found a relevant document, marked "tied"; else None."""
    winners = [row for row in judgement["candidates"] if row["gain"] > 0]
    if winners:
        return {**max(winners, key=lambda row: (row["gain"], -_length(row))), "why": "beat"}
    original = judgement["original_rr"]
    if judgement["form"] != "keywords" or not any(original.values()):
        return None
    words = len(judgement["query"].split())
    ties = [row for row in judgement["candidates"] if len(str(row["rewrite"]).split()) < words
            and all(row["rr"][name] >= original[name] for name in original)]
    return {**min(ties, key=_length), "why": "tied"} if ties else None


def _length(row: dict) -> int:
    return len(json.dumps(row["rewrite"], ensure_ascii=False))


def stripped(text: str) -> str:
    """The text as typed without diacritics (lowercased, as such queries are), for the restoration records."""
    return fold_diacritics(text).lower()


# --- training queries with known relevant documents ---------------------------------------------------------


def scifact_tasks(queries: Sequence[dict], train: dict[str, dict[str, int]],
                  test: dict[str, dict[str, int]]) -> list[Task]:
    """SciFact train claims and their cited abstracts (corpus 'scifact'); a claim whose text is a test claim's out."""
    claims = {str(q["_id"]): " ".join(q["text"].split()) for q in queries}
    test_texts = {claims[qid] for qid in test if qid in claims}
    return [Task(f"scifact:{qid}", claims[qid], tuple(d for d, grade in grades.items() if grade > 0), "scifact")
            for qid, grades in train.items()
            if qid in claims and claims[qid] not in test_texts and any(g > 0 for g in grades.values())]


def strategyqa_tasks(items: Sequence[dict], facts: Sequence[dict], *, exclude: Sequence[str]) -> list[Task]:
    """StrategyQA train questions (dev200 out) and their own facts in the facts corpus (corpus 'strategyqa')."""
    excluded, own = set(exclude), {}
    for fact in facts:
        own.setdefault(fact["qid"], []).append(fact["_id"])
    return [Task(f"strategyqa:{s['qid']}", " ".join(s["question"].split()), tuple(own[s["qid"]]), "strategyqa")
            for s in items if s["qid"] not in excluded and own.get(s["qid"])]


def hotpotqa_tasks(items: Sequence[dict]) -> list[Task]:
    """HotpotQA train questions and their supporting paragraphs (by title) in the pool of every item's paragraphs
    (corpus 'hotpotqa')."""
    tasks = []
    for item in items:
        paragraphs, gold = paragraphs_of(item)
        if gold and all(title in paragraphs for title in gold):
            tasks.append(Task(f"hotpotqa:{item.get('_id') or item.get('id')}", " ".join(item["question"].split()),
                              tuple(gold), "hotpotqa"))
    return tasks


def hotpotqa_pool(items: Sequence[dict]) -> list[Doc]:
    """Every paragraph of the items once, by title: the corpus the HotpotQA tasks are searched in."""
    pool: dict[str, Doc] = {}
    for item in items:
        for title, text in paragraphs_of(item)[0].items():
            pool.setdefault(title, Doc(title, text, title=title))
    return list(pool.values())


# --- records ------------------------------------------------------------------------------------------------


def rewrite_answer(form: str, rewrite: str | Sequence[str]) -> str:
    """The training answer: the keyword query, or the questions as lesson 03's multi-query JSON."""
    return rewrite if form == "keywords" else json.dumps({"questions": list(rewrite)}, ensure_ascii=False)


def rewrite_records(judgements: Sequence[dict]) -> tuple[list[dict], dict]:
    """One record per judged query and form with a kept candidate (see kept), and what was kept and why."""
    records, counts = [], Counter()
    for judgement in judgements:
        best, form = kept(judgement), judgement["form"]
        counts[f"{form} judged"] += 1
        if best is None:
            continue
        counts[f"{form} {best['why']} ({best['origin']})"] += 1
        records.append({"messages": rewriter_messages(form, judgement["query"]),
                        "answer": rewrite_answer(form, best["rewrite"]), "form": form, "source": judgement["id"],
                        "gain": best["gain"], "split": splits.split_of(judgement["query"])})
    return records, dict(sorted(counts.items()))


def restoration_records(texts: Sequence[str], *, source: str) -> list[dict]:
    """A text typed without its diacritics -> the text (keyword form): restoring them is part of the rewrite."""
    return [{"messages": rewriter_messages("keywords", stripped(text)), "answer": text, "form": "keywords",
             "source": f"{source}:{number}", "gain": None, "split": splits.split_of(text)}
            for number, text in enumerate(" ".join(t.split()) for t in texts) if stripped(text) != text.lower()]


# --- sampling and judging -------------------------------------------------------------------------------------


def candidates(chat: ChatModel, query: str, form: str, *, samples: int) -> list[tuple]:
    """The sampled rewrites of one form (and, for keywords, the rule-made one), each once, none equal to the query."""
    if form == "keywords":
        found = [(text, "sampled") for text in sample_keywords(chat, query, n=samples)]
        found.append((rule_keywords(query), "rule"))
    else:
        found = [(questions, "sampled") for questions in sample_questions(chat, query, n=samples)]
    seen, unique = {json.dumps(query, ensure_ascii=False).casefold()}, []
    for rewrite, origin in found:
        key = json.dumps(rewrite, ensure_ascii=False).casefold()
        if rewrite and key not in seen:
            seen.add(key)
            unique.append((rewrite, origin))
    return unique


def judge_tasks(pending: Sequence[tuple[Task, str]], chat: ChatModel, searches_for: Callable[[str], dict[str, Search]],
                *, samples: dict[str, int]) -> Iterator[dict]:
    """Each (task, form)'s candidates (samples[form] sampled), judged by the searches of the task's corpus."""
    for task, form in pending:
        found = candidates(chat, task.query, form, samples=samples[form])
        yield judged(task, form, found, searches_for(task.corpus))


def corpus_searches(docs: Sequence[Doc]) -> dict[str, Search]:
    """BM25 (lesson 01's best tokenizer) and dense search (the course embedder) over the docs."""
    return {"bm25": BM25Index(docs, tokenizer=search_tokenize).search, "dense": DenseIndex(docs).search}


# --- the sampling run (python -m ragkit.train.records.rewriter) ---------------------------------------------------

SOURCES = {name: path for name, path in relevance_records.SOURCES.items() if name != "squad"}  # the same sets


def training_tasks(read: dict, *, per_source: int, seed: int = 0) -> tuple[list[Task], dict[str, list[Doc]]]:
    """A seeded sample of per_source queries from each training set, and each set's corpus (SciFact's abstracts
    cut as a reader's passages are, so that encoding them takes minutes, not an hour; dev200's facts left out)."""
    hotpot_items = [*read["hotpotqa"], *read.get("hotpotqa_sample", [])]
    excluded = set(read["dev200"])
    by_source = {"scifact": scifact_tasks(read["scifact_queries"], read["scifact_train"], read["scifact_test"]),
                 "strategyqa": strategyqa_tasks(read["strategyqa"], read["facts"], exclude=excluded),
                 "hotpotqa": hotpotqa_tasks(hotpot_items)}
    rng = random.Random(seed)
    chosen = [rng.sample(found, min(per_source, len(found))) for found in by_source.values()]
    # the sources in turn, so that a run stopped early has judged all three alike
    tasks = [task for turn in itertools.zip_longest(*chosen) for task in turn if task is not None]
    corpora = {"scifact": [Doc(str(d["_id"]), cut(d["text"]), title=d.get("title", ""))
                           for d in read["scifact_corpus"]],
               "strategyqa": [Doc(f["_id"], f["text"]) for f in read["facts"] if f["qid"] not in excluded],
               "hotpotqa": hotpotqa_pool(hotpot_items)}
    return tasks, corpora


def write_judgements(path: Path, tasks: Sequence[Task], chat: ChatModel, corpora: dict[str, list[Doc]], *,
                     samples: dict[str, int],
                     searches_of: Callable[[list[Doc]], dict[str, Search]] = corpus_searches) -> int:
    """Judge each task in each form not yet in path (a run stopped halfway goes on where it stopped), appending
    each judgement to the gzip file as it comes; a corpus is indexed when its first task comes. Returns how many
    were added; the file is then rewritten compact."""
    rows = judged_rows(path)
    done = {(row["id"], row["form"]) for row in rows}
    pending = [(task, form) for task in tasks for form in REWRITE_FORMS if (task.id, form) not in done]
    indexed: dict[str, dict[str, Search]] = {}

    def searches_for(corpus: str) -> dict[str, Search]:
        if corpus not in indexed:
            indexed[corpus] = searches_of(corpora[corpus])
        return indexed[corpus]

    for judgement in judge_tasks(pending, chat, searches_for, samples=samples):
        with gzip.open(path, "at", encoding="utf-8") as out:  # a whole gzip member each: a kill loses one line
            out.write(json.dumps(judgement, ensure_ascii=False) + "\n")
        rows.append(judgement)
    write_rows(path, rows)
    return len(rows) - len(done)


def judged_rows(path: Path) -> list[dict]:
    """The judgements in path up to the first damaged one (a run killed while writing), which is cut off; [] if
    there is no file."""
    rows: list[dict] = []
    if not path.is_file():
        return rows
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            rows.extend(json.loads(line) for line in lines)
    except (EOFError, OSError, zlib.error, json.JSONDecodeError):
        write_rows(path, rows)
    return rows


def write_rows(path: Path, rows: Sequence[dict]) -> None:
    """The rows as one gzip member (no name or time stamp: the same rows give the same bytes)."""
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9,
                                                mtime=0) as out:
        out.write(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=evaldata_dir() / "rewriter" / "judgements.jsonl.gz")
    parser.add_argument("--per-source", type=int, default=200, help="queries sampled from each training set")
    parser.add_argument("--keyword-samples", type=int, default=4, help="keyword queries sampled per query")
    parser.add_argument("--question-samples", type=int, default=2,
                        help="JSON question lists sampled per query (each takes seconds: ~150 tokens)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    files = evaldata_files(SOURCES, root=None, what="the rewriter's judgements are", optional=("hotpotqa_sample",))
    read = {name: read_evaldata(path) for name, path in files.items() if path.is_file()}
    tasks, corpora = training_tasks(read, per_source=args.per_source, seed=args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    samples = {"keywords": args.keyword_samples, "questions": args.question_samples}
    added = write_judgements(args.out, tasks, resolve.chat_model(), corpora, samples=samples)
    print(f"{added} judgements added to {args.out} ({len(tasks)} queries, {len(REWRITE_FORMS)} forms)")
    return 0


# --- the records a build trains on ----------------------------------------------------------------------------

RECORD_SOURCES = {"judgements": "rewriter/judgements.jsonl", "vietnamese": "rewriter/xquad_vi_questions.jsonl"}


def source_files(*, root: str | Path | None = None) -> dict[str, Path]:
    """The data files the records are built from, by name (each file or its .gz copy)."""
    return evaldata_files(RECORD_SOURCES, root=root, what="the rewriter's records are")


def build_records(*, root: str | Path | None = None, seed: int = 0) -> tuple[list[dict], dict]:
    """The kept rewrites of a sampling run's judgements, and as many diacritics restorations (a seeded sample, in
    file order) so that neither job crowds out the other, with their counts."""
    files = source_files(root=root)
    records, counts = rewrite_records(read_jsonl(files["judgements"]))
    restorations = restoration_records([q["question"] for q in read_jsonl(files["vietnamese"])], source=RESTORED)
    chosen = sorted(random.Random(seed).sample(range(len(restorations)), min(len(records), len(restorations))))
    counts[f"keywords restored ({RESTORED})"] = len(chosen)
    return records + [restorations[n] for n in chosen], counts


if __name__ == "__main__":
    raise SystemExit(main())
