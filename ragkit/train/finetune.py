"""Fine-tuning the course's chat model on CPU for one narrow job: LoRA or full fine-tuning with the loss on the
answer alone, saved atomically into a folder that ragkit.models.finetuned loads back.

A training record is one chat: {"messages": [{"role": ..., "content": ...}, ...], "answer": "..."}; the
messages are the prompt, the answer is what the model should reply (other keys are kept, not read).
Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import json
import logging
import random
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ragkit.config import package_version
from ragkit.corpus import read_jsonl
from ragkit.errors import ConfigError, CorpusError, TrainingError
from ragkit.evaluate.metrics import mean
from ragkit.models.cache import atomic_folder
from ragkit.models.finetuned import RECORD_FILE, gguf_identity, load_base, load_model
from ragkit.models.llm import smollm2_path

log = logging.getLogger(__name__)


METHODS = ("lora", "full")
LLAMA_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
IGNORE = -100  # the label of a token that does not count in the loss
VERSIONED = ("torch", "transformers", "peft", "gguf")
GROUPED = 16  # batches are formed by length within windows of this many batches
SMOOTHING = 10  # first_loss and last_loss are means over this many steps (a quarter of the steps if fewer)


@dataclass(frozen=True, kw_only=True)
class FineTuneConfig:
    """How a model is fine-tuned; the defaults are deterministic (fixed seed, no dropout)."""

    method: str = "lora"  # 'lora': small adapter matrices on the projections; 'full': every weight but the embeddings
    learning_rate: float = 5e-4  # for LoRA; full fine-tuning wants ~1e-4
    epochs: int = 1
    max_steps: int = 0  # if above 0, train exactly this many steps (cycling over the data), whatever epochs says
    batch_size: int = 8
    max_length: int = 256  # longer examples are skipped (and counted), never cut mid-answer
    warmup_share: float = 0.05
    lora_rank: int = 16
    lora_alpha: float = 32.0
    lora_targets: tuple[str, ...] = LLAMA_PROJECTIONS
    frozen_layers: int = 0  # the lowest layers stay as they are (no adapters, no updates): backward stops above them
    seed: int = 0

    def __post_init__(self):
        if self.method not in METHODS:
            raise ConfigError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        for name in ("learning_rate", "batch_size", "max_length", "lora_rank", "lora_alpha"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be above 0, got {getattr(self, name)!r}")
        if self.epochs < 1 and self.max_steps < 1:
            raise ConfigError("give epochs >= 1 or max_steps >= 1")
        if self.frozen_layers < 0:
            raise ConfigError(f"frozen_layers must be 0 or more, got {self.frozen_layers!r}")


@dataclass(frozen=True)
class TrainReport:
    """What a fine-tuning run did and cost; `losses` is the per-step loss curve, for a plot."""

    method: str
    steps: int
    examples: int  # examples the steps went through (an example seen twice counts twice)
    train_examples: int  # distinct examples used
    skipped: int  # examples longer than max_length, left out
    tokens: int  # tokens the steps went through (no padding)
    answer_tokens: int  # of those, the ones the loss counted
    seconds: float
    tokens_per_second: float
    first_loss: float
    last_loss: float
    losses: tuple[float, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class Trained:
    """A model fresh from training, still in memory, with its tokenizer, report, config and base."""

    model: object
    tokenizer: object
    report: TrainReport
    config: FineTuneConfig
    base: dict


def read_records(path: str | Path) -> list[dict]:
    """Training records from a JSONL file; a malformed one is an error naming the file and line."""
    records = read_jsonl(path)
    lines = [n for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    for record, line in zip(records, lines):
        check_record(record, where=f"{path}:{line}")
    return records


def check_record(record: dict, *, where: str) -> dict:
    """Refuse a record without a list of role/content messages and a non-empty answer; `where` names it."""
    messages = record.get("messages") if isinstance(record, dict) else None
    if not isinstance(messages, list) or not messages:
        raise CorpusError(f"{where}: a training record needs a non-empty list of messages")
    for message in messages:
        if not (isinstance(message, dict) and isinstance(message.get("role"), str)
                and isinstance(message.get("content"), str)):
            raise CorpusError(f"{where}: every message needs a role and a content string, got {message!r}")
    if not isinstance(record.get("answer"), str) or not record["answer"].strip():
        raise CorpusError(f"{where}: a training record needs a non-empty answer string")
    return record


def encode_example(tokenizer, messages: Sequence[dict], answer: str) -> tuple[list[int], list[int]]:
    """Token ids of the chat (prompt, then answer) and labels that count the answer and its end-of-turn only.

    Taught in lessons/09_specialists.ipynb.
    """
    prompt = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    whole = tokenizer.apply_chat_template([*messages, {"role": "assistant", "content": answer}], tokenize=False)
    if not whole.startswith(prompt):
        raise TrainingError("the tokenizer's chat template does not put the answer after the prompt")
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]  # tokenized as at inference
    answer_ids = tokenizer(whole[len(prompt):], add_special_tokens=False)["input_ids"]
    if tokenizer.eos_token_id in answer_ids:  # keep the end-of-turn token (the model learns to stop), not what follows
        answer_ids = answer_ids[: answer_ids.index(tokenizer.eos_token_id) + 1]
    return prompt_ids + answer_ids, [IGNORE] * len(prompt_ids) + answer_ids


def encode_records(records: Sequence[dict], tokenizer, *, max_length: int) -> tuple[list[tuple], int]:
    """Encoded examples of the records that fit in max_length, and how many did not."""
    examples, skipped = [], 0
    for number, record in enumerate(records, start=1):
        check_record(record, where=f"training record {number}")
        ids, labels = encode_example(tokenizer, record["messages"], record["answer"])
        if len(ids) > max_length:
            skipped += 1
            continue
        examples.append((ids, labels))
    if skipped:
        log.warning("skipped %d of %d examples longer than max_length=%d tokens", skipped, len(records), max_length)
    return examples, skipped


def check_enough(examples: list, skipped: int, config: FineTuneConfig) -> None:
    """Refuse to train on nothing, or on fewer examples than one batch."""
    if not examples and skipped:
        raise TrainingError(f"all {skipped} examples are longer than max_length={config.max_length} tokens: "
                            "raise FineTuneConfig.max_length or shorten the prompts")
    if not examples:
        raise TrainingError("no training records: give at least one batch of examples")
    if len(examples) < config.batch_size:
        raise TrainingError(f"only {len(examples)} usable training examples, fewer than one batch "
                            f"(batch_size={config.batch_size}): give more examples or a smaller batch_size")


def fine_tune(records: Sequence[dict], out_dir: str | Path, *, config: FineTuneConfig = FineTuneConfig(),
              base: str | Path | None = None, threads: int = 2, progress: bool = True) -> TrainReport:
    """Train on chat records and save the result atomically to out_dir (see train and save_finetuned).

    Taught in lessons/09_specialists.ipynb.
    """
    trained = train(records, config=config, base=base, threads=threads, progress=progress)
    save_finetuned(trained, out_dir)
    return trained.report


def train(records: Sequence[dict], *, config: FineTuneConfig = FineTuneConfig(), base: str | Path | None = None,
          threads: int = 2, progress: bool = True) -> Trained:
    """Fine-tune the base (a transformers folder, else the default chat model) in memory, loss on answers only.

    Taught in lessons/09_specialists.ipynb.
    """
    import torch
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    model, tokenizer = load_model(base, threads=threads) if base else load_base(threads=threads)
    examples, skipped = encode_records(records, tokenizer, max_length=config.max_length)
    check_enough(examples, skipped, config)
    torch.manual_seed(config.seed)
    model = trainable(model, config)
    batches = batch_plan([len(ids) for ids, _ in examples], config)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.learning_rate,
                                  weight_decay=0.0)
    schedule = get_linear_schedule_with_warmup(optimizer, int(config.warmup_share * len(batches)), len(batches))
    losses, tokens, answer_tokens, started = [], 0, 0, time.perf_counter()
    model.train()
    for batch in tqdm(batches, desc=f"fine-tuning ({config.method})", disable=not progress):
        with memory_errors(config):
            inputs = pad_batch([examples[i] for i in batch], tokenizer.pad_token_id)
            loss = answer_loss(model, inputs)
            loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
        optimizer.step(), schedule.step(), optimizer.zero_grad()
        losses.append(round(loss.item(), 5))
        tokens += int(inputs["attention_mask"].sum())
        answer_tokens += int((inputs["labels"] != IGNORE).sum())
    model.eval()
    seconds = time.perf_counter() - started
    window = max(1, min(SMOOTHING, len(losses) // 4))
    report = TrainReport(config.method, len(batches), sum(map(len, batches)), len(examples), skipped, tokens,
                         answer_tokens, seconds, tokens / seconds if seconds else 0.0,
                         mean(losses[:window]), mean(losses[-window:]), tuple(losses))
    log.info("fine-tuned %d steps in %.0f s (%.0f tokens/s), loss %.3f -> %.3f", report.steps, seconds,
             report.tokens_per_second, report.first_loss, report.last_loss)
    return Trained(model, tokenizer, report, config, base_identity(base))


def trainable(model, config: FineTuneConfig):
    """The model ready to train: LoRA adapters on the projections, or every weight unfrozen; the embeddings and
    the lowest frozen_layers layers stay as they are."""
    layers = model.config.num_hidden_layers
    if not config.frozen_layers < layers:
        raise ConfigError(f"frozen_layers={config.frozen_layers} leaves nothing to train in a {layers}-layer model")
    if config.method == "lora":
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha, lora_dropout=0.0,
                          target_modules=list(config.lora_targets), task_type="CAUSAL_LM",
                          layers_to_transform=list(range(config.frozen_layers, layers)))
        return get_peft_model(model, lora)
    model.requires_grad_(True)
    model.get_input_embeddings().requires_grad_(False)  # tied to the output layer in SmolLM2: both stay
    for layer in model.get_decoder().layers[: config.frozen_layers]:
        layer.requires_grad_(False)
    return model


def answer_loss(model, inputs: dict):
    """Mean cross-entropy of the answer tokens, the output layer run on answer positions only (Llama-style
    models, logits = lm_head(hidden)): the same loss as transformers', without the logits nobody reads."""
    import torch

    causal = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder = causal.get_decoder()
    hidden = decoder(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).last_hidden_state
    targets = inputs["labels"][:, 1:]
    counted = targets != IGNORE
    logits = causal.get_output_embeddings()(hidden[:, :-1][counted])
    return torch.nn.functional.cross_entropy(logits.float(), targets[counted])


