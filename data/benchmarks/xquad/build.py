"""Build the model-choice reader sample from XQuAD: the same questions in English, Vietnamese, Chinese and Russian.

Source: GitHub google-deepmind/xquad, commit 7d30520c717524000f0d9d2f9c10a069acd9d285 (2021-11-12), files
xquad.{en,vi,zh,ru}.json: SQuAD v1.1 dev paragraphs and questions with professional translations, CC BY-SA 4.0
(Artetxe, Ruder and Yogatama, 2019). The course scores nothing on SQuAD or XQuAD: this sample only chooses the
default chat model (benchmarks/chat_ladder.py).

One question is drawn (seeded) from each of QUESTIONS paragraphs of distinct articles, among the questions whose
answer ends within the first ANSWER_WITHIN characters of its paragraph in all four languages (the course's reader
shows 500 characters of a passage). Each record holds the question in one language, its answers, and two passages
in that language: its own paragraph and the paragraph of the next drawn question (a distractor on another topic),
the gold one first for even numbers and second for odd ones.

Usage (from the repository root), with the git dir of any clone that has the commit:

    python data/benchmarks/xquad/build.py --git-dir <git dir of google-deepmind/xquad>

Writes data/benchmarks/xquad/reader_sample.jsonl.gz (gzip level 9, no name, mtime 0: reproducible bytes).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import random
import subprocess
from pathlib import Path

COMMIT = "7d30520c717524000f0d9d2f9c10a069acd9d285"
LANGUAGES = ("en", "vi", "zh", "ru")
QUESTIONS = 12
ANSWER_WITHIN = 450
SEED = 0
OUT = Path(__file__).resolve().parent / "reader_sample.jsonl.gz"


def read_language(git_dir: str, lang: str) -> dict[str, dict]:
    """{question id: {question, answers, context, article}} of one language's file."""
    raw = subprocess.run(["git", "--git-dir", git_dir, "show", f"{COMMIT}:xquad.{lang}.json"], check=True,
                         capture_output=True).stdout
    found = {}
    for number, article in enumerate(json.loads(raw.decode("utf-8"))["data"]):
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                found[qa["id"]] = {"question": " ".join(qa["question"].split()), "context": paragraph["context"],
                                   "article": number, "answers": [a["text"] for a in qa["answers"]],
                                   "end": max(a["answer_start"] + len(a["text"]) for a in qa["answers"])}
    return found


def draw(languages: dict[str, dict]) -> list[str]:
    """QUESTIONS question ids, one per article, whose answers end early enough in every language."""
    english = languages["en"]
    usable = [qid for qid in english if all(qid in lang and lang[qid]["end"] <= ANSWER_WITHIN
                                            for lang in languages.values())]
    random.Random(SEED).shuffle(usable)
    chosen, articles = [], set()
    for qid in usable:
        if english[qid]["article"] not in articles:
            chosen.append(qid)
            articles.add(english[qid]["article"])
        if len(chosen) == QUESTIONS:
            return chosen
    raise SystemExit(f"only {len(chosen)} usable questions")


def records(languages: dict[str, dict], chosen: list[str]) -> list[dict]:
    rows = []
    for lang in LANGUAGES:
        items = languages[lang]
        for number, qid in enumerate(chosen):
            item, other = items[qid], items[chosen[(number + 1) % len(chosen)]]
            passages = [["", item["context"]], ["", other["context"]]]
            rows.append({"id": f"{qid}:{lang}", "lang": lang, "question": item["question"],
                         "answers": item["answers"], "passages": passages if number % 2 == 0 else passages[::-1]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", required=True, help="git dir of a clone of google-deepmind/xquad")
    args = parser.parse_args()
    languages = {lang: read_language(args.git_dir, lang) for lang in LANGUAGES}
    rows = records(languages, draw(languages))
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as out:
        out.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8"))
    OUT.write_bytes(buffer.getvalue())
    print(f"{len(rows)} records, {len(buffer.getvalue()):,} bytes -> {OUT}")


if __name__ == "__main__":
    main()
