"""Multi-hop retrieval and answers on HotpotQA dev 500: single-shot, a non-LLM iterative baseline, CoT-RAG.

What it measures, how to run it (`python -m benchmarks.hotpotqa`) and what it recorded: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.harness import (
    ExactDense,
    StageRecorder,
    add_output_options,
    balanced_sample,
    benchmark_parser,
    bm25_search,
    data_folder,
    encode_corpus,
    ms,
    per_question_run,
    positive_int,
    result_name,
    rung_table,
    set_threads,
    significance,
    write_result,
)
from benchmarks.hotpotqa_data import DATASET, DEV_FILES, evidence_value, load_hotpotqa, type_of
from ragkit import Doc, Hit, Question, Search, excerpts_text, models, search_tokenize, split_sentences, tokenize
from ragkit.evaluate import answers_of, exact_match, token_f1
from ragkit.generate import short_answer
from ragkit.reason import FALLBACK_WARNING, CoTResult, cot_rag
from ragkit.search import RRF_K, BM25Index, HybridIndex, interleave, reciprocal_rank_fusion

BUDGET = 5  # paragraphs of evidence every pipeline is scored on
DEPTH = 50  # each ranking fed to a fusion (hybrid legs, iterative queries) is cut here
FOLLOW = 3  # rung 3: second queries from this many top hits
LLM_QUESTIONS = 100
SELF_ASK_DEPTH = 30  # hits kept per self-ask step (as in benchmarks/course_multihop.py)
SELF_ASK_CHOSEN = {"bridge_hits": 1, "titled_bridges": True, "question_first": 3}  # results/self-ask-tuning.json
SELF_ASK_RUNG = "6. self-ask, decomposer specialist: steps interleaved"
SELF_ASK_CHOSEN_RUNG = "6. self-ask, decomposer specialist: question top 3, then steps (chosen on train100)"
TOKENIZERS = {"search": search_tokenize, "words": tokenize}  # words: lowercase words, no stemming or stop list
README_BM25_ALL_GOLD5 = 0.558
REFERENCES = {
    "README sanity check, BM25 question-only, all 500": "both-gold@5 0.558, recall@5 0.757",
    "IRCoT (Trivedi et al. 2023)": "up to +21 points retrieval recall over one-step retrieval",
    "IRCoT + Llama-3.1-8B on these 500 (xindili-cmu fork)": "EM 0.274 / F1 0.375 (best setting)",
    "an earlier measurement (the design notes), BM25 / hybrid, q400-499 vs bridge q150-249":
        "0.67 / 0.42 and 0.92 / 0.57 all-gold@5",
}
BM25_RUNG = "1. BM25, question only"
HYBRID_RUNG = "2. hybrid BM25 + dense (RRF), question only"
COLUMNS = ("questions", "all gold", "bridge", "comparison", "gold recall", "paragraphs", "EM", "F1", "ms/question")

# Few-shot examples about animals: far from HotpotQA, so a copied answer is visible.
READER_PROMPT = [
    {"role": "system", "content": "Answer the question from the paragraphs. Reply with the short answer only "
                                  "(a name, a place, a date, a number, or yes / no), not a sentence."},
    {"role": "user", "content": "Paragraphs:\n[1] Koala: The koala is a tree-dwelling marsupial of eastern "
                                "Australia. It feeds almost only on eucalyptus leaves.\n[2] Eucalyptus: The "
                                "genus was first described by the French botanist L'Héritier in 1789.\n\n"
                                "Question: On which continent does the animal that feeds on eucalyptus "
                                "leaves live?"},
    {"role": "assistant", "content": "Australia"},
    {"role": "user", "content": "Paragraphs:\n[1] Kiwi: The kiwi is a flightless bird of New Zealand.\n[2] Emu: "
                                "The emu is the second-largest living bird; it cannot fly.\n\n"
                                "Question: Are the kiwi and the emu both flightless birds?"},
    {"role": "assistant", "content": "yes"},
]
_CITATION = re.compile(r"\s*\[[^\]]*\]")


# --- retrievers ----------------------------------------------------------------------------------


def build_searches(docs: Sequence[Doc], rec: StageRecorder, *, hybrid: bool,
                   tokenizer: str = "search") -> tuple[dict[str, Search], dict]:
    """{"bm25": ..., "hybrid": ...} searches over the docs (hybrid only if asked) and what to record."""
    with rec.stage(f"BM25: index ({tokenizer} tokenizer)", items=len(docs)):
        searches = {"bm25": bm25_search(BM25Index(docs, tokenizer=TOKENIZERS[tokenizer]))}
    info: dict = {"bm25": {"k1": 1.5, "b": 0.75, "tokenizer": tokenizer, "fields": "title + text"}}
    if hybrid:
        with rec.stage("dense: load embedder"):
            embedder = models.embedder()
        passages, info["embedding_cache"] = encode_corpus(embedder, docs, rec, "dense")
        dense = ExactDense(docs, passages, embedder)
        searches["hybrid"] = HybridIndex([searches["bm25"], dense.search], depth=DEPTH).search
        info["embedder"] = embedder.name
    return searches, info


# --- the non-LLM iterative baseline ----------------------------------------------------------------


def first_sentence(text: str) -> str:
    """The first sentence of a paragraph (the whole text if it has no sentence break)."""
    sentences = split_sentences(text)
    return sentences[0] if sentences else text.strip()


def expansion_queries(question: str, hits: Sequence[Hit], *, follow: int = FOLLOW) -> list[str]:
    """Second queries: the question + the title and first sentence of each of the top `follow` hits."""
    return [" ".join(part for part in (question, hit.doc.title, first_sentence(hit.doc.text)) if part)
            for hit in hits[:follow]]


def iterative_search(search: Search, question: str, *, k: int = BUDGET, follow: int = FOLLOW,
                     depth: int = DEPTH) -> list[Hit]:
    """Retrieve, extend the question with what the top hits say, retrieve again; RRF of all, cut at k."""
    first = search(question, k=depth)
    rankings = [first, *(search(query, k=depth) for query in expansion_queries(question, first, follow=follow))]
    return reciprocal_rank_fusion(rankings, limit=k)


# --- CoT-RAG evidence --------------------------------------------------------------------------------


class RecordingSearch:
    """A search that keeps each call's ranking (at least `keep` deep) and hands cot_rag its top k."""

    def __init__(self, search: Search, keep: int = BUDGET):
        self.search, self.keep, self.rankings = search, keep, []

    def __call__(self, query: str, *, k: int = BUDGET) -> list[Hit]:
        hits = list(self.search(query, k=max(k, self.keep)))
        self.rankings.append(hits)
        return hits[:k]


