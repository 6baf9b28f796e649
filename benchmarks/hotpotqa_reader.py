"""The reader on HotpotQA dev 500: the few-shot chat reader against the reader specialist, on the same evidence.

What it measures, how to run it (`python -m benchmarks.hotpotqa_reader`) and what it recorded: benchmarks/README.md.
The no-chat-model fusion is the setting benchmarks.hotpotqa_fusion chose on train100 and recorded in
results/hotpotqa-fusion.json; this script reuses that benchmark's retrieval and fusion (it does not tune again).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks import hotpotqa_fusion as fusion
from benchmarks.hotpotqa_data import DATASET, DEV_FILES, TYPES, evidence_value, load_hotpotqa, type_of
from ragkit import Doc, Hit, Question, Search, models, search_tokenize
from ragkit.evaluate import answers_of, contains_gold, exact_match, token_f1
from ragkit.generate import ChatReader, Reader
from ragkit.search import BM25Index, HybridIndex

BUDGET = 5  # passages of evidence a reader is given (the gold condition gives the 2 gold paragraphs)
FUSION_RESULT = harness.RESULTS_DIR / "hotpotqa-fusion.json"
READERS = ("specialist", "few-shot")
FEW_SHOT_LIMIT = 100  # the few-shot reader costs seconds a call on 2 cores: a balanced sample of this many
HYBRID_DEPTH = 50  # self-ask searches the plain hybrid (RRF k=60 of BM25 + e5, 50 each), as hotpotqa --specialist
SELF_ASK_DEPTH = 30  # hits kept per self-ask step (as in hotpotqa.py and course_multihop.py)
# chosen on train100 by self_ask_tuning (results/self-ask-tuning.json: "step + question | bridge: title: sentence
# of top 1 | question top 3, then steps"); with a reader, the bridge is its answer from the step's top hit
SELF_ASK_CHOSEN = {"append_question": True, "bridge_hits": 1, "titled_bridges": True, "question_first": 3}
EVIDENCE = {"fusion": "fusion top 5 (chosen on train100)", "gold": "the gold paragraphs only",
            "self-ask": "self-ask top 5, reader bridges", "closed book": "no passages (closed book)"}
METRICS = ("EM", "F1", "contains gold")
COLUMNS = ("questions", "EM", "F1", *(f"F1 {t}" for t in TYPES), "contains gold", "no answer",
           "ms/answer median", "ms/answer mean", "all gold@5", "evidence ms/question")


# --- scoring -------------------------------------------------------------------------------------------


def answer_values(prediction: str, question: Question) -> dict[str, float]:
    """EM, token F1 and contains-gold of one answer, each the best over the answer and its aliases."""
    answers = answers_of(question)
    return {"EM": exact_match(prediction, answers), "F1": token_f1(prediction, answers),
            "contains gold": contains_gold(prediction, answers)}


def mean_cell(values) -> float | str:
    """The mean as a table cell: blank where there is no value."""
    values = list(values)
    return float(np.mean(values)) if values else ""


# --- evidence -------------------------------------------------------------------------------------------


@dataclass
class Evidence:
    """What a reader is given for each question id, and the seconds it took to find; scored: whether
    all-gold@5 means something (not for the gold paragraphs or for no passages)."""

    hits: dict[str, list[Hit]]
    seconds: dict[str, float]
    scored: bool = True


def chosen_setting(path: Path) -> tuple[fusion.Setting, dict]:
    """The fusion setting hotpotqa_fusion chose on train100, from its result file, and that file's record."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        chosen = record["extra"]["chosen"]
        setting = fusion.Setting(int(chosen["k"]), float(chosen["dense_weight"]), int(chosen["link_sources"]),
                                 float(chosen["link_weight"]))
    except FileNotFoundError:
        raise SystemExit(f"no {path}: run `make bench-hotpotqa-fusion` first (it chooses the fusion on "
                         "train100), or pass --fusion-result") from None
    except (KeyError, TypeError, ValueError) as err:
        raise SystemExit(f"{path} records no chosen fusion setting ({err!r}): rerun `make bench-hotpotqa-fusion`") \
            from None
    return setting, record


