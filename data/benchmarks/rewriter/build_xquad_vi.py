"""Build the rewriter's Vietnamese questions with diacritics (standard library only).

Source: GitHub google-deepmind/xquad, commit 7d30520c717524000f0d9d2f9c10a069acd9d285 (2021-11-12), file
xquad.vi.json: XQuAD's professional Vietnamese translation of 1,190 SQuAD v1.1 dev questions (240 paragraphs of 48
articles), CC BY-SA 4.0 (Artetxe, Ruder and Yogatama, 2019). The course scores nothing on SQuAD or XQuAD; only the
questions' text is kept, as text typed with its diacritics, from which the rewriter learns to restore them.

Every question is kept, in file order, as {"id": XQuAD's id (SQuAD's), "question": the text, spaces collapsed};
a question whose text, with its diacritics stripped, equals one of the course's own questions (data/questions.jsonl,
data/multihop_questions.jsonl) would be skipped (none is).

Usage (from the repository root), with the git dir of any clone that has the commit:

    python data/benchmarks/rewriter/build_xquad_vi.py --git-dir <git dir of google-deepmind/xquad>

Writes data/benchmarks/rewriter/xquad_vi_questions.jsonl.gz (gzip level 9, no name, mtime 0: reproducible bytes).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import subprocess
import unicodedata
from pathlib import Path

COMMIT = "7d30520c717524000f0d9d2f9c10a069acd9d285"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
EXPECTED_QUESTIONS = 1190


def stripped(text: str) -> str:
    """Lowercased, diacritics and đ folded, spaces collapsed: how the same words typed without accents compare."""
    decomposed = unicodedata.normalize("NFD", text.replace("đ", "d").replace("Đ", "D"))
    return " ".join("".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn").lower().split())


def course_questions() -> set[str]:
    """The course's own questions, stripped."""
    found = set()
    for name in ("questions.jsonl", "multihop_questions.jsonl"):
        for line in (ROOT / "data" / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                found.add(stripped(json.loads(line)["query"]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", required=True, help="git dir of a clone of google-deepmind/xquad")
    args = parser.parse_args()
    raw = subprocess.run(["git", "--git-dir", args.git_dir, "show", f"{COMMIT}:xquad.vi.json"], check=True,
                         capture_output=True).stdout
    data = json.loads(raw.decode("utf-8"))
    questions = [{"id": qa["id"], "question": " ".join(qa["question"].split())}
                 for article in data["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    assert len(questions) == EXPECTED_QUESTIONS, len(questions)
    ours = course_questions()
    kept = [q for q in questions if stripped(q["question"]) not in ours]
    text = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in kept)
    out = HERE / "xquad_vi_questions.jsonl.gz"
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as packed:
        packed.write(text.encode("utf-8"))
    out.write_bytes(buffer.getvalue())
    accented = sum(stripped(q["question"]) != q["question"].lower() for q in kept)
    print(f"{len(kept)} of {len(questions)} questions kept ({len(questions) - len(kept)} equal a course question), "
          f"{accented} with diacritics; wrote {out} ({out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
