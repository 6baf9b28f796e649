"""HotpotQA retrieval without a chat model: weighted fusion and link-following, chosen on train100, scored on dev500.

What it measures, how to run it (`python -m benchmarks.hotpotqa_fusion`) and what it recorded: benchmarks/README.md.
"""

from __future__ import annotations

import itertools
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchmarks.harness import (
    ExactDense,
    StageRecorder,
    add_output_options,
    benchmark_parser,
    bm25_search,
    data_folder,
    encode_corpus,
    per_question_run,
    significance,
    write_result,
)
from benchmarks.hotpotqa_data import (
    DATASET,
    DEV_FILES,
    TRAIN_FILES,
    TYPES,
    evidence_value,
    load_hotpotqa,
    load_train100,
    type_of,
)
from ragkit import Doc, Hit, Question, models, search_tokenize
from ragkit.search import RRF_K, BM25Index, reciprocal_rank_fusion

BUDGET = 5
DEPTH = 50  # each leg's ranking is cut here
KS = (10, 30, 60)
DENSE_WEIGHTS = (1.0, 1.5, 2.0, 3.0)
LINK_SOURCES = (0, 1, 2, 3)  # top fused hits whose mentioned titles are followed (0: no link-following)
LINK_WEIGHTS = (0.25, 0.5, 1.0)
MIN_TITLE = 4  # shorter titles ("It", "Up") would be "mentioned" everywhere


@dataclass(frozen=True)
class Setting:
    """One way to fuse: RRF constant k, dense weight against BM25's 1, link sources and the link leg's weight."""

    k: int
    dense: float
    links: int
    link_weight: float

    def __str__(self) -> str:
        links = f"links from the top {self.links}, weight {self.link_weight:g}" if self.links else "no links"
        return f"k={self.k}, dense weight {self.dense:g}, {links}"


def grid() -> list[Setting]:
    """Every setting; plain RRF (k=60, weight 1, no links) first, so a tie keeps it."""
    plain = Setting(RRF_K, 1.0, 0, 0.0)
    tried = [Setting(k, dense, 0, 0.0) for k, dense in itertools.product(KS, DENSE_WEIGHTS)]
    tried += [Setting(k, dense, n, w) for k, dense, n, w in itertools.product(KS, DENSE_WEIGHTS, LINK_SOURCES[1:],
                                                                               LINK_WEIGHTS)]
    return [plain] + [s for s in tried if s != plain]


# --- links -------------------------------------------------------------------------------------------


def link_key(title: str) -> str:
    """A title as the text would mention it: without a trailing "(disambiguation)" part."""
    return re.sub(r"\s*\([^)]*\)\s*$", "", title).strip()


class Links:
    """Which paragraphs' titles each paragraph's text mentions (whole words, case kept)."""

    def __init__(self, docs: Sequence[Doc]):
        by_key: dict[str, list[Doc]] = {}
        for doc in docs:
            key = link_key(doc.title)
            if len(key) >= MIN_TITLE:
                by_key.setdefault(key, []).append(doc)
        self.by_key = by_key
        self._pattern = {key: re.compile(rf"(?<!\w){re.escape(key)}(?!\w)") for key in by_key}
        self._cache: dict[str, list[Doc]] = {}

    def mentioned(self, doc: Doc) -> list[Doc]:
        """The other paragraphs whose title doc's text mentions, in the order the text mentions them."""
        if doc.id not in self._cache:
            found = sorted((m.start(), key) for key in self.by_key if key in doc.text
                           for m in [self._pattern[key].search(doc.text)] if m)
            self._cache[doc.id] = [other for _, key in found for other in self.by_key[key] if other.id != doc.id]
        return self._cache[doc.id]


def linked_ranking(top: Sequence[Hit], links: Links, dense_rank: Mapping[str, int], sources: int) -> list[Hit]:
    """The paragraphs the first `sources` hits mention, not already among them, best dense rank first."""
    seen = {hit.id for hit in top[:sources]}
    linked: dict[str, Doc] = {}
    for hit in top[:sources]:
        for doc in links.mentioned(hit.doc):
            if doc.id not in seen:
                linked.setdefault(doc.id, doc)
    order = sorted(linked, key=lambda doc_id: dense_rank.get(doc_id, DEPTH))  # stable: ties keep mention order
    return [Hit(linked[doc_id], 0.0) for doc_id in order]


