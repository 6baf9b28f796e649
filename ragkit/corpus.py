"""Documents, hits and gold questions, and loading them from the course's JSONL files."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragkit.config import data_dir, evaldata_dir
from ragkit.errors import CorpusError, EmptyQueryError

DATA_DIR = data_dir()  # read once: lessons and default arguments import it
MAX_DOC_CHARS = 1_000_000  # larger texts must be chunked before indexing


@dataclass(frozen=True)
class Doc:
    """A document or chunk: the unit a retriever returns. Taught in lessons/01_bag_of_words.ipynb."""

    id: str
    text: str
    title: str = ""
    source: str = ""
    lang: str = ""
    topic: str = ""
    parent_id: str | None = None


@dataclass(frozen=True)
class Hit:
    """A retrieved doc with its score; lists of hits are ordered best first."""

    doc: Doc
    score: float

    @property
    def id(self) -> str:
        """The retrieved doc's id."""
        return self.doc.id


Search = Callable[..., list[Hit]]  # called as search(query, k=...), like BM25Index.search


@dataclass(frozen=True)
class Question:
    """A gold question with the ids of the docs that answer it."""

    id: str
    query: str
    relevant: tuple[str, ...]
    answer: str = ""
    lang: str = ""
    style: str = ""
    extra: dict = field(default_factory=dict, compare=False)


def stored_file(path: str | Path) -> Path:
    """The file at path, or its gzip-compressed copy path.gz where only that is there (data/benchmarks/ keeps
    its large files so); path itself if neither is, so that a message names the file that was asked for."""
    path = Path(path)
    packed = path.with_name(path.name + ".gz")
    return packed if not path.exists() and packed.is_file() else path


def evaldata_files(sources: dict[str, str], *, root: str | Path | None, what: str,
                   optional: Sequence[str] = ()) -> dict[str, Path]:
    """The evaluation-data files named by sources (name -> path under root, default ragkit.config.evaldata_dir()),
    each as stored_file finds it; optional ones only if present. A missing one is a CorpusError naming it and
    RAGKIT_EVALDATA; what says what the files are for."""
    root = Path(root) if root else evaldata_dir()
    files = {name: stored_file(root / path) for name, path in sources.items()}
    missing = [sources[n] for n, p in files.items() if not p.is_file() and n not in optional]
    if missing:
        raise CorpusError(f"{what} built from evaluation data that is not under {root}: {', '.join(missing)}; set "
                          "RAGKIT_EVALDATA to the folder that holds them (default: data/benchmarks in the course "
                          "folder; README, Settings)")
    return {name: path for name, path in files.items() if path.is_file()}


def read_evaldata(path: str | Path):
    """An evaluation-data file by its kind: BEIR qrels (.tsv), JSON lines (.jsonl) or JSON (any of them .gz)."""
    name = Path(path).name.removesuffix(".gz")
    if name.endswith(".tsv"):
        return read_qrels(path)
    return read_jsonl(path) if name.endswith(".jsonl") else read_json(path)


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """A BEIR qrels TSV (header line, then query-id, corpus-id, score) as {query id: {doc id: grade}}."""
    lines = read_text(path).splitlines()
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        try:
            qid, doc_id, score = fields
            qrels.setdefault(qid, {})[doc_id] = int(score)
        except ValueError:
            raise CorpusError(f"{path}:{number}: expected query-id<TAB>corpus-id<TAB>integer score") from None
    if not qrels:
        raise CorpusError(f"{path} holds no judgements")
    return qrels


def read_bytes(path: str | Path) -> bytes:
    """A file's bytes, decompressed if it is gzip-compressed (named .gz, or found as path.gz by stored_file)."""
    path = stored_file(path)
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def read_text(path: str | Path) -> str:
    """A UTF-8 text file (or its path.gz), with an error that names it."""
    try:
        return read_bytes(path).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise CorpusError(f"cannot read {path}: {err}") from err


