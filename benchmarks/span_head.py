"""The pilot's other reader (benchmarks/reader_pilot.py): the chat model's weights with a start/end span
head (LoRA on the layers, a new 2-way linear head), trained to point at the answer in numbered passages instead
of writing it.

The input is "Question: …", the numbered passages ("[1] title: text"), then "Answer: yes no none": causal
attention lets every passage token see the question, and the three option tokens at the end see everything,
so "yes", "no" and "not in the passages" are spans like any other. The answer is the best-scoring span
(start logit + end logit) of at most MAX_ANSWER_TOKENS tokens inside one passage, or an option. Training
maximises the probability of every occurrence of the answer (all its start and end positions).

It lost the pilot to the generative reader (ragkit.generate.reader_specialist): its new head learns slowly from the few
thousand examples an hour of CPU sees (benchmarks/README.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ragkit import Hit
from ragkit.errors import TrainingError
from ragkit.generate import ReaderAnswer
from ragkit.models import finetuned
from ragkit.passages import NOT_IN_PASSAGES, passage_body
from ragkit.train import finetune
from ragkit.train.finetune import FineTuneConfig

OPTIONS = ("yes", "no", "none")
MAX_ANSWER_TOKENS = 16
QUESTION_TOKENS = 64
PASSAGE_TOKENS = 192  # each passage is cut here (at inference too): five passages stay under 1,100 tokens
UNANSWERABLE = -1  # the passage index of a token no answer may start or end on
NEGATIVE = -1e4


@dataclass(frozen=True)
class Encoded:
    """Token ids, and per token its passage (UNANSWERABLE, a passage index, or len(passages)+k for option k) and
    its character span in that passage's body ('title: text')."""

    ids: list[int]
    passage: list[int]
    offsets: list[tuple[int, int]]
    bodies: list[str]

    def option_position(self, option: str) -> int:
        """The token position of an option ('yes', 'no', 'none')."""
        return self.passage.index(len(self.bodies) + OPTIONS.index(option))


def encode(tokenizer, question: str, passages: Sequence[Sequence[str]], *,
           passage_tokens: int = PASSAGE_TOKENS) -> Encoded:
    """The reader's input for a question and (title, text) passages."""
    ids, where, offsets = [], [], []

    def add(text: str, passage: int = UNANSWERABLE, limit: int | None = None) -> None:
        piece = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        for token, span in list(zip(piece["input_ids"], piece["offset_mapping"]))[:limit]:
            ids.append(token), where.append(passage), offsets.append(tuple(span))

    add(f"Question: {' '.join(question.split())}\n", limit=QUESTION_TOKENS)
    bodies = [passage_body(title, text) for title, text in passages]
    for number, body in enumerate(bodies):
        add(f"[{number + 1}]")
        add(" " + body, number, passage_tokens)
        add("\n")
    add("Answer:")
    for k, option in enumerate(OPTIONS):
        add(" " + option, len(bodies) + k)
    offsets = [(max(a - 1, 0), b - 1) if 0 <= p < len(bodies) else (a, b) for (a, b), p in zip(offsets, where)]
    return Encoded(ids, where, offsets, bodies)


def answer_positions(encoded: Encoded, answers: Sequence[str], kind: str) -> tuple[list[int], list[int]]:
    """Every start and end token position of the answers in the passages (or of the option the kind names)."""
    if kind in OPTIONS:
        at = encoded.option_position(kind)
        return [at], [at]
    starts, ends = [], []
    for number, body in enumerate(encoded.bodies):
        tokens = [i for i, p in enumerate(encoded.passage) if p == number]
        for answer in answers:
            for begin in _occurrences(body, answer):
                start = next((i for i in tokens if encoded.offsets[i][1] > begin), None)
                end = next((i for i in tokens if encoded.offsets[i][1] >= begin + len(answer)), None)
                if start is not None and end is not None:
                    starts.append(start), ends.append(end)
    return starts, ends


def _occurrences(text: str, part: str) -> list[int]:
    found, at = [], text.find(part)
    while part and at >= 0:
        found.append(at)
        at = text.find(part, at + 1)
    return found


