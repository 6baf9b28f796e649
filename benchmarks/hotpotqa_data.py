"""HotpotQA as the benchmarks read it: dev500 and train100 from data/benchmarks/hotpotqa (or $RAGKIT_EVALDATA),
the type of each question, and how a question's evidence is scored against its gold paragraphs.

This is a data module, not a script. hotpotqa.py, hotpotqa_fusion.py and self_ask_tuning.py import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ragkit import CorpusError, Doc, Question, read_json, read_jsonl
from ragkit.evaluate import supporting_evidence_recall

DATASET = "hotpotqa"  # the folder under $RAGKIT_EVALDATA (default data/benchmarks)
QUESTIONS_FILE = "dev500_distractor.jsonl"
CORPUS_FILE = "dev500_pooled_corpus.jsonl"
TRAIN_QUESTIONS, TRAIN_CORPUS = "train100_hipporag.json", "train100_pooled_corpus.jsonl"
DEV_FILES = (QUESTIONS_FILE, CORPUS_FILE)
TRAIN_FILES = (TRAIN_QUESTIONS, TRAIN_CORPUS)
BRIDGE_ROWS = 250  # dev500 is sorted by type: rows 0-249 bridge, 250-499 comparison (README)
TYPES = ("bridge", "comparison")


# --- dev500 --------------------------------------------------------------------------------------


def question_type(row: Mapping, index: int) -> str:
    """The row's "type", else its position: dev500 is sorted, rows 0-249 bridge and 250-499 comparison."""
    return str(row.get("type") or ("bridge" if index < BRIDGE_ROWS else "comparison"))


def hotpot_question(row: Mapping, index: int, path: Path) -> Question:
    """One dev500 row as a Question: gold paragraphs in relevant, aliases and type in extra."""
    missing = {"id", "question", "answer", "supporting_pids"} - row.keys()
    if missing:
        raise CorpusError(f"{path}: row {index + 1} lacks {', '.join(sorted(missing))}")
    if not row["supporting_pids"]:
        raise CorpusError(f"{path}: row {index + 1} ({row['id']}) has no supporting_pids")
    return Question(str(row["id"]), row["question"], tuple(str(p) for p in row["supporting_pids"]),
                    answer=str(row["answer"]),
                    extra={"aliases": list(row.get("answer_aliases") or ()), "type": question_type(row, index)})


def load_hotpotqa(folder: Path) -> tuple[list[Question], list[Doc]]:
    """The dev500 questions and the pooled paragraphs; every gold paragraph must be in the pool."""
    docs = []
    for number, record in enumerate(read_jsonl(folder / CORPUS_FILE), start=1):
        if "_id" not in record or not (record.get("text") or record.get("title")):
            raise CorpusError(f"{folder / CORPUS_FILE}: record {number} needs _id and a text or title")
        title = record.get("title") or ""
        docs.append(Doc(str(record["_id"]), record.get("text") or title, title=title, source="hotpotqa"))
    path = folder / QUESTIONS_FILE
    questions = [hotpot_question(row, index, path) for index, row in enumerate(read_jsonl(path))]
    known = {doc.id for doc in docs}
    absent = sorted({pid for q in questions for pid in q.relevant} - known)
    if absent:
        raise CorpusError(f"{path}: supporting paragraphs missing from {CORPUS_FILE}: {absent[:5]}")
    return questions, docs


# --- train100 ------------------------------------------------------------------------------------


def load_train100(folder: Path) -> tuple[list[Question], list[Doc]]:
    """HotpotQA train100: its questions (gold = the titles of their supporting facts) and the pooled corpus."""
    records = read_jsonl(folder / TRAIN_CORPUS)
    docs = [Doc(r["title"], "".join(r["sentences"]).strip(), title=r["title"], source="hotpotqa-train")
            for r in records]
    rows = read_json(folder / TRAIN_QUESTIONS)
    questions = [Question(row["_id"], row["question"], tuple(dict.fromkeys(t for t, _ in row["supporting_facts"])),
                          answer=row["answer"], extra={"type": row["type"]}) for row in rows]
    return questions, docs


# --- questions and their evidence ------------------------------------------------------------------


def type_of(question: Question) -> str:
    """A HotpotQA question's type (bridge or comparison)."""
    return question.extra.get("type", "")


def evidence_value(ids: Sequence[str], question: Question) -> dict[str, float]:
    """One question's all gold (1 if every gold paragraph is among the ids, else 0) and share of gold found."""
    recall = supporting_evidence_recall(ids, question.relevant)
    return {"all gold": float(recall == 1.0), "gold recall": recall}