@dataclass(frozen=True)
class CoTRun:
    """One CoT-RAG run on a question: the result, every step's recorded ranking, and its wall time."""

    result: CoTResult
    rankings: tuple[tuple[Hit, ...], ...]
    seconds: float

    def budget_hits(self, budget: int = BUDGET) -> list[Hit]:
        """The step rankings interleaved and cut at the budget."""
        return interleave(self.rankings, budget)


def run_cot(question: str, search: Search, chat, *, max_steps: int, k: int) -> CoTRun:
    """cot_rag on one question, recording what each step retrieved."""
    recording = RecordingSearch(search)
    started = time.perf_counter()
    result = cot_rag(question, recording, chat=chat, max_steps=max_steps, k=k)
    return CoTRun(result, tuple(tuple(r) for r in recording.rankings), time.perf_counter() - started)


# --- self-ask with the decomposer specialist ----------------------------------------------------------


def self_ask_rungs(search: Search, questions: Sequence[Question], rec: StageRecorder,
                   threads: int) -> dict[str, Run]:
    """Rung 6: self-ask with the decomposer specialist, scored two ways from the same runs."""
    from tqdm.auto import tqdm

    from ragkit.models import specialist
    from ragkit.reason import self_ask

    decomposer, embedder = specialist("decomposer", threads=threads), models.embedder()
    chosen, interleaved, seconds = {}, {}, {}
    with rec.stage("rung 6: self-ask, decomposer specialist", items=len(questions)):
        for q in tqdm(questions, desc="self-ask", unit="question"):
            started = time.perf_counter()
            run = self_ask(q.query, search, decomposer=decomposer, embedder=embedder, k=SELF_ASK_DEPTH,
                           **SELF_ASK_CHOSEN)
            seconds[q.id] = time.perf_counter() - started
            chosen[q.id] = run.evidence(BUDGET)
            interleaved[q.id] = interleave([list(step.hits) for step in run.steps], BUDGET)
    return {SELF_ASK_RUNG: Run(interleaved, seconds), SELF_ASK_CHOSEN_RUNG: Run(chosen, seconds)}