def read_json(path: str | Path):
    """A JSON file's value (the file or its path.gz), with an error that names it."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise CorpusError(f"cannot read {path}: {err}") from err


def read_jsonl(path: str | Path) -> list[dict]:
    """Parse a JSONL file (or its path.gz) into dicts, naming the file and line of any problem."""
    path = Path(path)
    lines = read_text(path).splitlines()
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise CorpusError(f"{path}:{number}: not valid JSON ({err.msg})") from err
        if not isinstance(record, dict):
            raise CorpusError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
        records.append(record)
    if not records:
        raise CorpusError(f"{path} holds no records")
    return records


def load_docs(path: str | Path = DATA_DIR / "handbook.jsonl") -> list[Doc]:
    """Load documents from JSONL (fields as in data/README.md). Taught in lessons/01_bag_of_words.ipynb."""
    known = set(Doc.__dataclass_fields__)
    docs = []
    for number, record in enumerate(read_jsonl(path), start=1):
        missing = {"id", "text"} - record.keys()
        if missing:
            raise CorpusError(f"{path}: record {number} lacks {', '.join(sorted(missing))}")
        docs.append(Doc(**{key: value for key, value in record.items() if key in known}))
    try:
        return check_docs(docs)
    except CorpusError as err:
        raise CorpusError(f"{path}: {err}") from None


def check_docs(docs: list[Doc]) -> list[Doc]:
    """Refuse an empty corpus, duplicate ids, empty or oversized texts; return docs unchanged."""
    if not docs:
        raise CorpusError("the corpus is empty: give at least one document")
    seen: set[str] = set()
    for doc in docs:
        if doc.id in seen:
            raise CorpusError(f"duplicate document id {doc.id!r}")
        if not isinstance(doc.text, str) or not doc.text.strip():
            raise CorpusError(f"document {doc.id!r} has no text")
        if len(doc.text) > MAX_DOC_CHARS:
            raise CorpusError(
                f"document {doc.id!r} has {len(doc.text):,} characters; split it first "
                "with ragkit.text.chunk()"
            )
        seen.add(doc.id)
    return docs


def load_questions(path: str | Path = DATA_DIR / "questions.jsonl", *,
                   corpus: Sequence[Doc] | None = None) -> list[Question]:
    """Load gold questions from JSONL (fields as in data/README.md); with a corpus, every relevant id must be in it."""
    questions = []
    for number, record in enumerate(read_jsonl(path), start=1):
        if not {"id", "query", "relevant"} <= record.keys():
            raise CorpusError(f"{path}: record {number} needs id, query and relevant")
        if not isinstance(record["relevant"], list):
            raise CorpusError(f"{path}: record {number}: relevant must be a list of doc ids")
        core = {"id", "query", "relevant", "answer", "lang", "style"}
        questions.append(
            Question(
                id=record["id"],
                query=record["query"],
                relevant=tuple(record["relevant"]),
                answer=record.get("answer", ""),
                lang=record.get("lang", ""),
                style=record.get("style", ""),
                extra={k: v for k, v in record.items() if k not in core},
            )
        )
    try:
        return check_questions(questions, corpus)
    except CorpusError as err:
        raise CorpusError(f"{path}: {err}") from None


def check_questions(questions: list[Question], corpus: Sequence[Doc] | None = None) -> list[Question]:
    """Refuse repeated question ids and, given a corpus, relevant ids it lacks; return questions unchanged."""
    repeated = sorted(str(qid) for qid, times in Counter(q.id for q in questions).items() if times > 1)
    if repeated:
        raise CorpusError(f"question ids used more than once: {_first_few(repeated)}; give each question its own id")
    if corpus is not None:
        known = {doc.id for doc in corpus}
        unknown = [f"{q.id} -> {', '.join(map(str, ids))}" for q in questions
                   if (ids := [rid for rid in q.relevant if rid not in known])]
        if unknown:
            raise CorpusError(f"relevant ids not in the corpus ({_first_few(unknown, '; ')}): such a question "
                              "always scores 0; fix the ids or load the corpus the questions were written for")
    return questions


def _first_few(items: list[str], separator: str = ", ", shown: int = 5) -> str:
    """The first few items joined, and how many more there are."""
    more = f"{separator}and {len(items) - shown} more" if len(items) > shown else ""
    return separator.join(items[:shown]) + more


def passage_text(doc: Doc) -> str:
    """What gets embedded for a doc: its title, then its text."""
    return f"{doc.title}\n{doc.text}" if doc.title else doc.text


def check_query(query: str) -> str:
    """Refuse an empty query with an error that says so."""
    if not isinstance(query, str) or not query.strip():
        raise EmptyQueryError("the query is empty: give some words to search for")
    return query
