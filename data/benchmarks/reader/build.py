"""Build the reader specialist's SQuAD v1.1 *train* sample (standard library only).

Source: the SQuAD authors' own explorer site, GitHub rajpurkar/SQuAD-explorer, commit
13f82e35b9a1fb9173f863b35f5675030646571e (branch gh-pages, 2016-08-24), folder explore/1.1/train/: one HTML page
per SQuAD v1.1 training article (442 pages + index.html), each listing the article's paragraphs and, for every
paragraph, its questions and answer texts. The pages were removed from gh-pages four days later (c4f8d26), so the
commit must be named; the JSON files in dataset/ are 30 MB and are not part of the fetched snapshot.

The pages carry no question ids and no answer character offsets. This script therefore
- names each question by position: "squad1.1-train/<article title>/<paragraph index>/<question index>"
  (0-based, page order, which is the order of train-v1.1.json);
- sets answer_start to the FIRST exact occurrence of the answer text in the paragraph, and records how many
  exact occurrences there are ("occurrences"); where there is more than one, the annotator's span may have been a
  later one. Answers that do not occur verbatim are dropped (their question is not sampled).

Sample: every question of the 442 pages is parsed (checked: 87,599 questions, 18,896 paragraphs, the published
SQuAD v1.1 train counts), ordered by sha256("reader-squad-train-v1|" + id), and taken in that order, at most one
question per paragraph (more paragraphs, more topics), until N_SQUAD examples are chosen. Questions whose
normalized text equals a question of the course's HotpotQA dev500 or gold question files, or of the SQuAD v1.1
dev pages (explore/1.1/dev at the same commit), are skipped (none were, when this was built).

Usage (from the repository root), with the git dir of any clone that has the commit (it is on branch gh-pages,
e.g. `git clone https://github.com/rajpurkar/SQuAD-explorer`; pass `<clone>/.git`, or a bare repository):

    python data/benchmarks/reader/build.py --git-dir <git dir of rajpurkar/SQuAD-explorer>

Writes data/benchmarks/reader/squad_train_sample.jsonl.gz (gzip level 9, no name, mtime 0: reproducible bytes)
and prints counts and the overlap checks. Needs the `git` program to read the pinned commit.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import string
import subprocess
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

COMMIT = "13f82e35b9a1fb9173f863b35f5675030646571e"
TRAIN_DIR = "explore/1.1/train/"
DEV_DIR = "explore/1.1/dev/"
N_SQUAD = 6000
SALT = "reader-squad-train-v1|"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
EXPECTED = {"articles": 442, "paragraphs": 18896, "questions": 87599}


class ArticlePage(HTMLParser):
    """Collects title, paragraphs (pre) and their questions/answers from one explorer page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.paragraphs: list[dict] = []
        self._mode: str | None = None  # "title", "context", "question", "answer"
        self._buf: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "h1" and a.get("id") == "title":
            self._start("title")
        elif tag == "pre":
            self.paragraphs.append({"context": None, "qas": []})
            self._start("context")
        elif tag == "strong" and "question" in cls:
            self.paragraphs[-1]["qas"].append({"question": None, "answers": []})
            self._start("question")
        elif tag == "span" and "answer" in cls:
            self._start("answer")

    def _start(self, mode):
        self._mode, self._buf = mode, []

    def handle_data(self, data):
        if self._mode:
            self._buf.append(data)

    def handle_endtag(self, tag):
        if self._mode is None:
            return
        ends = {"title": "h1", "context": "pre", "question": "strong", "answer": "span"}
        if tag != ends[self._mode]:
            return
        text = "".join(self._buf)
        if self._mode == "title":
            self.title = text
        elif self._mode == "context":
            self.paragraphs[-1]["context"] = text
        elif self._mode == "question":
            self.paragraphs[-1]["qas"][-1]["question"] = text
        else:
            self.paragraphs[-1]["qas"][-1]["answers"].append(text)
        self._mode = None


def git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True).stdout


def pages(git_dir: Path, folder: str) -> list[tuple[str, str]]:
    names = git(git_dir, "ls-tree", "-r", "-z", "--name-only", COMMIT, folder).decode("utf-8").split("\0")
    names = sorted(n for n in names if n.endswith(".html") and not n.endswith("/index.html"))
    return [(n, git(git_dir, "show", f"{COMMIT}:{n}").decode("utf-8")) for n in names]