# --- the model --------------------------------------------------------------------------------------------


def span_head(hidden_size: int):
    """A fresh 2-way linear head (start, end), initialised small and seeded."""
    import torch

    head = torch.nn.Linear(hidden_size, 2)
    torch.nn.init.normal_(head.weight, std=0.02)
    torch.nn.init.zeros_(head.bias)
    return head


def span_logits(model, head, input_ids, attention_mask):
    """Start and end logits (batch, tokens) from the decoder's last hidden states."""
    causal = model.get_base_model() if hasattr(model, "get_base_model") else model
    hidden = causal.get_decoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    logits = head(hidden).float()
    return logits[..., 0], logits[..., 1]


def span_loss(start, end, answerable, start_targets, end_targets):
    """Mean over the batch of -log P(any gold start) - log P(any gold end), softmax over answerable tokens."""
    def part(logits, targets):
        logits = logits.masked_fill(~answerable, NEGATIVE)
        gold = logits.masked_fill(~targets, NEGATIVE)
        return (logits.logsumexp(-1) - gold.logsumexp(-1)).mean()

    return (part(start, start_targets) + part(end, end_targets)) / 2


def example_of(tokenizer, record: dict, *, passage_tokens: int = PASSAGE_TOKENS) -> tuple | None:
    """(ids, answerable, starts, ends) of a training record; None if its answer is not in the cut passages."""
    encoded = encode(tokenizer, record["question"], record["passages"], passage_tokens=passage_tokens)
    starts, ends = answer_positions(encoded, record["answers"], record["kind"])
    if not starts:
        return None
    return encoded.ids, [p != UNANSWERABLE for p in encoded.passage], starts, ends


def pad_examples(examples: Sequence[tuple], pad_id: int) -> dict:
    """Right-padded tensors of a batch: ids, attention mask, answerable mask, start and end target masks."""
    import torch

    width = max(len(e[0]) for e in examples)
    shape = (len(examples), width)
    batch = {"input_ids": torch.full(shape, pad_id), "attention_mask": torch.zeros(shape, dtype=torch.long)}
    for name in ("answerable", "starts", "ends"):
        batch[name] = torch.zeros(shape, dtype=torch.bool)
    for row, (ids, answerable, starts, ends) in enumerate(examples):
        batch["input_ids"][row, : len(ids)] = torch.tensor(ids)
        batch["attention_mask"][row, : len(ids)] = 1
        batch["answerable"][row, : len(ids)] = torch.tensor(answerable)
        batch["starts"][row, starts] = True
        batch["ends"][row, ends] = True
    return batch


@dataclass(frozen=True)
class TrainedReader:
    """A span reader fresh from training: LoRA model, head, tokenizer, report, config and base."""

    model: object
    head: object
    tokenizer: object
    report: finetune.TrainReport
    config: FineTuneConfig
    base: dict