def fusion_evidence(docs: Sequence[Doc], questions: Sequence[Question], embedder, setting: fusion.Setting,
                    rec: harness.StageRecorder) -> Evidence:
    """hotpotqa_fusion's evidence at the chosen setting: its legs, its links, its fusion, cut at BUDGET."""
    legs, leg_seconds = fusion.retrieve(docs, questions, embedder, rec, "fusion")
    with rec.stage("fusion: find the titles each paragraph mentions", items=len(docs)):
        links = fusion.Links(docs)
        for doc in docs:
            links.mentioned(doc)
    hits, seconds = {}, {}
    with rec.stage(f"fusion: {setting}", items=len(questions)):
        for q in questions:
            started = time.perf_counter()
            hits[q.id] = list(fusion.evidence(legs[q.id], setting, links))[:BUDGET]
            seconds[q.id] = sum(leg_seconds.values()) + time.perf_counter() - started
    return Evidence(hits, seconds)


def gold_evidence(docs: Sequence[Doc], questions: Sequence[Question]) -> Evidence:
    """Each question's gold (supporting) paragraphs, in the data's order, and nothing else."""
    by_id = {doc.id: doc for doc in docs}
    return Evidence({q.id: [Hit(by_id[pid], 1.0) for pid in q.relevant] for q in questions},
                    {q.id: 0.0 for q in questions}, scored=False)


def hybrid_search(docs: Sequence[Doc], embedder, rec: harness.StageRecorder) -> Search:
    """The plain hybrid self-ask was tuned and recorded with: RRF (k=60) of BM25 and exact dense, 50 each."""
    with rec.stage("self-ask: BM25 index", items=len(docs)):
        bm25 = harness.bm25_search(BM25Index(docs, tokenizer=search_tokenize))
    passages, _ = harness.encode_corpus(embedder, docs, rec, "self-ask dense")
    return HybridIndex([bm25, harness.ExactDense(docs, passages, embedder).search], depth=HYBRID_DEPTH).search


def self_ask_evidence(search: Search, questions: Sequence[Question], decomposer, embedder, reader: Reader,
                      rec: harness.StageRecorder) -> tuple[Evidence, dict[str, dict]]:
    """ragkit.reason.self_ask at the settings chosen on train100, its bridges the reader's answers; each run's
    evidence top BUDGET, and what each run planned and found (for the lesson)."""
    from tqdm.auto import tqdm

    from ragkit.reason import self_ask

    hits, seconds, details = {}, {}, {}
    with rec.stage("self-ask: decomposer specialist, reader bridges", items=len(questions)):
        for q in tqdm(questions, desc="self-ask", unit="question"):
            started = time.perf_counter()
            run = self_ask(q.query, search, decomposer=decomposer, embedder=embedder, reader=reader,
                           k=SELF_ASK_DEPTH, **SELF_ASK_CHOSEN)
            seconds[q.id] = time.perf_counter() - started
            hits[q.id] = run.evidence(BUDGET)
            details[q.id] = {"steps": [{"step": s.step, "bridge": s.bridge, "from": s.bridge_from}
                                       for s in run.steps], "warnings": len(run.warnings)}
    return Evidence(hits, seconds), details


def self_ask_summary(details: Mapping[str, dict]) -> dict:
    """How the self-ask runs went: mean steps, where the bridges came from, runs with warnings."""
    steps = [step for run in details.values() for step in run["steps"]]
    return {"questions": len(details), "settings": SELF_ASK_CHOSEN, "depth": SELF_ASK_DEPTH,
            "hybrid_depth": HYBRID_DEPTH, "mean_steps": mean_cell(len(run["steps"]) for run in details.values()),
            "bridges": {source or "nothing": sum(step["from"] == source for step in steps)
                        for source in sorted({step["from"] for step in steps})},
            "runs_with_warnings": sum(bool(run["warnings"]) for run in details.values())}