# --- one question, one setting ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Legs:
    """A question's BM25 and dense rankings (DEPTH each)."""

    bm25: list[Hit]
    dense: list[Hit]


def evidence(legs: Legs, setting: Setting, links: Links) -> list[Hit]:
    """The top BUDGET of the weighted fusion, with the linked paragraphs as a third leg when the setting asks."""
    rankings, weights = [legs.bm25, legs.dense], [1.0, setting.dense]
    fused = reciprocal_rank_fusion(rankings, k=setting.k, weights=weights, limit=DEPTH)
    if not setting.links:
        return fused[:BUDGET]
    dense_rank = {hit.id: rank for rank, hit in enumerate(legs.dense)}
    linked = linked_ranking(fused, links, dense_rank, setting.links)
    return reciprocal_rank_fusion([*rankings, linked], k=setting.k, weights=[*weights, setting.link_weight],
                                  limit=BUDGET)


def per_question_values(hits: Sequence[Hit], question: Question) -> dict[str, float]:
    """all-gold@5 (1 if every gold paragraph is among the hits) and the share of gold found."""
    return evidence_value([hit.id for hit in hits], question)


def scores(legs: Mapping[str, Legs], questions: Sequence[Question], setting: Setting, links: Links) -> dict:
    """Per question id: all-gold@5 and gold recall of one setting's evidence."""
    return {q.id: per_question_values(evidence(legs[q.id], setting, links), q) for q in questions}


def type_means(values: Mapping[str, Mapping[str, float]], questions: Sequence[Question], metric: str) -> dict:
    """The mean of metric over the questions of each type that has any."""
    by_type = {t: [values[q.id][metric] for q in questions if type_of(q) == t] for t in TYPES}
    return {t: sum(v) / len(v) for t, v in by_type.items() if v}


def balanced(values: Mapping[str, Mapping[str, float]], questions: Sequence[Question], metric: str) -> float:
    """The mean of metric within each question type, then over the types present (each type weighs the same)."""
    present = type_means(values, questions, metric)
    if not present:
        raise ValueError(f"no question has a type among {', '.join(TYPES)}")
    return sum(present.values()) / len(present)


# --- data, retrievers, the choice and the rungs -----------------------------------------------------------


def retrieve(docs: Sequence[Doc], questions: Sequence[Question], embedder, rec: StageRecorder,
             label: str) -> tuple[dict[str, Legs], dict[str, float]]:
    """Each question's BM25 and dense rankings over the docs (passage vectors from the cache), and the
    seconds per question each leg's search took (query encoding included)."""
    with rec.stage(f"{label}: BM25 index", items=len(docs)):
        bm25 = bm25_search(BM25Index(docs, tokenizer=search_tokenize))
    passages, _ = encode_corpus(embedder, docs, rec, f"{label} dense")
    dense = ExactDense(docs, passages, embedder)
    rankings, seconds = {}, {}
    for leg, search in (("bm25", bm25), ("dense", dense.search)):
        started = time.perf_counter()
        with rec.stage(f"{label}: {leg} search", items=len(questions)):
            rankings[leg] = {q.id: search(q.query, k=DEPTH) for q in questions}
        seconds[leg] = (time.perf_counter() - started) / len(questions)
    return {q.id: Legs(rankings["bm25"][q.id], rankings["dense"][q.id]) for q in questions}, seconds


def choose(legs: Mapping[str, Legs], questions: Sequence[Question], links: Links,
           rec: StageRecorder) -> tuple[Setting, list[dict]]:
    """The setting with the best type-balanced all-gold@5 on these questions, and every setting's scores."""
    settings, tried = grid(), []
    with rec.stage("train100: every setting", items=len(settings)):
        for setting in settings:
            values = scores(legs, questions, setting, links)
            tried.append({"setting": str(setting), "balanced all gold": balanced(values, questions, "all gold"),
                          **type_means(values, questions, "all gold")})
    best = max(range(len(settings)), key=lambda i: (tried[i]["balanced all gold"], -i))
    return settings[best], sorted(tried, key=lambda row: -row["balanced all gold"])


HYBRID = "hybrid: RRF k=60 of BM25 + e5"