def parse(html: str) -> ArticlePage:
    p = ArticlePage()
    p.feed(html)
    p.close()
    return p


def norm(q: str) -> str:
    """Lowercase, strip accents, punctuation and extra spaces: the key of the overlap checks."""
    q = unicodedata.normalize("NFKD", q.lower())
    q = "".join(c for c in q if not unicodedata.combining(c))
    q = "".join(" " if c in string.punctuation else c for c in q)
    return " ".join(q.split())


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def held_out(git_dir: Path) -> tuple[set[str], set[str], dict[str, int]]:
    """Normalized questions and ids that must not appear in any training file."""
    texts: set[str] = set()
    ids: set[str] = set()
    sizes = {}
    dev500 = read_jsonl(ROOT / "data/benchmarks/hotpotqa/dev500_distractor.jsonl.gz")
    texts |= {norm(r["question"]) for r in dev500}
    ids |= {r["id"] for r in dev500}
    sizes["hotpotqa dev500"] = len(dev500)
    for name in ("questions.jsonl", "multihop_questions.jsonl"):
        rows = read_jsonl(ROOT / "data" / name)
        texts |= {norm(r["query"]) for r in rows}
        texts |= {norm(s) for r in rows for s in r.get("decomposition", [])}
        ids |= {r["id"] for r in rows}
        sizes[name] = len(rows)
    n_dev = 0
    for _, html in pages(git_dir, DEV_DIR):
        for para in parse(html).paragraphs:
            for qa in para["qas"]:
                texts.add(norm(qa["question"]))
                n_dev += 1
    sizes["squad1.1 dev pages"] = n_dev
    return texts, ids, sizes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--git-dir", type=Path, required=True, help="git dir of the fetched rajpurkar/SQuAD-explorer")
    ap.add_argument("--out", type=Path, default=HERE / "squad_train_sample.jsonl.gz")
    args = ap.parse_args()

    counts = {"articles": 0, "paragraphs": 0, "questions": 0}
    pool = []  # (hash, record, paragraph key)
    not_verbatim = multi = 0
    train_titles = set()
    for _, html in pages(args.git_dir, TRAIN_DIR):
        page = parse(html)
        counts["articles"] += 1
        train_titles.add(page.title)
        for pi, para in enumerate(page.paragraphs):
            counts["paragraphs"] += 1
            ctx = para["context"]
            for qi, qa in enumerate(para["qas"]):
                counts["questions"] += 1
                qid = f"squad1.1-train/{page.title}/{pi}/{qi}"
                answers = []
                for text in qa["answers"]:
                    start = ctx.find(text)
                    if start < 0:
                        continue
                    answers.append({"text": text, "answer_start": start, "occurrences": ctx.count(text)})
                if not answers:
                    not_verbatim += 1
                    continue
                multi += answers[0]["occurrences"] > 1
                rec = {"id": qid, "question": qa["question"].strip(), "title": page.title, "context": ctx,
                       "answers": answers}
                h = hashlib.sha256((SALT + qid).encode("utf-8")).hexdigest()
                pool.append((h, rec, (page.title, pi)))
    assert counts == EXPECTED, counts

    texts, ids, sizes = held_out(args.git_dir)
    dev_titles = {parse(html).title for _, html in pages(args.git_dir, DEV_DIR)}
    assert not (train_titles & dev_titles), train_titles & dev_titles

    pool.sort(key=lambda t: t[0])
    chosen, used_paras, skipped = [], set(), 0
    for _, rec, pkey in pool:
        if pkey in used_paras:
            continue
        if norm(rec["question"]) in texts or rec["id"] in ids:
            skipped += 1
            continue
        chosen.append(rec)
        used_paras.add(pkey)
        if len(chosen) == N_SQUAD:
            break

    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        for rec in chosen:
            gz.write((json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8"))
    args.out.write_bytes(buf.getvalue())

    print(f"parsed {counts}; answers not verbatim in context: {not_verbatim}; "
          f"first answer occurring more than once: {multi}")
    print(f"dev pages: {len(dev_titles)} articles, no title shared with train")
    print(f"held-out question sets: {sizes}; skipped as overlapping: {skipped}")
    multi_chosen = sum(r["answers"][0]["occurrences"] > 1 for r in chosen)
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes): {len(chosen)} questions from "
          f"{len({r['title'] for r in chosen})} articles, {len(used_paras)} paragraphs; "
          f"{multi_chosen} with an ambiguous answer_start")


if __name__ == "__main__":
    main()