# --- readers ----------------------------------------------------------------------------------------------


@dataclass
class Answers:
    """One reader's answers on one evidence condition, per question id: text, found or not, wall seconds."""

    text: dict[str, str]
    found: dict[str, bool]
    seconds: dict[str, float]


def few_shot_label(chat: str | None) -> str:
    """The few-shot reader's name in rows and keys: "few-shot", or "few-shot <setting>" when --chat chose a model."""
    return f"few-shot {chat}" if chat else "few-shot"


def load_readers(names: Sequence[str], *, self_ask: bool, threads: int, rec: harness.StageRecorder,
                 chat: str | None = None) -> tuple[dict[str, Reader], Reader | None]:
    """The readers asked for (the few-shot one asking the chat setting, or the model chat names), and the reader
    specialist (also needed for self-ask's bridges). A model that is missing raises ModelNotFound: no fallback."""
    readers: dict[str, Reader] = {}
    specialist = None
    if "specialist" in names or self_ask:
        from ragkit.generate import reader_specialist

        with rec.stage("load the reader specialist"):
            specialist = reader_specialist.specialist_reader(threads=threads)
        if "specialist" in names:
            readers["specialist"] = specialist
    if "few-shot" in names:
        with rec.stage("load the chat model (few-shot reader)"):
            readers[few_shot_label(chat)] = ChatReader(models.chat_model(chat))
    return readers, specialist


def read_all(reader: Reader, evidence: Evidence, questions: Sequence[Question], rec: harness.StageRecorder,
             label: str) -> Answers:
    """The reader's answer to every question from its evidence, each call timed."""
    from tqdm.auto import tqdm

    text, found, seconds = {}, {}, {}
    with rec.stage(f"read: {label}", items=len(questions)):
        for q in tqdm(questions, desc=label, unit="question"):
            started = time.perf_counter()
            answer = reader.answer(q.query, evidence.hits[q.id])
            seconds[q.id] = time.perf_counter() - started
            text[q.id], found[q.id] = answer.text, answer.found
    return Answers(text, found, seconds)


@dataclass
class Recorded:
    """An earlier run's rows, per-question values, answers and evidence ids (its result file), to reuse."""

    path: Path
    readers: dict[str, str]
    rows: dict[str, dict]
    values: dict[str, dict[str, dict[str, float]]]
    predictions: dict[str, dict[str, str]]
    evidence: dict[str, dict[str, list[str]]]


def load_recorded(path: Path) -> Recorded:
    """The rows of an earlier hotpotqa_reader result file, with what they were computed from."""
    record = json.loads(Path(path).read_text(encoding="utf-8"))
    if not record.get("name", "").startswith("hotpotqa-reader"):
        raise ValueError(f"{path} is not a hotpotqa_reader result (its name is {record.get('name')!r})")
    values = {name: {row["id"]: {m: row[m] for m in METRICS} for row in rows}
              for name, rows in record["significance"]["per_question"].items()}
    predictions: dict[str, dict[str, str]] = {}
    evidence: dict[str, dict[str, list[str]]] = {}
    for item in record["extra"]["per_question"]:
        for key, text in item["predictions"].items():
            predictions.setdefault(key, {})[item["id"]] = text
        for name, ids in item["evidence"].items():
            evidence.setdefault(name, {})[item["id"]] = ids
    rows = {row["rung"]: {k: v for k, v in row.items() if k != "rung"} for row in record["rows"]}
    return Recorded(Path(path), dict(record["extra"].get("readers", {})), rows, values, predictions, evidence)