def batch_plan(lengths: Sequence[int], config: FineTuneConfig) -> list[list[int]]:
    """Example indices per step: each epoch a seeded shuffle, batches of similar length (padding costs ~25% of the
    compute otherwise) taken from windows of GROUPED batches, in shuffled order; max_steps cycles on."""
    rng, count, window = random.Random(config.seed), len(lengths), config.batch_size * GROUPED
    batches: list[list[int]] = []
    epoch = 0
    while (config.max_steps and len(batches) < config.max_steps) or (not config.max_steps and epoch < config.epochs):
        order = rng.sample(range(count), count)
        epoch_batches = []
        for start in range(0, count, window):
            ranked = sorted(order[start: start + window], key=lambda i: lengths[i])
            epoch_batches += [ranked[i: i + config.batch_size] for i in range(0, len(ranked), config.batch_size)]
        batches += rng.sample(epoch_batches, len(epoch_batches))
        epoch += 1
    return batches[: config.max_steps] if config.max_steps else batches


def pad_batch(examples: Sequence[tuple[list[int], list[int]]], pad_id: int) -> dict:
    """Right-padded tensors: input_ids, attention_mask, and labels with padding ignored."""
    import torch

    width = max(len(ids) for ids, _ in examples)
    ids = [list(i) + [pad_id] * (width - len(i)) for i, _ in examples]
    labels = [list(lab) + [IGNORE] * (width - len(lab)) for _, lab in examples]
    mask = [[1] * len(i) + [0] * (width - len(i)) for i, _ in examples]
    return {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask), "labels": torch.tensor(labels)}