def reader_rows(runs: Mapping[str, Run], questions: Sequence[Question], chat, rec: StageRecorder) -> dict[str, dict]:
    """The reader of rung 5 on each run's top 5, over the questions."""
    rows = {}
    for name, run in runs.items():
        predicted, seconds = {}, {}
        with rec.stage(f"reader on: {name}", items=len(questions)):
            for q in questions:
                predicted[q.id], spent = read_answer(q.query, run.hits[q.id], chat)
                seconds[q.id] = run.seconds[q.id] + spent
        rows[f"7. reader on the top 5 of: {name}"] = {**answer_scores(predicted, questions),
                                                       "ms/question": ms(seconds, questions)}
    return rows


# --- the reader ----------------------------------------------------------------------------------------


def strip_citations(text: str) -> str:
    """A CoT-RAG answer without its [S1] citations."""
    return " ".join(_CITATION.sub("", text or "").split())


def reader_prompt(question: str, hits: Sequence[Hit], *, max_chars: int = 500) -> list[dict]:
    """The few-shot short-answer prompt over numbered paragraphs."""
    return READER_PROMPT + [{"role": "user", "content": f"Paragraphs:\n{excerpts_text(hits, max_chars=max_chars)}"
                                                        f"\n\nQuestion: {question}"}]


def read_answer(question: str, hits: Sequence[Hit], chat) -> tuple[str, float]:
    """The chat model's short answer from the paragraphs, and the call's wall time."""
    started = time.perf_counter()
    reply = chat.chat(reader_prompt(question, hits), max_tokens=24, temperature=0.0, stop=["\n"])
    return short_answer(reply.text), time.perf_counter() - started


# --- scoring -----------------------------------------------------------------------------------------


def mean_cell(values: Iterable[float]) -> float | str:
    """The mean as a table cell: blank where there is no value (a question type absent from a sample)."""
    values = list(values)
    return float(np.mean(values)) if values else ""


def evidence_values(evidence: Mapping[str, Sequence[str]], questions: Sequence[Question]) -> dict[str, dict]:
    """Per question id: evidence_value of its ids; evidence[qid] = ids."""
    return {q.id: evidence_value(evidence[q.id], q) for q in questions}


def evidence_scores(evidence: Mapping[str, Sequence[str]], questions: Sequence[Question]) -> dict:
    """All gold (overall and per type), mean gold recall and mean evidence size; evidence[qid] = ids."""
    values = evidence_values(evidence, questions)
    return {"questions": len(questions),
            "all gold": mean_cell(values[q.id]["all gold"] for q in questions),
            "bridge": mean_cell(values[q.id]["all gold"] for q in questions if type_of(q) == "bridge"),
            "comparison": mean_cell(values[q.id]["all gold"] for q in questions if type_of(q) == "comparison"),
            "gold recall": mean_cell(values[q.id]["gold recall"] for q in questions),
            "paragraphs": mean_cell(len(set(evidence[q.id])) for q in questions)}


def answer_scores(predictions: Mapping[str, str], questions: Sequence[Question]) -> dict:
    """Mean exact match and token F1 against the answer and its aliases."""
    return {"questions": len(questions),
            "EM": mean_cell(exact_match(predictions[q.id], answers_of(q)) for q in questions),
            "F1": mean_cell(token_f1(predictions[q.id], answers_of(q)) for q in questions)}


# --- the run -----------------------------------------------------------------------------------------