def reusable(recorded: Recorded | None, key: tuple[str, str], found: Evidence, questions: Sequence[Question],
             model: str) -> bool:
    """Whether the recorded row's reader was this model and answered exactly these questions from exactly this
    evidence."""
    name = row_name(*key)
    if recorded is None or name not in recorded.values or "/".join(key) not in recorded.predictions:
        return False
    if recorded.readers.get(key[0]) != model:
        return False
    if set(recorded.values[name]) != {q.id for q in questions}:
        return False
    if key[1] in ("gold", "closed book"):
        return True  # the data fixes both
    kept = recorded.evidence.get(key[1], {})
    return all(kept.get(q.id) == [h.id for h in found.hits[q.id]] for q in questions)


# --- rows and gains ---------------------------------------------------------------------------------------


def row_name(reader: str, evidence: str) -> str:
    """A row's name: the reader, then the evidence it read."""
    return f"{reader}: {EVIDENCE[evidence]}"


def table_row(answers: Answers, evidence: Evidence,
              questions: Sequence[Question]) -> tuple[dict, dict[str, dict[str, float]]]:
    """One row of the table and its per-question EM, F1 and contains-gold."""
    values = {q.id: answer_values(answers.text[q.id], q) for q in questions}
    ms = [1000 * answers.seconds[q.id] for q in questions]
    row = {"questions": len(questions),
           **{metric: mean_cell(values[q.id][metric] for q in questions) for metric in ("EM", "F1")},
           **{f"F1 {t}": mean_cell(values[q.id]["F1"] for q in questions if type_of(q) == t) for t in TYPES},
           "contains gold": mean_cell(values[q.id]["contains gold"] for q in questions),
           "no answer": mean_cell(float(not answers.found[q.id]) for q in questions),
           "ms/answer median": float(np.median(ms)), "ms/answer mean": float(np.mean(ms)),
           "all gold@5": mean_cell(evidence_value([h.id for h in evidence.hits[q.id]], q)["all gold"]
                                   for q in questions) if evidence.scored else "",
           "evidence ms/question": mean_cell(1000 * evidence.seconds[q.id] for q in questions)}
    return row, values


def comparisons(rows: Mapping[tuple[str, str], Mapping], readers: Sequence[str]) -> list[tuple[tuple, tuple, str]]:
    """(new row, base row, what it asks) for every pair the benchmark compares, where both rows ran."""
    few_shot = next((r for r in readers if r.startswith("few-shot")), "few-shot")
    pairs = [(("specialist", e), (few_shot, e), "specialist vs few-shot, same evidence") for e in EVIDENCE]
    pairs += [((r, "fusion"), (r, "gold"), "fusion top 5 vs the gold paragraphs") for r in readers]
    pairs += [((r, "self-ask"), (r, "fusion"), "self-ask vs fusion") for r in readers]
    pairs += [((few_shot, "fusion"), (few_shot, "closed book"), "fusion top 5 vs no passages")]
    return [(new, base, what) for new, base, what in pairs if new in rows and base in rows]


def gains(values: Mapping[tuple[str, str], Mapping[str, Mapping[str, float]]], readers: Sequence[str]) -> dict:
    """Each comparison's gains (new - base) on EM, F1 and contains-gold with paired bootstrap 95% intervals, over
    the questions both rows answered (the few-shot sample where the few-shot reader is in it)."""
    rows, bases = [], []
    for new, base, what in comparisons(values, readers):
        shared = [qid for qid in values[base] if qid in values[new]]
        runs = {row_name(*base): harness.per_question_run({qid: values[base][qid] for qid in shared}),
                row_name(*new): harness.per_question_run({qid: values[new][qid] for qid in shared})}
        for gain in harness.significance(runs, [row_name(*base)], list(METRICS))["gains"]:
            rows.append({"comparison": what, "rung": gain.pop("rung"), "over": gain.pop("over"),
                         "questions": len(shared), **gain})
        bases.append(row_name(*base))
    per_question = {row_name(*key): [{"id": qid, **v} for qid, v in by_id.items()] for key, by_id in values.items()}
    return {"bases": list(dict.fromkeys(bases)), "metrics": list(METRICS), "gains": rows,
            "per_question": per_question}


