"""A fine-tuned model saved in a folder, loaded back to answer: the default chat model dequantised for
transformers (the base every specialist was trained from), a saved adapter or model with its record, and the
atomic folder every trained model is saved through. Loading needs nothing of the training code (ragkit.train).

Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from functools import cache
from pathlib import Path

from ragkit.config import cache_dir, package_version
from ragkit.errors import ModelNotFound
from ragkit.models.cache import atomic_folder
from ragkit.models.llm import smollm2_path

log = logging.getLogger(__name__)
RECORD_FILE = "finetune.json"  # written last into the folder, which is then renamed into place


def load_base(*, threads: int = 2) -> tuple[object, object]:
    """The default chat model in transformers, float32: dequantised from its GGUF once (~30 s), then cached (~5 s).

    Taught in lessons/09_specialists.ipynb.
    """
    return load_model(prepare_base(), threads=threads)


def prepare_base() -> Path:
    """The folder of the default chat model dequantised for transformers, made the first time (~30 s).

    `make test` runs this before the notebooks: the conversion draws a progress bar that a notebook would show as
    one more output.
    """
    folder = base_model_dir()
    if not (folder / "config.json").exists():
        dequantise_gguf(smollm2_path(), folder)
    return folder


def base_model_dir(gguf: str | Path | None = None) -> Path:
    """The cache folder of a GGUF dequantised for transformers, named by the file and the converting libraries."""
    identity = gguf_identity(Path(gguf) if gguf else smollm2_path())
    versions = [package_version(p) for p in ("transformers", "gguf")]
    key = hashlib.sha256(json.dumps([identity, versions]).encode()).hexdigest()[:12]
    return cache_dir() / f"{Path(identity['gguf']).stem}-transformers-{key}"


def dequantise_gguf(gguf: str | Path, out_dir: str | Path) -> Path:
    """Load a GGUF's weights and tokenizer into transformers and save them as safetensors, atomically."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = Path(gguf)
    if not gguf.is_file():
        raise ModelNotFound(f"no GGUF file at {gguf}")
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    chat_tokenizer(tokenizer, model.config)
    with atomic_folder(Path(out_dir)) as partial:
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial, legacy_format=False)
    log.info("dequantised %s into %s in %.0f s", gguf.name, out_dir, time.perf_counter() - started)
    return Path(out_dir)


def chat_tokenizer(tokenizer, config) -> object:
    """Fix what the GGUF tokenizer gets wrong for chat: no BOS added, end of turn as EOS, a pad token."""
    tokenizer.add_bos_token = False  # llama.cpp adds none (tokenizer.ggml.add_bos_token is false)
    tokenizer.eos_token = tokenizer.convert_ids_to_tokens(config.eos_token_id)  # <|im_end|>, not <|im_start|>
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model(folder: str | Path, *, threads: int = 2) -> tuple[object, object]:
    """A causal LM and its tokenizer from a transformers folder, in eval mode, on `threads` CPU threads."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    folder = Path(folder)
    if not (folder / "config.json").exists():
        raise ModelNotFound(f"no transformers model at {folder} (no config.json)")
    model = AutoModelForCausalLM.from_pretrained(str(folder))
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model.eval()
    return model, tokenizer


@cache
def _sha256(path: str, size: int, mtime: float) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def gguf_identity(path: Path) -> dict:
    """What names a GGUF file: its name, size and sha256 (computed once per process)."""
    if not path.is_file():
        raise ModelNotFound(f"no GGUF file at {path}")
    stat = path.stat()
    return {"gguf": path.name, "bytes": stat.st_size, "sha256": _sha256(str(path), stat.st_size, stat.st_mtime)}


def finetune_record(path: str | Path) -> dict:
    """The record of a finished fine-tuned folder; ModelNotFound for a missing or unfinished one."""
    path = Path(path)
    if path.name.endswith((".partial", ".old")) or not (path / RECORD_FILE).is_file():
        raise ModelNotFound(f"no finished fine-tuned model at {path} (no {RECORD_FILE}: missing, or its "
                            "training was interrupted)")
    return json.loads((path / RECORD_FILE).read_text(encoding="utf-8"))


def load_finetuned(path: str | Path, *, threads: int = 2, merge: bool = True) -> tuple[object, object, dict]:
    """A saved fine-tuned model, its tokenizer and record; a LoRA adapter goes onto its base (merged if asked).

    Taught in lessons/09_specialists.ipynb.
    """
    record = finetune_record(path)
    if record["config"]["method"] == "full":
        model, tokenizer = load_model(path, threads=threads)
        return model, tokenizer, record
    from peft import PeftModel

    base = record["base"]
    if "folder" in base:
        model, tokenizer = load_model(base["folder"], threads=threads)
    else:
        check_base(base, path)
        model, tokenizer = load_base(threads=threads)
    model = PeftModel.from_pretrained(model, str(path))
    model.eval()
    return (model.merge_and_unload() if merge else model), tokenizer, record


def check_base(base: dict, path: str | Path) -> None:
    """Refuse an adapter trained on another GGUF than the installed default chat model."""
    installed = gguf_identity(smollm2_path())
    if base.get("sha256") != installed["sha256"]:
        raise ModelNotFound(f"the model at {path} was trained on {base.get('gguf')} (sha256 "
                            f"{str(base.get('sha256'))[:12]}…), not on the installed {installed['gguf']} "
                            f"({installed['sha256'][:12]}…): train it again")