@contextmanager
def memory_errors(config: FineTuneConfig) -> Iterator[None]:
    """Turn torch's out-of-memory errors into a TrainingError that names the batch_size setting."""
    try:
        yield
    except (MemoryError, RuntimeError) as err:
        text = str(err).lower()
        if not isinstance(err, MemoryError) and "out of memory" not in text and "allocate" not in text:
            raise
        raise TrainingError(f"ran out of memory with batch_size={config.batch_size} and max_length="
                            f"{config.max_length}: lower FineTuneConfig(batch_size=...) (e.g. "
                            f"{max(config.batch_size // 2, 1)}) or max_length") from err


def training_code() -> str:
    """The source of the functions that decide the trained weights (a docstring edit elsewhere trains nothing)."""
    import inspect

    return "\n".join(inspect.getsource(f) for f in (encode_example, train, trainable, answer_loss, batch_plan,
                                                     pad_batch))


def base_identity(base: str | Path | None) -> dict:
    """What a fine-tuned model was trained from: the default GGUF (name, size, sha256) or a folder."""
    return {"folder": str(Path(base).resolve())} if base else gguf_identity(smollm2_path())


def save_finetuned(trained: Trained, out_dir: str | Path, *, extra: Callable[[Path], None] | None = None) -> Path:
    """Save the adapter (LoRA) or the weights and tokenizer (full), the record, and `extra` files, atomically.

    Taught in lessons/09_specialists.ipynb.
    """
    out_dir = Path(out_dir)
    with atomic_folder(out_dir) as partial:
        trained.model.save_pretrained(partial)
        if trained.config.method == "full":
            trained.tokenizer.save_pretrained(partial, legacy_format=False)
        if extra:
            extra(partial)
        record = {"report": asdict(trained.report), "config": asdict(trained.config), "base": trained.base,
                  "versions": {p: package_version(p) for p in VERSIONED}}
        (partial / RECORD_FILE).write_text(json.dumps(record, indent=1), encoding="utf-8")
    return out_dir