@dataclass
class Run:
    """One retrieval pipeline over the questions: its top-BUDGET hits and seconds per question id."""

    hits: dict[str, list[Hit]]
    seconds: dict[str, float]

    def ids(self) -> dict[str, list[str]]:
        """Each question's retrieved ids, best first."""
        return {qid: [hit.id for hit in hits] for qid, hits in self.hits.items()}


def run_retrieval(pipeline: Callable[[str], list[Hit]], questions: Sequence[Question], rec: StageRecorder,
                  label: str) -> Run:
    """pipeline(question) on every question, timed one by one; keeps the top BUDGET hits."""
    hits, seconds = {}, {}
    with rec.stage(label, items=len(questions)):
        for q in questions:
            started = time.perf_counter()
            hits[q.id] = list(pipeline(q.query))[:BUDGET]
            seconds[q.id] = time.perf_counter() - started
    return Run(hits, seconds)


def single_name(retriever: str) -> str:
    """The single-shot rung of a retriever."""
    return HYBRID_RUNG if retriever == "hybrid" else BM25_RUNG


def iterative_rung(retriever: str) -> str:
    """The name of rung 3 over a retriever."""
    return f"3. iterative {retriever}: question + top-{FOLLOW} hits' title and first sentence (RRF)"


def retrieval_rungs(searches: Mapping[str, Search], retriever: str, questions: Sequence[Question],
                    rec: StageRecorder) -> dict[str, Run]:
    """Rungs 1-3: BM25, hybrid (if built), iterative over the chosen retriever."""
    runs = {BM25_RUNG: run_retrieval(lambda q: searches["bm25"](q, k=BUDGET), questions, rec, "rung 1: BM25 search")}
    if "hybrid" in searches:
        runs[HYBRID_RUNG] = run_retrieval(lambda q: searches["hybrid"](q, k=BUDGET), questions, rec,
                                          "rung 2: hybrid search")
    runs[iterative_rung(retriever)] = run_retrieval(lambda q: iterative_search(searches[retriever], q), questions,
                                                    rec, f"rung 3: iterative {retriever} ({1 + FOLLOW} searches)")
    return runs


def llm_rungs(search: Search, single: Run, iterative: Run, questions: Sequence[Question], chat, args,
              rec: StageRecorder) -> tuple[dict[str, dict], dict]:
    """Rungs 4-5 on the LLM sample: CoT-RAG evidence, then the reader on three top-5s and CoT-RAG's answer."""
    from tqdm.auto import tqdm

    cot: dict[str, CoTRun] = {}
    with rec.stage(f"rung 4: CoT-RAG ({args.retriever}, <= {args.max_steps} steps, k={args.k})",
                   items=len(questions)):
        for q in tqdm(questions, desc="CoT-RAG", unit="question"):
            cot[q.id] = run_cot(q.query, search, chat, max_steps=args.max_steps, k=args.k)
    budget = {qid: run.budget_hits() for qid, run in cot.items()}
    cot_seconds = {qid: run.seconds for qid, run in cot.items()}
    rows: dict[str, dict] = {
        "4. CoT-RAG, step rankings interleaved, cut at 5": {
            **evidence_scores({qid: [h.id for h in hits] for qid, hits in budget.items()}, questions),
            "ms/question": ms(cot_seconds, questions)},
        f"4. CoT-RAG, union of step sources (top {args.k} per step, un-cut)": {
            **evidence_scores({qid: run.result.sources for qid, run in cot.items()}, questions),
            "ms/question": ms(cot_seconds, questions)},
    }
    answers: dict[str, dict[str, str]] = {}
    for name, evidence, before in (("single-shot", single.hits, single.seconds),
                                   ("iterative", iterative.hits, iterative.seconds),
                                   ("CoT-RAG", budget, cot_seconds)):
        predicted, seconds = {}, {}
        with rec.stage(f"rung 5: reader on the {name} top 5", items=len(questions)):
            for q in tqdm(questions, desc=f"reader ({name})", unit="question"):
                predicted[q.id], spent = read_answer(q.query, evidence[q.id], chat)
                seconds[q.id] = before[q.id] + spent
        answers[name] = predicted
        rows[f"5. reader on the {name} top 5"] = {**answer_scores(predicted, questions),
                                                  "ms/question": ms(seconds, questions)}
    answers["CoT-RAG answer"] = {qid: strip_citations(run.result.answer) for qid, run in cot.items()}
    rows["5. CoT-RAG's own answer (citations stripped)"] = {**answer_scores(answers["CoT-RAG answer"], questions),
                                                           "ms/question": ms(cot_seconds, questions)}
    return rows, {"cot_rag": cot_summary(cot), "per_question": per_question(questions, single, iterative, cot,
                                                                             answers)}


