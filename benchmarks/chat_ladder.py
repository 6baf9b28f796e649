"""Which chat model for which job: SmolLM2-135M untaught and taught (lesson 09's specialists), Qwen2.5-Coder
0.5B and 1.5B, on every job a lesson gives the chat model, on data that scores no result of the course.

What it measures, how to run it (`make bench-ladder`) and what it recorded: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import PROJECT, add_output_options, peak_rss_mb, positive_int, write_result
from ragkit import Doc, Hit
from ragkit.evaluate import exact_match, mean, roc_auc, token_f1
from ragkit.generate import ChatReader, SpecialistReader
from ragkit.models import LLMReranker, RelevanceJudge, qwen_path
from ragkit.models.jobs import PARSERS, parse_decomposition
from ragkit.models.llm import LlamaCppChat, smollm2_path
from ragkit.models.specialists import COMMITTED_DIR, Specialist, specialist_record
from ragkit.reason import decompose
from ragkit.search import multi_query, parse_questions, rewrite_query
from ragkit.train.heldout import decomposition_scores

RUNGS = ("smollm2", "smollm2 taught", "qwen-0.5b", "qwen-1.5b")
JOBS = ("restore", "multi-query", "score 0-10", "relevance", "decompose", "verdict", "answer", "reader")
TAUGHT = {"restore": "rewriter", "multi-query": "rewriter", "relevance": "relevance", "decompose": "decomposer",
          "verdict": "judge", "answer": "answerer", "reader": "reader"}  # the specialist lesson 09 taught each job
METRIC = {"restore": "exact", "multi-query": "agreement", "score 0-10": "auc", "relevance": "auc",
          "decompose": "step_f1", "verdict": "accuracy", "answer": "accuracy", "reader": "f1"}
XQUAD = PROJECT / "data" / "benchmarks" / "xquad" / "reader_sample.jsonl.gz"
CJK = re.compile(r"([\u3000-\u303f\u3400-\u9fff\uff00-\uffef])")


class TimedServer:
    """llama.cpp's in-process server, keeping its own timings of each call (prompt and reply tokens, ms)."""

    def __init__(self, server):
        self.server, self.calls = server, []

    def handle_chat_completions(self, request: dict) -> dict:
        started = time.perf_counter()
        reply = self.server.handle_chat_completions(request)
        timings = reply.get("timings", {})
        self.calls.append({"seconds": time.perf_counter() - started,
                           **{k: timings.get(k, 0) for k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms")}})
        return reply


def timed(path: Path, threads: int, lora=()) -> LlamaCppChat:
    """A llama.cpp chat model whose server keeps its timings (chat._server.calls)."""
    chat = LlamaCppChat(path, threads=threads, lora=lora)
    chat._server = TimedServer(chat._server)
    return chat


def heldout(job: str) -> list[dict]:
    """The committed held-out records of a specialist job (training splits kept out of its training)."""
    lines = (COMMITTED_DIR / job / "heldout.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def sample(records: list[dict], n: int, *, key) -> list[dict]:
    """n records, seeded, the groups of key taken in turn (labels balanced where key is the label)."""
    groups: dict = {}
    for record in random.Random(0).sample(records, len(records)):
        groups.setdefault(key(record), []).append(record)
    ordered = [r for rank in itertools.zip_longest(*groups.values()) for r in rank if r is not None]
    return ordered[:n]


def job_data(job: str, n: int) -> list[dict]:
    """The records a job is measured on: held-out specialist records, or the XQuAD sample for the reader."""
    if job == "reader":
        rows = [json.loads(line) for line in gzip.open(XQUAD, "rt", encoding="utf-8")]
        return sample(rows, n, key=lambda r: r["lang"])
    if job in ("restore", "multi-query"):
        form = "keywords" if job == "restore" else "questions"
        rows = [r for r in heldout("rewriter") if r["form"] == form
                and r["source"].startswith("xquad") == (job == "restore")]
        return sample(rows, n, key=lambda r: r["source"].split(":")[0])
    source = {"score 0-10": "relevance", "relevance": "relevance", "decompose": "decomposer", "verdict": "judge",
              "answer": "answerer"}[job]
    # the verdict job is measured on the judge's StrategyQA records alone: its SciFact records were the benchmark's
    # test claims until 2026-12-07 (now train claims), and stay out so that the recorded rungs compare
    rows = [r for r in heldout(source) if not (job == "verdict" and r["source"].startswith("scifact"))]
    return sample(rows, n, key=lambda r: r["answer"] if job != "decompose" else r["source"].split(":")[0])


def user_text(record: dict) -> str:
    return record["messages"][-1]["content"].split(":", 1)[1].strip() if record.get("messages") else ""


def query_passage(record: dict) -> tuple[str, Doc]:
    """The query and passage of a relevance record ('Query: …\\nPassage: …')."""
    query, _, passage = record["messages"][-1]["content"].partition("\nPassage: ")
    return query.removeprefix("Query: "), Doc(id="p", text=passage)


def reader_f1(answer: str, gold, lang: str) -> float:
    """Token F1, Chinese split into characters (as MLQA's evaluation does: it writes no spaces)."""
    if lang == "zh":
        answer, gold = CJK.sub(r" \1 ", answer), [CJK.sub(r" \1 ", g) for g in gold]
    return token_f1(answer, gold)


def run_job(job: str, chat, records: list[dict]) -> list[dict]:
    """One value (or score and label) per record: what the job's metric is computed from."""
    items = []
    for record in records:
        if job == "restore":
            query = user_text(record)
            text = rewrite_query(query, chat=chat).queries[0]
            items.append({"exact": exact_match(text, record["answer"]), "f1": token_f1(text, record["answer"])})
        elif job == "multi-query":
            rewrite = multi_query(user_text(record), chat=chat)
            gold = " ".join(parse_questions(record["answer"])[0])
            asked = [q for q in rewrite.queries[1:]]
            items.append({"agreement": token_f1(" ".join(asked), gold), "readable": float(bool(asked)),
                          "questions": len(asked)})
        elif job in ("score 0-10", "relevance"):
            query, doc = query_passage(record)
            scorer = LLMReranker(chat) if job == "score 0-10" else RelevanceJudge(chat)
            items.append({"score": float(scorer.score(query, [doc])[0]), "label": record["answer"] == "yes",
                          "unreadable": float(scorer.unreadable)})
        elif job == "decompose":
            steps, _, _ = decompose(record["messages"][-1]["content"], chat, max_steps=4)
            scores = decomposition_scores([steps], [parse_decomposition(record["answer"])])
            items.append({"step_f1": scores["step_f1"], "right_count": scores["right_count"]})
        elif job in ("verdict", "answer"):
            name = "judge" if job == "verdict" else "answerer"
            reply = chat.chat(record["messages"], max_tokens=4 if job == "verdict" else 3)
            said = PARSERS[name](reply.text)
            items.append({"accuracy": float(said == record["answer"]), "unreadable": float(not said)})
        elif job == "reader":
            hits = [Hit(Doc(id=str(i), text=text, title=title), 1.0) for i, (title, text) in
                    enumerate(record["passages"])]
            reader = chat if isinstance(chat, SpecialistReader) else ChatReader(chat)
            answer = reader.answer(record["question"], hits).text
            items.append({"f1": reader_f1(answer, record["answers"], record["lang"]), "lang": record["lang"],
                          "answer": answer})
    return items


def job_chat(rung: str, job: str, threads: int, loaded: dict):
    """The model a rung answers a job with, loaded once per process (one llama.cpp server a model and adapter);
    None where the rung has no model for the job (no specialist gives 0-10 scores)."""
    if rung != "smollm2 taught":
        if "chat" not in loaded:
            loaded["chat"] = timed(smollm2_path() if rung == "smollm2" else qwen_path(rung), threads)
        return loaded["chat"]
    if job not in TAUGHT:
        return None
    folder = COMMITTED_DIR / TAUGHT[job]
    if folder not in loaded:
        backend = timed(smollm2_path(), threads, lora=[folder / "adapter.gguf"])
        loaded[folder] = Specialist(TAUGHT[job], backend, path=folder, record=specialist_record(folder))
    return SpecialistReader(loaded[folder]) if job == "reader" else loaded[folder]


def llama_of(chat) -> LlamaCppChat:
    """The llama.cpp model behind a chat model, a specialist or a reader."""
    while not isinstance(chat, LlamaCppChat):
        chat = getattr(chat, "backend", None) or chat.chat
    return chat


def run_rung(rung: str, jobs, n: int, threads: int) -> dict:
    """Every job on one rung, in this process: per-record values and llama.cpp's timings of each call."""
    loaded: dict = {}
    started = time.perf_counter()
    out = {"rung": rung, "jobs": {}}
    for job in jobs:
        chat = job_chat(rung, job, threads, loaded)
        if chat is None:
            continue
        server = llama_of(chat)._server
        before = len(server.calls)
        records = job_data(job, n)
        items = run_job(job, chat, records)
        out["jobs"][job] = {"ids": [r.get("id") or r.get("source") for r in records], "items": items,
                            "calls": server.calls[before:]}
        print(f"{rung}: {job} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    out["seconds"] = round(time.perf_counter() - started)
    out["peak_mib"] = peak_rss_mb()
    out["disk_mb"] = (smollm2_path() if rung.startswith("smollm2") else qwen_path(rung)).stat().st_size / 1e6
    return out


def metric(job: str, items: list[dict]) -> float:
    if METRIC[job] == "auc":
        return roc_auc([i["score"] for i in items], [i["label"] for i in items])
    return mean([i[METRIC[job]] for i in items])


def paired_interval(job: str, new: list[dict], old: list[dict], resamples: int = 2000) -> tuple[float, float]:
    """The 95% percentile interval of the metric's difference, resampling the same records for both."""
    rng, n, diffs = random.Random(0), len(new), []
    for _ in range(resamples):
        picks = [rng.randrange(n) for _ in range(n)]
        a, b = metric(job, [new[i] for i in picks]), metric(job, [old[i] for i in picks])
        if a == a and b == b:  # an AUC resample with one class only is NaN
            diffs.append(a - b)
    diffs.sort()
    return diffs[int(0.025 * len(diffs))], diffs[int(0.975 * len(diffs)) - 1]


def cost(calls: list[dict]) -> dict:
    """Mean ms a call, prompt and generated tokens a call, and llama.cpp's prompt and generation rates."""
    prompt_n, prompt_ms = sum(c["prompt_n"] for c in calls), sum(c["prompt_ms"] for c in calls)
    made_n, made_ms = sum(c["predicted_n"] for c in calls), sum(c["predicted_ms"] for c in calls)
    return {"ms/call": round(1000 * mean([c["seconds"] for c in calls])),
            "prompt tok": round(prompt_n / len(calls)), "reply tok": round(made_n / len(calls), 1),
            "prompt tok/s": round(1000 * prompt_n / prompt_ms) if prompt_ms else "",
            # a one-token reply (a P(yes) read-out) is timed as no generation at all
            "reply tok/s": round(1000 * made_n / made_ms, 1) if made_n > len(calls) else ""}


def table(results: list[dict]) -> tuple[list[dict], list[dict]]:
    """One row per job and rung (quality, its gain over untaught SmolLM2 with interval, cost), and one per rung."""
    by_rung = {r["rung"]: r for r in results}
    rows = []
    for job in JOBS:
        base = by_rung.get("smollm2", {}).get("jobs", {}).get(job)
        for rung, result in by_rung.items():
            run = result["jobs"].get(job)
            if run is None:
                continue
            value = metric(job, run["items"])
            row = {"job": job, "rung": rung, "n": len(run["items"]), "metric": METRIC[job], "value": round(value, 3)}
            row["gain over smollm2 [95%]"] = ""
            if base is not None and rung != "smollm2":
                low, high = paired_interval(job, run["items"], base["items"])
                row["gain over smollm2 [95%]"] = f"{value - metric(job, base['items']):+.3f} [{low:+.3f}, {high:+.3f}]"
            rows.append({**row, **cost(run["calls"])})
    memory = [{"rung": r["rung"], "peak MiB": round(r["peak_mib"]), "MB on disk": round(r["disk_mb"])}
              for r in results]
    return rows, memory


def by_language(results: list[dict]) -> list[dict]:
    """The reader's F1 per language and rung."""
    rows = []
    for result in results:
        items = result["jobs"].get("reader", {}).get("items", [])
        langs = sorted({i["lang"] for i in items})
        if items:
            rows.append({"rung": result["rung"], **{lang: round(mean([i["f1"] for i in items if i["lang"] == lang]), 3)
                                                    for lang in langs}})
    return rows


def main() -> None:
    """Each rung in a process of its own (its peak memory is its own), then the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rungs", default=",".join(RUNGS), help="comma-separated, of: " + ", ".join(RUNGS))
    parser.add_argument("--jobs", default=",".join(JOBS), help="comma-separated, of: " + ", ".join(JOBS))
    parser.add_argument("--n", type=positive_int, default=16, help="records per job")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other rungs of the existing result (rerun some rungs, e.g. after a noisy run)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # run one rung here and write its JSON to --out
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    add_output_options(parser, threads_help="llama.cpp threads")
    args = parser.parse_args()
    jobs = [j for j in args.jobs.split(",") if j]
    unknown = [j for j in jobs if j not in JOBS] + [r for r in args.rungs.split(",") if r not in RUNGS]
    if unknown:
        raise SystemExit(f"unknown job or rung: {', '.join(unknown)}")
    if args.one:
        args.out.write_text(json.dumps(run_rung(args.one, jobs, args.n, args.threads), ensure_ascii=False))
        return
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for rung in args.rungs.split(","):
            out = Path(scratch) / "rung.json"
            subprocess.run([sys.executable, "-m", "benchmarks.chat_ladder", "--one", rung, "--out", str(out),
                            "--jobs", ",".join(jobs), "--n", str(args.n), "--threads", str(args.threads)], check=True)
            results.append(json.loads(out.read_text()))
    if args.merge:
        earlier = json.loads((args.results_dir / "chat-ladder.json").read_text(encoding="utf-8"))["extra"]["runs"]
        fresh = {r["rung"]: r for r in results}
        results = [fresh.pop(r["rung"], r) for r in earlier] + list(fresh.values())
    rows, memory = table(results)
    write_result("chat-ladder", rows, [], {"args": {k: str(v) for k, v in vars(args).items()}, "memory": memory,
                                           "reader_by_language": by_language(results), "runs": results},
                 results_dir=args.results_dir)
    from ragkit.evaluate import format_table

    print(format_table(memory))
    print(format_table(by_language(results)))


if __name__ == "__main__":
    main()
