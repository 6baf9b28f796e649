"""Build SciFact's claims with their rationale labels (standard library only).

Source: GitHub sumithra-p-v/claimverifier, commit b42f1c3d (file data/scifact.zip, a CSV export of the Hugging Face
allenai/scifact dataset), CC BY-NC 2.0 (Wadden et al., 2020). claims_train.csv becomes
claims_train_with_evidence.jsonl (the judge's training claims); claims_validation.csv, BEIR's test split, rebuilds
the committed claims_dev_with_evidence.jsonl, which this script checks byte for byte and does not rewrite.

A CSV row is one (claim, rationale) pair; the rows of a claim become one line
{"id", "claim", "cited": [doc ids], "evidence": [{"doc_id", "label": SUPPORT|CONTRADICT, "sentences": [idx]}]},
in file order (a claim without rationales has "evidence": []).

Usage (from the repository root), with the git dir of any clone that has the commit:

    python data/benchmarks/scifact/build_claims.py --git-dir <git dir of sumithra-p-v/claimverifier>
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import zipfile
from pathlib import Path

COMMIT = "b42f1c3"
HERE = Path(__file__).resolve().parent
EXPECTED = {"claims_train.csv": 809, "claims_validation.csv": 300}


def id_list(cell: str) -> list[str]:
    """'[123, 456]' or numpy's '[1 9]' -> ['123', '456'] / ['1', '9']; '' or '[]' -> []."""
    return cell.strip("[] ").replace(",", " ").split()


def claims(rows: list[dict]) -> list[dict]:
    """One line a claim, its rationale rows gathered in file order."""
    found: dict[str, dict] = {}
    for row in rows:
        claim = found.setdefault(row["id"], {"id": row["id"], "claim": row["claim"],
                                             "cited": id_list(row["cited_doc_ids"]), "evidence": []})
        if row["evidence_doc_id"]:
            claim["evidence"].append({"doc_id": row["evidence_doc_id"], "label": row["evidence_label"],
                                      "sentences": [int(i) for i in id_list(row["evidence_sentences"])]})
    return list(found.values())


def jsonl(lines: list[dict]) -> str:
    """The claims as JSON lines, as the committed dev file is written."""
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", required=True, help="git dir of a clone of sumithra-p-v/claimverifier")
    args = parser.parse_args()
    packed = subprocess.run(["git", "--git-dir", args.git_dir, "show", f"{COMMIT}:data/scifact.zip"], check=True,
                            capture_output=True).stdout
    with zipfile.ZipFile(io.BytesIO(packed)) as archive:
        built = {name: claims(list(csv.DictReader(io.StringIO(archive.read(name).decode("utf-8")))))
                 for name in EXPECTED}
    for name, count in EXPECTED.items():
        assert len(built[name]) == count, (name, len(built[name]))
    dev = (HERE / "claims_dev_with_evidence.jsonl").read_text(encoding="utf-8")
    assert jsonl(built["claims_validation.csv"]) == dev, "claims_validation.csv no longer rebuilds the dev file"
    train = built["claims_train.csv"]
    out = HERE / "claims_train_with_evidence.jsonl"
    out.write_text(jsonl(train), encoding="utf-8")
    with_rationales = [c for c in train if c["evidence"]]
    print(f"dev file rebuilt byte for byte (300 claims); wrote {out} ({len(train)} claims, {len(with_rationales)} "
          f"with rationales, {sum(len(c['evidence']) for c in train)} rationale sets)")


if __name__ == "__main__":
    main()