def cot_summary(cot: Mapping[str, CoTRun]) -> dict:
    """Means over the CoT-RAG runs: steps, tokens, union size; how often it fell back or warned."""
    runs = list(cot.values())
    return {"mean_steps": mean_cell(len(r.result.steps) for r in runs),
            "mean_tokens": mean_cell(r.result.tokens for r in runs),
            "mean_union_size": mean_cell(len(r.result.sources) for r in runs),
            "fallback_to_question": sum(FALLBACK_WARNING in r.result.warnings for r in runs),
            "runs_with_warnings": sum(bool(r.result.warnings) for r in runs),
            "model": runs[0].result.model if runs else ""}


def per_question(questions: Sequence[Question], single: Run, iterative: Run, cot: Mapping[str, CoTRun],
                 answers: Mapping[str, Mapping[str, str]]) -> list[dict]:
    """What each LLM-sample question got: evidence ids, CoT-RAG's steps and answers (for the lesson)."""
    return [{"id": q.id, "type": type_of(q), "question": q.query, "gold": list(q.relevant),
             "answers": list(answers_of(q)),
             "single_shot": [h.id for h in single.hits[q.id]], "iterative": [h.id for h in iterative.hits[q.id]],
             "cot_steps": [{"sub_query": s.sub_query, "sources": list(s.sources), "found": s.found}
                           for s in cot[q.id].result.steps],
             "cot_top5": [h.id for h in cot[q.id].budget_hits()], "cot_warnings": list(cot[q.id].result.warnings),
             "predictions": {name: predicted[q.id] for name, predicted in answers.items()}} for q in questions]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see --help)."""
    parser = benchmark_parser(__doc__.split("\n", 1)[0], DATASET, "HotpotQA")
    add = parser.add_argument
    add("--questions", type=positive_int, help="rungs 1-3 on a seeded sample balanced bridge/comparison (default: all)")
    add("--llm-questions", type=positive_int, default=LLM_QUESTIONS,
        help="rungs 4-5 on this many of those (balanced; ~6-8 model calls each)")
    add("--seed", type=int, default=0, help="seed of the samples")
    add("--retriever", choices=("hybrid", "bm25"), default="hybrid",
        help="what rungs 3-5 retrieve with (bm25 skips the embedder)")
    add("--skip-llm", action="store_true", help="no rungs 4-5 (few-shot CoT-RAG and its readers)")
    add("--specialist", action="store_true", help="rung 6: self-ask with the decomposer specialist (built)")
    add("--specialist-readers", type=int, default=0,
        help="with --specialist: the reader on the hybrid and the chosen self-ask top 5 of this many questions")
    add("--max-steps", type=positive_int, default=3, help="CoT-RAG: at most this many steps (2-hop questions)")
    add("--k", type=positive_int, default=3, help="CoT-RAG: paragraphs retrieved per step")
    add("--bm25-tokenizer", choices=tuple(TOKENIZERS), default="search",
        help="search: folded, stemmed, stop words dropped; words: plain lowercase words")
    add_output_options(parser, threads_help="CPU threads for the embedder and llama.cpp (1 is faster on a busy CPU)")
    return parser.parse_args(argv)


def notes(rows: Mapping[str, Mapping], *, full: bool, tokenizer: str) -> str:
    """Published and measured reference points, and whether the README's BM25 check is reproduced."""
    lines = ["reference points: " + "; ".join(f"{k}: {v}" for k, v in REFERENCES.items())]
    bm25 = rows[BM25_RUNG]["all gold"]
    if full:
        gap = bm25 - README_BM25_ALL_GOLD5
        verdict = ("reproduced" if abs(gap) <= 0.01 else
                   f"NOT reproduced ({gap:+.3f}): the README's tokenizer or BM25 parameters differ"
                   + ("; try --bm25-tokenizer words" if tokenizer == "search" else ""))
        lines.append(f"README check: BM25 question-only all-gold@5 {bm25:.3f} vs 0.558 -> {verdict}")
    else:
        lines.append("SUBSET RUN: compare rows with each other, not with the published figures")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Load the data, run the rungs, print the table and the stages, write the result file."""
    args = parse_args(argv)
    folder = data_folder(args.data, DATASET, DEV_FILES)
    set_threads(args.threads)
    rec = StageRecorder()
    with rec.stage("load HotpotQA dev500 + pooled paragraphs"):
        everything, docs = load_hotpotqa(folder)
    questions = balanced_sample(everything, args.questions, key=type_of, seed=args.seed)
    llm_questions = [] if args.skip_llm else balanced_sample(everything, min(args.llm_questions, len(questions)),
                                                             key=type_of, seed=args.seed)
    full = len(questions) == len(everything)
    print(f"HotpotQA from {folder}: {len(questions)} questions ({len(llm_questions)} for the LLM rungs) over "
          f"{len(docs)} paragraphs, retriever {args.retriever}, threads {args.threads}", file=sys.stderr)
    searches, info = build_searches(docs, rec, hybrid=args.retriever == "hybrid", tokenizer=args.bm25_tokenizer)
    runs = retrieval_rungs(searches, args.retriever, questions, rec)
    rows = {name: {**evidence_scores(run.ids(), questions), "ms/question": ms(run.seconds, questions)}
            for name, run in runs.items()}
    specialist_runs = self_ask_rungs(searches[args.retriever], questions, rec, args.threads) if args.specialist else {}
    rows.update({name: {**evidence_scores(run.ids(), questions), "ms/question": ms(run.seconds, questions)}
                 for name, run in specialist_runs.items()})
    gains = significance({name: per_question_run(evidence_values(run.ids(), questions))
                          for name, run in {**runs, **specialist_runs}.items()},
                         [single_name(args.retriever)], ["all gold", "gold recall"])
    if args.specialist and args.specialist_readers > 0:
        readers = balanced_sample(questions, args.specialist_readers, key=type_of, seed=args.seed)
        rows.update(reader_rows({single_name(args.retriever): runs[single_name(args.retriever)],
                                 SELF_ASK_CHOSEN_RUNG: specialist_runs[SELF_ASK_CHOSEN_RUNG]},
                                readers, models.chat_model(), rec))
        info["specialist_readers"] = len(readers)
    if llm_questions:
        single = runs[single_name(args.retriever)]
        iterative = runs[iterative_rung(args.retriever)]
        for name, run in ((f"LLM sample: single-shot {args.retriever}", single),
                          (f"LLM sample: iterative {args.retriever}", iterative)):
            rows[name] = {**evidence_scores(run.ids(), llm_questions), "ms/question": ms(run.seconds, llm_questions)}
        with rec.stage("chat model: load"):
            chat = models.chat_model()
        llm_rows, llm_info = llm_rungs(searches[args.retriever], single, iterative, llm_questions, chat, args, rec)
        rows.update(llm_rows)
        info.update(llm_info, chat_model=getattr(chat, "name", type(chat).__name__))
    extra = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
             "data": str(folder), "questions": len(questions), "llm_questions": len(llm_questions),
             "paragraphs": len(docs), "types": {t: sum(type_of(q) == t for q in questions)
                                                for t in ("bridge", "comparison")},
             "budget": BUDGET, "depth": DEPTH, "follow": FOLLOW, "rrf_k": RRF_K, "references": REFERENCES, **info}
    few_llm = bool(llm_questions) and len(llm_questions) < min(LLM_QUESTIONS, len(questions))
    name = result_name("hotpotqa", subset=not full or few_llm, skip_llm=args.skip_llm) + (
        "-specialist" if args.specialist else "")
    write_result(name, rung_table(rows, COLUMNS), rec, extra, results_dir=args.results_dir, gains=gains)
    print(notes(rows, full=full, tokenizer=args.bm25_tokenizer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