def per_question(questions: Sequence[Question], evidence: Mapping[str, Evidence],
                 answers: Mapping[tuple[str, str], Answers], self_ask_details: Mapping[str, dict]) -> list[dict]:
    """What each question got: its evidence ids, self-ask's steps and bridges, every reader's answer (keyed
    reader/evidence, e.g. "specialist/fusion", to keep the file small)."""
    return [{"id": q.id, "type": type_of(q), "question": q.query, "answers": list(answers_of(q)),
             "gold": list(q.relevant),
             "evidence": {name: [h.id for h in ev.hits[q.id]] for name, ev in evidence.items()
                          if name in ("fusion", "self-ask") and q.id in ev.hits},
             **({"self_ask": self_ask_details[q.id]} if q.id in self_ask_details else {}),
             "predictions": {"/".join(key): got.text[q.id] for key, got in answers.items() if q.id in got.text}}
            for q in questions]


# --- the run ----------------------------------------------------------------------------------------------


def reader_names(text: str) -> list[str]:
    """--readers as a list in the table's order; an argparse type."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(names) - set(READERS))
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"readers are a comma-separated list of {', '.join(READERS)}, got {text!r}")
    return [name for name in READERS if name in names]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see --help)."""
    parser = harness.benchmark_parser(__doc__.split("\n", 1)[0], DATASET, "HotpotQA")
    add = parser.add_argument
    add("--limit", type=harness.positive_int,
        help="the first N dev500 questions only, a quick run (dev500 is sorted by type: rows 0-249 bridge, "
             "250-499 comparison); without it, all 500")
    add("--readers", type=reader_names, default=",".join(READERS), help="comma-separated: specialist, few-shot")
    add("--few-shot-limit", type=harness.positive_int, default=FEW_SHOT_LIMIT,
        help="the few-shot reader reads a seeded sample of this many questions, balanced bridge/comparison "
             "(its gains over or under the specialist are on that sample)")
    add("--seed", type=int, default=0, help="seed of the few-shot sample")
    add("--chat", help="a RAGKIT_LLM value (e.g. qwen-1.5b): the model the few-shot reader asks, named in its rows "
                       "and in the result file (hotpotqa-reader-<chat>[-subset].json); default: the chat setting")
    add("--skip-self-ask", action="store_true", help="no self-ask evidence (no decomposer)")
    add("--skip-closed-book", action="store_true", help="no closed-book row for the few-shot reader")
    add("--fusion-result", type=Path, default=FUSION_RESULT,
        help="hotpotqa_fusion's result file, which records the fusion chosen on train100")
    add("--reuse", type=Path,
        help="an earlier result file of this benchmark: a row it holds for the same questions and the same evidence "
             "is taken from it (its answers, scores and times) instead of being read again")
    harness.add_output_options(parser, threads_help="CPU threads for the embedder, the readers and llama.cpp")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Find the evidence, let each reader read it, print the table and the gains, write the result file."""
    args = parse_args(argv)
    folder = harness.data_folder(args.data, DATASET, DEV_FILES)
    setting, fusion_record = chosen_setting(args.fusion_result)
    harness.set_threads(args.threads)
    rec = harness.StageRecorder()
    with rec.stage("load HotpotQA dev500 + pooled paragraphs"):
        everything, docs = load_hotpotqa(folder)
    questions = everything[:args.limit] if args.limit else everything
    sampled = {q.id for q in harness.balanced_sample(questions, args.few_shot_limit, key=type_of, seed=args.seed)}
    few_shot_questions = [q for q in questions if q.id in sampled]
    run_self_ask = not args.skip_self_ask
    print(f"HotpotQA from {folder}: {len(questions)} questions ({len(few_shot_questions)} for the few-shot reader) "
          f"over {len(docs)} paragraphs; readers {', '.join(args.readers)}; fusion {setting}; threads {args.threads}",
          file=sys.stderr)
    readers, specialist = load_readers(args.readers, self_ask=run_self_ask, threads=args.threads, rec=rec,
                                       chat=args.chat)
    with rec.stage("load embedder"):
        embedder = models.embedder()
    recorded_embedder = fusion_record.get("extra", {}).get("embedder")
    if recorded_embedder and recorded_embedder != embedder.name:
        print(f"warning: the fusion was chosen with {recorded_embedder}, this run embeds with {embedder.name}",
              file=sys.stderr)
    evidence = {"fusion": fusion_evidence(docs, questions, embedder, setting, rec),
                "gold": gold_evidence(docs, questions)}
    self_ask_details: dict[str, dict] = {}
    if run_self_ask:
        from ragkit.models import specialists

        with rec.stage("load the decomposer specialist"):
            decomposer = specialists.specialist("decomposer", threads=args.threads)
        evidence["self-ask"], self_ask_details = self_ask_evidence(hybrid_search(docs, embedder, rec), questions,
                                                                   decomposer, embedder, specialist, rec)
    if few_shot_label(args.chat) in readers and not args.skip_closed_book:
        evidence["closed book"] = Evidence({q.id: [] for q in questions}, {q.id: 0.0 for q in questions},
                                           scored=False)
    answers: dict[tuple[str, str], Answers] = {}
    rows: dict[str, dict] = {}
    values: dict[tuple[str, str], dict] = {}
    recorded = load_recorded(args.reuse) if args.reuse else None
    for reader_name, reader in readers.items():
        asked = questions if reader_name == "specialist" else few_shot_questions
        for evidence_name, found in evidence.items():
            if evidence_name == "closed book" and reader_name == "specialist":
                continue  # the specialist reads passages: closed book is the chat model's own knowledge
            key = (reader_name, evidence_name)
            if reusable(recorded, key, found, asked, reader.name):
                print(f"reused from {recorded.path.name}: {row_name(*key)}", file=sys.stderr)
                answers[key] = Answers(recorded.predictions["/".join(key)], {}, {})
                rows[row_name(*key)], values[key] = recorded.rows[row_name(*key)], recorded.values[row_name(*key)]
                continue
            answers[key] = read_all(reader, found, asked, rec, row_name(*key))
            rows[row_name(*key)], values[key] = table_row(answers[key], found, asked)
    full = len(questions) == len(everything) and run_self_ask and len(readers) == len(READERS)
    extra = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
             "data": str(folder), "questions": len(questions), "few_shot_questions": len(few_shot_questions),
             "paragraphs": len(docs), "types": {t: sum(type_of(q) == t for q in questions) for t in TYPES},
             "budget": BUDGET, "fusion": {"setting": str(setting), "chosen": fusion_record["extra"]["chosen"],
                                          "from": str(args.fusion_result), "recorded_embedder": recorded_embedder},
             "embedder": embedder.name, "readers": {name: reader.name for name, reader in readers.items()},
             "reused": {name: str(args.reuse) for name in rows if recorded and name in recorded.rows
                        and rows[name] is recorded.rows[name]},
             "ms_note": "ms/answer: the reader's call alone; evidence ms/question: finding the evidence (the fusion's "
                        "two searches and fusion; a whole self-ask run, its reader bridges included)",
             **({"self_ask": self_ask_summary(self_ask_details)} if run_self_ask else {}),
             "per_question": per_question(questions, evidence, answers, self_ask_details)}
    base = "hotpotqa-reader" + (f"-{args.chat}" if args.chat else "")
    harness.write_result(harness.result_name(base, subset=not full, skip_llm=False),
                         harness.rung_table(rows, COLUMNS), rec, extra, results_dir=args.results_dir,
                         gains=gains(values, list(readers)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
