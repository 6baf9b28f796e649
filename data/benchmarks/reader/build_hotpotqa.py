"""Build the reader specialist's HotpotQA *train* sample (standard library only, plus the git program).

Source: GitHub salesforce/BOLAA (Apache-2.0 code; the data are HotpotQA, CC BY-SA 4.0), commit
ea7a238a6ecd358130e9e5c4f57395da4498d028, folder hotpotqa_run/data/: three joblib files (pickled pandas
DataFrames) of 100 HotpotQA distractor-setting questions each, one file per HotpotQA difficulty level:
easy.joblib, medium.joblib, hard.joblib. Every row has the original fields id, question, answer, type, level,
supporting_facts ([title, sentence index] pairs) and context (the 10 [title, sentences] paragraphs, gold + distractors).
The same three files (same blobs) are in zjunlp/AutoAct (Self_Plan/*/benchmark_run/data/hotpotqa/).

Only easy.joblib and medium.joblib are used. HotpotQA's dev set has only "hard" questions, so easy and medium
questions can only come from the train split; medium.joblib also holds 5a7a06935542990198eaf050 and
5a879ab05542996e4f30887e, the first two questions of hotpot_train_v1.1.json. hard.joblib is read only to show why
it is left out: it is the Reflexion dev sample (same blob as noahshinn/reflexion's
hotpot-qa-distractor-sample.joblib), and 12 of its ids are among the course's dev500 questions.

The joblib files are read WITHOUT pandas, numpy or joblib: a restricted unpickler (pickle._Unpickler) maps every
class or function named in the stream to an inert stand-in that only records its arguments and state, so no code
from the file is run; joblib's inline object arrays (a nested pickle after each NumpyArrayWrapper) are read the
way joblib reads them. The DataFrame is then rebuilt from its single object block and its column index.

Sample: every easy and medium question (200) is kept unless its id or normalized question equals one of the
course's held-out questions (HotpotQA dev500, data/questions.jsonl, data/multihop_questions.jsonl); they are written
in the order of sha256("reader-hotpotqa-train-v1|" + id), at most N_MAX of them. The cap is there for a larger
source; this one has 200.

Usage (from the repository root), with the git dir of any clone that has the commit
(e.g. `git clone https://github.com/salesforce/BOLAA`; pass `<clone>/.git`, or a bare repository):

    python data/benchmarks/reader/build_hotpotqa.py --git-dir <git dir of salesforce/BOLAA>

Writes data/benchmarks/reader/hotpotqa_train_sample.jsonl.gz (gzip level 9, no name, mtime 0: reproducible bytes)
and prints counts and the checks.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import pickle
import re
import string
import struct
import subprocess
import unicodedata
from collections import Counter
from pathlib import Path

COMMIT = "ea7a238a6ecd358130e9e5c4f57395da4498d028"
DATA_DIR = "hotpotqa_run/data/"
TRAIN_LEVELS = ("easy", "medium")  # the levels only the train split has
DEV_LEVEL_FILE = "hard"  # read for the check only
N_MAX = 3000
SALT = "reader-hotpotqa-train-v1|"
FIRST_TRAIN_IDS = ("5a7a06935542990198eaf050", "5a879ab05542996e4f30887e")  # hotpot_train_v1.1.json [0], [1]
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
ID_RE = re.compile(r"[0-9a-f]{24}")


# --- a restricted reader for joblib-pickled pandas DataFrames ---------------------------------------------------

class Stub:
    """Inert stand-in for any class or function named in the pickle: records arguments and state only."""

    def __init__(self, name: str, args: tuple = (), kwargs: dict | None = None) -> None:
        self.name, self.args, self.kwargs, self.state = name, args, kwargs or {}, None

    def __setstate__(self, state) -> None:
        self.state = state


def _stub_class(module: str, name: str) -> type:
    full = f"{module}.{name}"

    class Factory:
        def __new__(cls, *args, **kwargs):
            return Stub(full, args, kwargs)

    Factory.__qualname__ = Factory.__name__ = name
    return Factory


class Array:
    """A numpy array as read from the stream: shape and the flat items in C order."""

    def __init__(self, shape: tuple, items: list) -> None:
        self.shape, self.items = tuple(shape), items


def _dtype(stub: Stub) -> tuple[str, int]:
    m = re.fullmatch(r"([a-zA-Z])(\d+)", stub.args[0])
    if not m:
        raise ValueError(f"unsupported dtype {stub.args[0]!r}")
    return m.group(1), int(m.group(2))


class JoblibReader(pickle._Unpickler):  # the pure-Python unpickler, whose BUILD can be replaced
    def __init__(self, fh: io.BytesIO) -> None:
        super().__init__(fh)
        self.fh = fh

    def find_class(self, module, name):
        return _stub_class(module, name)

    def load_build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
        if not isinstance(inst, Stub):
            raise ValueError(f"unexpected BUILD target {type(inst).__name__}")
        inst.state = state
        if inst.name == "joblib.numpy_pickle.NumpyArrayWrapper":
            self.stack[-1] = self._read_array(state)

    dispatch = dict(pickle._Unpickler.dispatch)
    dispatch[pickle.BUILD[0]] = load_build

    def _read_array(self, st: dict) -> Array:
        kind, size = _dtype(st["dtype"])
        if kind == "O":  # object array: a nested pickle stream follows
            arr = JoblibReader(self.fh).load()
            _version, shape, _dtype_stub, fortran, items = arr.state
            if fortran:
                raise ValueError("Fortran-ordered object array")
            return Array(shape, list(items))
        if st.get("order", "C") != "C":
            raise ValueError("Fortran-ordered array")
        if st.get("numpy_array_alignment_bytes") is not None:
            self.fh.read(self.fh.read(1)[0])
        count = 1
        for s in st["shape"]:
            count *= s
        fmt = {("i", 8): "q", ("i", 4): "i", ("u", 8): "Q", ("f", 8): "d", ("b", 1): "?"}[(kind, size)]
        return Array(st["shape"], list(struct.unpack(f"<{count}{fmt}", self.fh.read(count * size))))


def read_dataframe(data: bytes) -> list[dict]:
    """Rows (dicts) of a joblib-pickled DataFrame made of one object block."""
    df = JoblibReader(io.BytesIO(data)).load()
    assert isinstance(df, Stub) and df.name == "pandas.core.frame.DataFrame", getattr(df, "name", df)
    mgr = df.state["_mgr"]
    blocks, axes = mgr.args
    columns = axes[0].args[1]["data"].items
    assert len(blocks) == 1, len(blocks)
    values, placement = blocks[0].args[0], blocks[0].args[1]
    assert placement.args == (0, len(columns), 1), placement.args
    n_cols, n_rows = values.shape
    assert n_cols == len(columns), (values.shape, columns)
    return [{c: values.items[i * n_rows + j] for i, c in enumerate(columns)} for j in range(n_rows)]


# --- conversion and checks ----------------------------------------------------------------------------------------

def git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True).stdout


def norm(q: str) -> str:
    """Lowercase, strip accents, punctuation and extra spaces: the key of the overlap checks (as build.py)."""
    q = unicodedata.normalize("NFKD", q.lower())
    q = "".join(c for c in q if not unicodedata.combining(c))
    q = "".join(" " if c in string.punctuation else c for c in q)
    return " ".join(q.split())


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def held_out() -> tuple[set[str], set[str], dict[str, int]]:
    """Normalized questions and ids that must not appear in any training file."""
    dev500 = read_jsonl(ROOT / "data/benchmarks/hotpotqa/dev500_distractor.jsonl.gz")
    texts = {norm(r["question"]) for r in dev500}
    ids = {r["id"] for r in dev500}
    sizes = {"hotpotqa dev500": len(dev500)}
    for name in ("questions.jsonl", "multihop_questions.jsonl"):
        rows = read_jsonl(ROOT / "data" / name)
        texts |= {norm(r["query"]) for r in rows}
        texts |= {norm(s) for r in rows for s in r.get("decomposition", [])}
        ids |= {r["id"] for r in rows}
        sizes[name] = len(rows)
    return texts, ids, sizes


def convert(row: dict) -> dict:
    """One source row -> the record written: gold paragraphs with their supporting sentences, then distractors."""
    titles = [t for t, _ in row["context"]]
    assert len(set(titles)) == len(titles), row["id"]
    sup: dict[str, list[int]] = {}
    for title, sent_id in row["supporting_facts"]:
        sup.setdefault(title, []).append(int(sent_id))
    assert set(sup) <= set(titles), (row["id"], set(sup) - set(titles))
    supporting, distractors = [], []
    for pos, (title, sentences) in enumerate(row["context"]):
        para = {"title": title, "text": "".join(sentences).strip(), "position": pos}
        if title in sup:
            ids = sorted(set(sup[title]))
            assert all(0 <= i < len(sentences) for i in ids), (row["id"], title, ids)
            para["sentences"] = [s.strip() for s in sentences]
            para["supporting_sentences"] = ids
            supporting.append(para)
        else:
            distractors.append(para)
    return {"id": row["id"], "question": row["question"].strip(), "answer": row["answer"].strip(),
            "type": row["type"], "level": row["level"], "supporting": supporting, "distractors": distractors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--git-dir", type=Path, required=True, help="git dir of the fetched salesforce/BOLAA")
    ap.add_argument("--out", type=Path, default=HERE / "hotpotqa_train_sample.jsonl.gz")
    args = ap.parse_args()

    texts, held_ids, sizes = held_out()

    # why hard.joblib is left out: it is HotpotQA dev
    hard = read_dataframe(git(args.git_dir, "show", f"{COMMIT}:{DATA_DIR}{DEV_LEVEL_FILE}.joblib"))
    hard_in_dev500 = sum(r["id"] in held_ids for r in hard)
    assert {r["level"] for r in hard} == {"hard"} and hard_in_dev500 > 0, hard_in_dev500

    rows = []
    for level in TRAIN_LEVELS:
        part = read_dataframe(git(args.git_dir, "show", f"{COMMIT}:{DATA_DIR}{level}.joblib"))
        assert {r["level"] for r in part} == {level}, (level, Counter(r["level"] for r in part))
        rows += part
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids) and all(ID_RE.fullmatch(i) for i in ids)
    assert set(FIRST_TRAIN_IDS) <= set(ids)

    pool = sorted(rows, key=lambda r: hashlib.sha256((SALT + r["id"]).encode("utf-8")).hexdigest())
    chosen, skipped = [], []
    for row in pool:
        if row["id"] in held_ids or norm(row["question"]) in texts:
            skipped.append(row["id"])
            continue
        chosen.append(convert(row))
        if len(chosen) == N_MAX:
            break

    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        for rec in chosen:
            gz.write((json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8"))
    args.out.write_bytes(buf.getvalue())

    print(f"{DEV_LEVEL_FILE}.joblib: {len(hard)} questions, all level hard, {hard_in_dev500} of them in the "
          f"course's dev500 -> HotpotQA dev, not used")
    print(f"easy+medium: {len(rows)} questions, {len(set(ids))} distinct 24-hex ids, levels "
          f"{dict(Counter(r['level'] for r in rows))}; first two train ids present: {FIRST_TRAIN_IDS}")
    print(f"held-out question sets: {sizes}; skipped as overlapping: {len(skipped)} {skipped}")
    n_para = Counter(len(r["supporting"]) + len(r["distractors"]) for r in chosen)
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes, sha256 "
          f"{hashlib.sha256(args.out.read_bytes()).hexdigest()}): {len(chosen)} questions; "
          f"types {dict(Counter(r['type'] for r in chosen))}; levels {dict(Counter(r['level'] for r in chosen))}; "
          f"paragraphs per question {dict(n_para)}; gold paragraphs per question "
          f"{dict(Counter(len(r['supporting']) for r in chosen))}")


if __name__ == "__main__":
    main()
