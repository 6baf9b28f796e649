"""Yes/no accuracy on StrategyQA's fixed 200: plain CoT, RwR, retrieve then read, self-consistency and the RwR vote.

What it measures, how to run it (`python -m benchmarks.strategyqa`) and what it recorded: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from benchmarks import harness
from ragkit import CorpusError, Doc, Question, Search, models, normalize_answer, read_json, read_jsonl, search_tokenize
from ragkit.evaluate import all_gold_at_k, recall_at_k
from ragkit.models import answerer_messages, specialist
from ragkit.reason import SCORERS, evidence_scorer, rwr, rwr_vote, self_consistency
from ragkit.reason.chain_of_thought import (
    answer_options,
    answer_prompt,
    cot_options,
    cot_prompt,
    parse_answer,
    parse_cot,
)
from ragkit.search import BM25Index, HybridIndex

DATASET = "strategyqa"  # the folder under $RAGKIT_EVALDATA (default data/benchmarks)
TRAIN_FILE = "strategyqa_train.json"
DEV_FILE = "dev200_qids.json"
FACTS_FILE = "facts_corpus.jsonl"
K_CHECK = 5  # the retrieval check's cut-off
YES, NO = frozenset({"yes", "true"}), frozenset({"no", "false"})
README_RECALL5 = 0.677
REFERENCES = {
    "RwR paper (He et al. 2022), GPT-3, StrategyQA": "+4.4 points over self-consistency",
    "README retrieval check, BM25 question -> facts, dev200": "recall@5 0.677 (all facts 0.40), recall@10 0.782",
    "majority class on the fixed 200": "always no: 104/200 = 0.52",
}
COLUMNS = ("questions", "accuracy", "unknown", "facts R@5", "all facts@5", "steps corrected", "steps confirmed",
           "ms/question")


# --- data ----------------------------------------------------------------------------------------


def load_facts(path: Path) -> list[Doc]:
    """The pooled facts as docs (id "<qid>_f<i>", source = the question's qid)."""
    docs = []
    for number, record in enumerate(read_jsonl(path), start=1):
        if "_id" not in record or not str(record.get("text") or "").strip():
            raise CorpusError(f"{path}: record {number} needs _id and a non-empty text")
        docs.append(Doc(str(record["_id"]), record["text"], source=str(record.get("qid", ""))))
    return docs


def strategy_question(record: Mapping, fact_ids: Sequence[str], path: Path) -> Question:
    """One train record as a Question: answer "yes" / "no", its facts' ids in relevant."""
    if not {"qid", "question", "answer"} <= record.keys() or not isinstance(record["answer"], bool):
        raise CorpusError(f"{path}: record {record.get('qid', '?')!r} needs qid, question and a true/false answer")
    return Question(str(record["qid"]), record["question"], tuple(fact_ids), answer="yes" if record["answer"] else "no",
                    extra={"term": record.get("term", ""), "decomposition": list(record.get("decomposition") or ())})


def load_strategyqa(folder: Path) -> tuple[list[Question], list[Doc]]:
    """The fixed dev qids as questions (in that file's order) and the facts corpus."""
    records = read_json(folder / TRAIN_FILE)
    qids = read_json(folder / DEV_FILE)
    if not isinstance(records, list) or not isinstance(qids, list) or not qids:
        raise CorpusError(f"{folder}: expected a list of records in {TRAIN_FILE} and of qids in {DEV_FILE}")
    by_qid = {str(r.get("qid")): r for r in records if isinstance(r, dict)}
    missing = [qid for qid in qids if str(qid) not in by_qid]
    if missing:
        raise CorpusError(f"{folder / DEV_FILE}: qids not in {TRAIN_FILE}: {missing[:5]}")
    facts = load_facts(folder / FACTS_FILE)
    facts_of: dict[str, list[str]] = {}
    for doc in facts:
        facts_of.setdefault(doc.source, []).append(doc.id)
    questions = [strategy_question(by_qid[str(qid)], facts_of.get(str(qid), ()), folder / TRAIN_FILE) for qid in qids]
    return questions, facts


# --- answers -----------------------------------------------------------------------------------------


def parse_yes_no(text: str) -> str:
    """'yes' / 'no' from an answer: its first word if yes/true/no/false, else the only kind in it ('not
    true' reads as no, 'not false' as yes); 'unknown' when there is none or both."""
    words = normalize_answer(text or "").split()
    if words and (words[0] in YES or words[0] in NO):
        return "yes" if words[0] in YES else "no"
    kinds = set()
    for i, word in enumerate(words):
        if word in YES or word in NO:
            negated = word in ("true", "false") and i > 0 and words[i - 1] == "not"
            kinds.add((word in YES) != negated)
    return ("yes" if kinds.pop() else "no") if len(kinds) == 1 else "unknown"


def accuracy(predictions: Mapping[str, str], questions: Sequence[Question]) -> dict:
    """Accuracy of the parsed answers (unknown counts as wrong), how many were unknown, and each question's
    1 (right) or 0 under "correct" (not a table column: the paired bootstrap's input)."""
    parsed = {q.id: parse_yes_no(predictions[q.id]) for q in questions}
    correct = {q.id: float(parsed[q.id] == q.answer) for q in questions}
    return {"questions": len(questions), "accuracy": float(np.mean(list(correct.values()))),
            "unknown": sum(parsed[q.id] == "unknown" for q in questions), "correct": correct}


RETRIEVE_THEN_READ = f"(e) retrieve then read: top {K_CHECK} facts, the chat model (no chain)"
# each answer row's gain is given over these
BASES = ("majority class (always no)", "(a) plain CoT (greedy)", RETRIEVE_THEN_READ)


def accuracy_gains(rows: Mapping[str, Mapping]) -> dict:
    """Every answer row's accuracy gain over each base present, with paired bootstrap 95% intervals."""
    runs = {name: harness.per_question_run({qid: {"accuracy": v} for qid, v in row["correct"].items()})
            for name, row in rows.items() if "correct" in row}
    return harness.significance(runs, [base for base in BASES if base in runs], ["accuracy"])


def plain_cot(question: str, chat, *, max_steps: int, max_tokens: int = 160) -> tuple[str, str]:
    """rwr's own chain-of-thought call (greedy): its 'So the answer is' answer, and the reply."""
    reply = chat.chat(cot_prompt(question, max_steps=max_steps), temperature=0.0,
                      **cot_options(chat, max_steps, "auto", max_tokens))
    _, answer, _ = parse_cot(reply.text, max_steps=max_steps)
    return answer, reply.text


def retrieve_then_read(question: str, search: Search, chat, *, k: int = K_CHECK) -> str:
    """The question's top k facts in RwR's final-answer prompt, no chain of thought (greedy): the answer line."""
    facts = [hit.doc.text for hit in search(question, k=k)]
    reply = chat.chat(answer_prompt(question, facts), temperature=0.0, max_tokens=40, stop=["\n"],
                      **answer_options(chat, "auto"))
    return parse_answer(reply.text)


# --- retrieval -----------------------------------------------------------------------------------------


def retrieval_check(search: Search, questions: Sequence[Question]) -> tuple[dict, dict[str, float]]:
    """Facts recall@5 and all-facts@5 with the question as the query (questions without facts left out)."""
    judged = [q for q in questions if q.relevant]
    seconds, ids = {}, {}
    for q in judged:
        started = time.perf_counter()
        ids[q.id] = [hit.id for hit in search(q.query, k=K_CHECK)]
        seconds[q.id] = time.perf_counter() - started
    if not judged:
        return {"questions": 0}, seconds
    return {"questions": len(judged),
            "facts R@5": float(np.mean([recall_at_k(ids[q.id], q.relevant, K_CHECK) for q in judged])),
            "all facts@5": float(np.mean([all_gold_at_k(ids[q.id], q.relevant, K_CHECK) for q in judged])),
            "ms/question": harness.ms(seconds, judged)}, seconds


def build_searches(facts: Sequence[Doc], rec: harness.StageRecorder, *,
                   hybrid: bool) -> tuple[dict[str, Search], dict, object]:
    """{"bm25": ..., "hybrid": ...} over the facts (hybrid only if asked), what to record, the embedder (or None)."""
    with rec.stage("BM25: index the facts (search_tokenize)", items=len(facts)):
        searches = {"bm25": harness.bm25_search(BM25Index(facts, tokenizer=search_tokenize))}
    info: dict = {"bm25": {"k1": 1.5, "b": 0.75, "tokenizer": "search_tokenize"}}
    embedder = None
    if hybrid:
        with rec.stage("dense: load embedder"):
            embedder = models.embedder()
        vectors, info["embedding_cache"] = harness.encode_corpus(embedder, facts, rec, "dense")
        searches["hybrid"] = HybridIndex([searches["bm25"], harness.ExactDense(facts, vectors, embedder).search]).search
        info["embedder"] = embedder.name
    return searches, info, embedder


def make_scorer(name: str, chat, rec: harness.StageRecorder, threads: int, embedder=None):
    """The RwR vote's evidence scorer: e5 cosine, the course cross-encoder (trained if need be) or the chat model."""
    if name == "cross-encoder":
        reranker, _ = harness.course_cross_encoder(rec, threads)
        return evidence_scorer("cross-encoder", reranker=reranker)
    if name == "embedding" and embedder is None:
        with rec.stage("dense: load embedder (for the scorer)"):
            embedder = models.embedder()
    return evidence_scorer(name, chat=chat, embedder=embedder)


# --- the run -----------------------------------------------------------------------------------------


def timed(fn: Callable[[Question], object], questions: Sequence[Question], rec: harness.StageRecorder,
          label: str) -> tuple[dict[str, object], dict[str, float]]:
    """fn(question) on every question, timed one by one, under one stage."""
    from tqdm.auto import tqdm

    out, seconds = {}, {}
    with rec.stage(label, items=len(questions)):
        for q in tqdm(questions, desc=label, unit="question"):
            started = time.perf_counter()
            out[q.id] = fn(q)
            seconds[q.id] = time.perf_counter() - started
    return out, seconds


def llm_rows(questions: Sequence[Question], search: Search, chat, scorer, args,
             rec: harness.StageRecorder) -> tuple[dict[str, dict], dict]:
    """Rows (a)-(d) and what the result file should add (per question, verdict counts, agreement)."""
    common = {"max_steps": args.max_steps}
    cot, cot_s = timed(lambda q: plain_cot(q.query, chat, **common), questions, rec, "(a) plain CoT")
    rw, rw_s = timed(lambda q: rwr(q.query, search, chat=chat, k=args.k, **common), questions, rec,
                     f"(c) RwR, top {args.k} facts per step")
    direct, direct_s = timed(lambda q: retrieve_then_read(q.query, search, chat), questions, rec,
                             f"(e) question's top {K_CHECK} facts read by the chat model")
    rows = {
        "(a) plain CoT (greedy)": {**accuracy({i: a for i, (a, _) in cot.items()}, questions),
                                   "ms/question": harness.ms(cot_s, questions)},
        f"(c) RwR (verify each step, top {args.k} facts)": rwr_row(rw, rw_s, questions),
        RETRIEVE_THEN_READ: {**accuracy(direct, questions), "ms/question": harness.ms(direct_s, questions)},
    }
    info = {
        "verdicts": verdict_counts(rw.values()),
        "rwr_cot_answer_equals_plain_cot": sum(parse_yes_no(rw[q.id].cot_answer) == parse_yes_no(cot[q.id][0])
                                               for q in questions),
        "scorer": getattr(scorer, "name", args.scorer),
        "per_question": [{"id": q.id, "question": q.query, "gold": q.answer, "cot": cot[q.id][0],
                          "rwr_cot": rw[q.id].cot_answer, "rwr": rw[q.id].answer,
                          "rwr_verdicts": [s.verdict for s in rw[q.id].steps],
                          "warnings": len(rw[q.id].warnings), "direct": direct[q.id]} for q in questions],
    }
    if not args.no_votes:
        more_rows, more_info = vote_rows(questions, search, chat, scorer, args, rec, common)
        rows.update(more_rows)
        info.update(more_info)
    if args.specialists:
        more_rows, more_info = specialist_rows(questions, search, chat, (cot, cot_s), args, rec)
        rows.update(more_rows)
        info.update(more_info)
    return rows, info


def rwr_row(results: Mapping[str, object], seconds: Mapping[str, float], questions: Sequence[Question]) -> dict:
    """Accuracy of RwR runs, with how many steps the evidence corrected and confirmed."""
    steps = [s for result in results.values() for s in result.steps]
    return {**accuracy({i: r.answer for i, r in results.items()}, questions),
            "steps corrected": f"{sum(s.verdict == 'corrected' for s in steps)}/{len(steps)}",
            "steps confirmed": f"{sum(s.verdict == 'confirmed' for s in steps)}/{len(steps)}",
            "ms/question": harness.ms(seconds, questions)}


def verdict_counts(results) -> dict[str, int]:
    """How many steps of the runs got each verdict."""
    steps = [s for result in results for s in result.steps]
    return {v: sum(s.verdict == v for s in steps) for v in ("confirmed", "corrected", "unverified")}


def vote_rows(questions, search, chat, scorer, args, rec, common) -> tuple[dict[str, dict], dict]:
    """Rows (b) self-consistency and (d) the RwR vote, on --paths sampled chains each."""
    sc, sc_s = timed(lambda q: self_consistency(q.query, chat=chat, paths=args.paths, seed=args.seed, **common),
                     questions, rec, f"(b) self-consistency, {args.paths} paths")
    vote, vote_s = timed(lambda q: rwr_vote(q.query, search, chat=chat, paths=args.paths, scorer=scorer, k=args.k,
                                            seed=args.seed, **common),
                         questions, rec, f"(d) RwR vote, {args.paths} paths, {args.scorer} scorer")
    rows = {
        f"(b) self-consistency ({args.paths} paths, majority)": {
            **accuracy({i: r.answer for i, r in sc.items()}, questions), "ms/question": harness.ms(sc_s, questions)},
        f"(d) RwR vote ({args.paths} paths, {args.scorer} support)": {
            **accuracy({i: r.answer for i, r in vote.items()}, questions),
            "ms/question": harness.ms(vote_s, questions)},
    }
    info = {
        "vote_majority_equals_self_consistency": sum(parse_yes_no(vote[q.id].majority_answer)
                                                     == parse_yes_no(sc[q.id].answer) for q in questions),
        "vote_changed_the_majority": sum(parse_yes_no(vote[q.id].answer) != parse_yes_no(vote[q.id].majority_answer)
                                         for q in questions),
        "per_question_votes": {q.id: {"self_consistency": sc[q.id].answer, "vote": vote[q.id].answer,
                                      "vote_majority": vote[q.id].majority_answer} for q in questions},
    }
    return rows, info


def specialist_rows(questions, search, chat, chain, args, rec) -> tuple[dict[str, dict], dict]:
    """Rows with the answerer and judge specialists: (a+) the same greedy chain read by the answerer, (c+) RwR
    with the judge and the answerer, (e) the question's own top facts read by the answerer (no chain)."""
    with rec.stage("specialists: load the answerer and the judge"):
        answerer, judge = specialist("answerer"), specialist("judge")
    common, (cot, cot_s) = {"max_steps": args.max_steps}, chain
    steps_of = {i: parse_cot(reply, max_steps=args.max_steps)[0] for i, (_, reply) in cot.items()}
    read, read_s = timed(lambda q: answerer.chat(answerer_messages(q.query, steps_of[q.id]), max_tokens=3).text,
                         questions, rec, "(a+) plain CoT, steps read by the answerer specialist")
    rw, rw_s = timed(lambda q: rwr(q.query, search, chat=chat, judge=judge, answerer=answerer, k=args.k, **common),
                     questions, rec, f"(c+) RwR with the judge and answerer specialists, top {args.k} facts")
    top = {q.id: [h.doc.text for h in search(q.query, k=K_CHECK)] for q in questions}
    direct, direct_s = timed(lambda q: answerer.chat(answerer_messages(q.query, top[q.id]), max_tokens=3).text,
                             questions, rec, f"(e) question's top {K_CHECK} facts read by the answerer specialist")
    rows = {
        "(a+) plain CoT, its steps read by the answerer specialist": {
            **accuracy(read, questions),
            "ms/question": harness.ms({i: read_s[i] + cot_s[i] for i in read_s}, questions)},
        f"(c+) RwR with judge + answerer specialists (top {args.k} facts)": rwr_row(rw, rw_s, questions),
        f"(e) retrieve then read: top {K_CHECK} facts, answerer specialist (no chain)": {
            **accuracy(direct, questions), "ms/question": harness.ms(direct_s, questions)},
    }
    info = {"specialists": {"answerer": answerer.name, "judge": judge.name},
            "specialist_verdicts": verdict_counts(rw.values()),
            "per_question_specialists": {q.id: {"cot_read": read[q.id], "rwr": rw[q.id].answer,
                                                "rwr_verdicts": [s.verdict for s in rw[q.id].steps],
                                                "direct": direct[q.id]} for q in questions}}
    return rows, info


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see --help)."""
    parser = harness.benchmark_parser(__doc__.split("\n", 1)[0], DATASET, "StrategyQA")
    add = parser.add_argument
    add("--questions", type=harness.positive_int, help="a seeded sample of the 200, balanced yes/no (default: all 200)")
    add("--seed", type=int, default=0, help="seed of the sample and of the sampled reasoning paths")
    add("--paths", type=harness.positive_int, default=5, help="sampled chains for self-consistency and the RwR vote")
    add("--scorer", choices=SCORERS, default="embedding", help="how the RwR vote scores a step's evidence")
    add("--retriever", choices=("hybrid", "bm25"), default="hybrid", help="how steps retrieve facts")
    add("--max-steps", type=harness.positive_int, default=3, help="reasoning steps per chain at most")
    add("--k", type=harness.positive_int, default=3, help="facts retrieved per step")
    add("--skip-llm", action="store_true", help="retrieval check and majority baseline only: no chat model")
    add("--no-votes", action="store_true", help="skip (b) self-consistency and (d) the RwR vote (the slow rows)")
    add("--chat", help="a RAGKIT_LLM value (e.g. qwen-1.5b): the chat model of every row, named in the result file "
                       "(strategyqa-<chat>[-subset].json); default: the chat setting")
    add("--specialists", action="store_true",
        help="add the rows with the answerer and judge specialists (lesson 09; committed or built by make specialists)")
    harness.add_output_options(parser, threads_help="CPU threads for the embedder, the cross-encoder and llama.cpp "
                                            "(1 is faster on a busy CPU)")
    return parser.parse_args(argv)


def notes(rows: Mapping[str, Mapping], *, full: bool) -> str:
    """Reference points, and the README's retrieval check next to this run's."""
    lines = ["reference points: " + "; ".join(f"{k}: {v}" for k, v in REFERENCES.items()),
             "retrieval here is over annotator-written gold facts, far easier than the paper's Wikipedia"]
    bm25 = rows["retrieval check: BM25, question -> facts"].get("facts R@5")
    if full and isinstance(bm25, float):
        verdict = "reproduced" if abs(bm25 - README_RECALL5) <= 0.01 else f"differs by {bm25 - README_RECALL5:+.3f}"
        lines.append(f"README check: BM25 facts recall@5 {bm25:.3f} vs 0.677 -> {verdict}")
    if not full:
        lines.append("SUBSET RUN: compare rows with each other, not with the published figures")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Load the data, run the rows, print the table and the stages, write the result file."""
    args = parse_args(argv)
    folder = harness.data_folder(args.data, DATASET, (TRAIN_FILE, DEV_FILE, FACTS_FILE))
    harness.set_threads(args.threads)
    rec = harness.StageRecorder()
    with rec.stage("load StrategyQA dev200 + facts"):
        everything, facts = load_strategyqa(folder)
    questions = harness.balanced_sample(everything, args.questions, key=lambda q: q.answer, seed=args.seed)
    full = len(questions) == len(everything)
    print(f"StrategyQA from {folder}: {len(questions)} questions over {len(facts)} facts, retriever "
          f"{args.retriever}, threads {args.threads}", file=sys.stderr)
    searches, info, embedder = build_searches(facts, rec, hybrid=args.retriever == "hybrid")
    rows = {"majority class (always no)": accuracy({q.id: "no" for q in questions}, questions)}
    for name, search in searches.items():
        with rec.stage(f"retrieval check: {name}", items=len(questions)):
            label = "BM25" if name == "bm25" else "hybrid"
            rows[f"retrieval check: {label}, question -> facts"] = retrieval_check(search, questions)[0]
    if not args.skip_llm:
        with rec.stage("chat model: load"):
            chat = models.chat_model(args.chat)
        scorer = make_scorer(args.scorer, chat, rec, args.threads, embedder)
        more, llm_info = llm_rows(questions, searches[args.retriever], chat, scorer, args, rec)
        rows.update(more)
        info.update(llm_info, chat_model=getattr(chat, "name", type(chat).__name__))
    extra = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
             "data": str(folder), "questions": len(questions), "facts": len(facts),
             "answers": {a: sum(q.answer == a for q in questions) for a in ("yes", "no")},
             "references": REFERENCES, **info}
    base = "strategyqa-specialists" if args.specialists and not args.skip_llm else "strategyqa"
    name = harness.result_name(base + (f"-{args.chat}" if args.chat and not args.skip_llm else ""),
                               subset=not full, skip_llm=args.skip_llm)
    harness.write_result(name, harness.rung_table(rows, COLUMNS), rec, extra, results_dir=args.results_dir,
                 gains=accuracy_gains(rows))
    print(notes(rows, full=full))
    return 0


if __name__ == "__main__":
    sys.exit(main())