def dev_rungs(legs: Mapping[str, Legs], questions: Sequence[Question], chosen: Setting, links: Links,
              rec: StageRecorder) -> tuple[dict[str, dict], dict[str, float]]:
    """Per question values of the dev rungs (each leg alone, the plain hybrid, the chosen weights without
    links, the chosen setting) and each rung's seconds per question beyond the two searches."""
    no_links = Setting(chosen.k, chosen.dense, 0, 0.0)
    rungs = {"BM25 alone": lambda one: one.bm25[:BUDGET], "dense e5 alone": lambda one: one.dense[:BUDGET],
             HYBRID: lambda one: evidence(one, Setting(RRF_K, 1.0, 0, 0.0), links),
             f"weighted hybrid, {no_links}": lambda one: evidence(one, no_links, links),
             f"chosen on train100: {chosen}": lambda one: evidence(one, chosen, links)}
    values, seconds = {}, {}
    for name, pipeline in rungs.items():  # each rung's own work: the legs it uses are added by the caller
        started = time.perf_counter()
        with rec.stage(f"dev500: {name}", items=len(questions)):
            values[name] = {q.id: per_question_values(pipeline(legs[q.id]), q) for q in questions}
        seconds[name] = (time.perf_counter() - started) / len(questions)
    return values, seconds


def table(values: Mapping[str, Mapping[str, Mapping[str, float]]], questions: Sequence[Question],
          seconds: Mapping[str, float]) -> list[dict]:
    """One row per rung: all gold overall and per type, gold recall, ms per question."""
    rows = []
    for name, per_question in values.items():
        run = per_question_run({q.id: per_question[q.id] for q in questions})
        by_type = type_means(per_question, questions, "all gold")
        rows.append({"rung": name, "questions": len(questions), "all gold": run.means["all gold"],
                     **{t: by_type.get(t, "") for t in TYPES},
                     "gold recall": run.means["gold recall"], "ms/question": 1000 * seconds[name]})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Choose on train100, score once on dev500, print and write results/hotpotqa-fusion.json."""
    parser = benchmark_parser(__doc__.split("\n", 1)[0], DATASET, "HotpotQA")
    add_output_options(parser)
    args = parser.parse_args(argv)
    folder = data_folder(args.data, DATASET, DEV_FILES + TRAIN_FILES)
    rec = StageRecorder()
    with rec.stage("load train100 and dev500"):
        train, train_docs = load_train100(folder)
        dev, dev_docs = load_hotpotqa(folder)
    with rec.stage("load embedder"):
        embedder = models.embedder()
    train_legs, _ = retrieve(train_docs, train, embedder, rec, "train100")
    chosen, tried = choose(train_legs, train, Links(train_docs), rec)
    print(f"chosen on train100: {chosen} (type-balanced all-gold@5 {tried[0]['balanced all gold']:.3f})",
          file=sys.stderr)
    dev_legs, leg_seconds = retrieve(dev_docs, dev, embedder, rec, "dev500")
    with rec.stage("dev500: find the titles each paragraph mentions", items=len(dev_docs)):
        links = Links(dev_docs)
        for doc in dev_docs:
            links.mentioned(doc)
    values, seconds = dev_rungs(dev_legs, dev, chosen, links, rec)
    legs_used = {"BM25 alone": leg_seconds["bm25"], "dense e5 alone": leg_seconds["dense"]}
    seconds = {name: legs_used.get(name, sum(leg_seconds.values())) + spent for name, spent in seconds.items()}
    gains = significance({name: per_question_run(v) for name, v in values.items()}, [HYBRID],
                         ["all gold", "gold recall"])
    extra = {"chosen": {"k": chosen.k, "dense_weight": chosen.dense, "link_sources": chosen.links,
                        "link_weight": chosen.link_weight, "setting": str(chosen)},
             "train_questions": len(train), "train_paragraphs": len(train_docs), "dev_questions": len(dev),
             "dev_paragraphs": len(dev_docs),
             "dev_titles_mentioned_per_paragraph": sum(len(links.mentioned(doc)) for doc in dev_docs) / len(dev_docs),
             "budget": BUDGET, "depth": DEPTH, "embedder": embedder.name,
             "ms_note": "the searches a rung uses (query encoding included) plus its fusion; the titles each paragraph "
                        "mentions are found once, at indexing (stage 'dev500: find the titles ...')",
             "train100_settings_best_first": tried}
    write_result("hotpotqa-fusion", table(values, dev, seconds), rec, extra, results_dir=args.results_dir,
                 gains=gains)
    return 0


if __name__ == "__main__":
    sys.exit(main())