def train_reader(records: Sequence[dict], *, config: FineTuneConfig, threads: int = 2,
                 progress: bool = True) -> TrainedReader:
    """LoRA + a new span head on the default chat model, trained on reader records."""
    import torch
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    model, tokenizer = finetuned.load_base(threads=threads)
    examples = [e for e in (example_of(tokenizer, r) for r in records) if e]
    examples = [e for e in examples if len(e[0]) <= config.max_length]
    skipped, usable = len(records) - len(examples), len(examples)
    if usable < config.batch_size:
        raise TrainingError(f"only {usable} usable reader examples, fewer than one batch of {config.batch_size}")
    torch.manual_seed(config.seed)
    model = finetune.trainable(model, config)
    head = span_head(model.config.hidden_size)
    batches = finetune.batch_plan([len(e[0]) for e in examples], config)
    trained = [p for p in model.parameters() if p.requires_grad] + list(head.parameters())
    optimizer = torch.optim.AdamW(trained, lr=config.learning_rate, weight_decay=0.0)
    schedule = get_linear_schedule_with_warmup(optimizer, int(config.warmup_share * len(batches)), len(batches))
    losses, tokens, started = [], 0, time.perf_counter()
    model.train()
    for batch in tqdm(batches, desc="training the reader", disable=not progress):
        with finetune.memory_errors(config):
            inputs = pad_examples([examples[i] for i in batch], tokenizer.pad_token_id)
            start, end = span_logits(model, head, inputs["input_ids"], inputs["attention_mask"])
            loss = span_loss(start, end, inputs["answerable"], inputs["starts"], inputs["ends"])
            loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        optimizer.step(), schedule.step(), optimizer.zero_grad()
        losses.append(round(loss.item(), 5))
        tokens += int(inputs["attention_mask"].sum())
    model.eval()
    seconds = time.perf_counter() - started
    window = max(1, min(finetune.SMOOTHING, len(losses) // 4))
    report = finetune.TrainReport(config.method, len(batches), sum(map(len, batches)), usable, skipped, tokens,
                                  2 * sum(map(len, batches)), seconds, tokens / seconds if seconds else 0.0,
                                  float(np.mean(losses[:window])), float(np.mean(losses[-window:])), tuple(losses))
    return TrainedReader(model, head, tokenizer, report, config, finetune.base_identity(None))


# --- answering --------------------------------------------------------------------------------------------


def best_span(start: np.ndarray, end: np.ndarray, encoded: Encoded, *,
              max_tokens: int = MAX_ANSWER_TOKENS) -> tuple[int, int, float]:
    """(start, end, score) of the best span within one passage, or of the best option (start == end)."""
    passage = np.array(encoded.passage)
    options = passage >= len(encoded.bodies)
    best = (int(np.argmax(np.where(options, start + end, -np.inf))), 0, -np.inf)
    best = (best[0], best[0], float(start[best[0]] + end[best[0]]))
    inside = (passage >= 0) & ~options
    for width in range(max_tokens):
        same = inside[: len(passage) - width] & (passage[: len(passage) - width] == passage[width:])
        if not same.any():
            continue
        scores = np.where(same, start[: len(passage) - width] + end[width:], -np.inf)
        at = int(np.argmax(scores))
        if scores[at] > best[2]:
            best = (at, at + width, float(scores[at]))
    return best


def span_text(encoded: Encoded, first: int, last: int) -> tuple[str, int | None]:
    """The answer a span stands for, and its passage (None for an option)."""
    number = encoded.passage[first]
    if number >= len(encoded.bodies):
        option = OPTIONS[number - len(encoded.bodies)]
        return (NOT_IN_PASSAGES if option == "none" else option), None
    body = encoded.bodies[number]
    text = body[encoded.offsets[first][0]: encoded.offsets[last][1]]
    return text.strip().strip(" ,;:").rstrip("."), number


class SpanReader:
    """A trained span reader behind ragkit.generate.reader.Reader: answer(question, hits) -> ReaderAnswer."""

    def __init__(self, model, head, tokenizer, *, name: str = "reader specialist", path: Path | None = None,
                 record: dict | None = None, passage_tokens: int = PASSAGE_TOKENS):
        self.model, self.head, self.tokenizer = model, head, tokenizer
        self.name, self.path, self.record, self.passage_tokens = name, path, record or {}, passage_tokens

    def answer(self, question: str, hits: Sequence[Hit]) -> ReaderAnswer:
        """The best span of the hits' passages, 'yes', 'no' or NOT_IN_PASSAGES."""
        return self.answer_passages(question, [(hit.doc.title, hit.doc.text) for hit in hits])

    def answer_passages(self, question: str, passages: Sequence[Sequence[str]]) -> ReaderAnswer:
        """The same for (title, text) passages."""
        import torch

        if not question or not question.strip():
            raise ValueError("the question is empty")
        started = time.perf_counter()
        encoded = encode(self.tokenizer, question, passages, passage_tokens=self.passage_tokens)
        with torch.inference_mode():
            ids = torch.tensor([encoded.ids])
            start, end = span_logits(self.model, self.head, ids, torch.ones_like(ids))
        first, last, score = best_span(start[0].numpy(), end[0].numpy(), encoded)
        text, passage = span_text(encoded, first, last)
        return ReaderAnswer(text, passage, score, time.perf_counter() - started)
