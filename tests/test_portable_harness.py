"""tests/portable/sitecustomize.py: the harness modes `make test-portable` and `make test-greedy-batch` run under."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PORTABLE = Path(__file__).resolve().with_name("portable")
ROOT = PORTABLE.parents[1]


def run_with_harness(code: str, *arguments: str, **variables: str) -> subprocess.CompletedProcess:
    """code in a fresh interpreter with tests/portable on the path and these HARNESS_ variables (the rest unset):
    the harness acts at start-up, and must not patch the process running the tests."""
    unset = {name: "" for name in ("HARNESS_CHAT_SEED", "HARNESS_CHAT_BATCH", "HARNESS_CHAT_SHARE",
                                   "HARNESS_EMBEDDING_NOISE", "HARNESS_SCORE_NOISE")}
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(PORTABLE)]), **unset, **variables}
    return subprocess.run([sys.executable, "-c", code, *arguments], env=environment, capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


PROBE = """
import json
from ragkit.models.llm import LlamaCppChat

asked = []
def record(self, messages, **options):
    asked.append({"seed": self.seed, "temperature": options.get("temperature", 0.0)})
    return None

LlamaCppChat.chat = record
import sitecustomize
sitecustomize._install_chat_seed(7)
chat = LlamaCppChat.__new__(LlamaCppChat)
chat.seed = 0
for n in range(400):
    chat.chat([{"role": "user", "content": f"question {n}"}], max_tokens=40)
chat.chat([{"role": "user", "content": "question 0"}], max_tokens=40)
print(json.dumps({"asked": asked, "harness": getattr(LlamaCppChat, "harness", ""), "seed_after": chat.seed}))
"""


def probe(share: str) -> dict:
    """What the harness did to 401 requests (the first repeated last) with HARNESS_CHAT_SHARE=share."""
    run = run_with_harness(PROBE, HARNESS_CHAT_SHARE=share)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.parametrize("share, low, high", [("0.3", 0.22, 0.38), ("1", 1.0, 1.0)])
def test_the_harness_reseeds_about_its_share_of_the_requests(share, low, high):
    seen = probe(share)
    reseeded = [a for a in seen["asked"][:400] if a["seed"] == 7]
    assert low <= len(reseeded) / 400 <= high
    # a reseeded request samples (temperature 0.5); every other one is left greedy with the model's own seed
    assert all(a["temperature"] == 0.5 for a in reseeded)
    assert all(a == {"seed": 0, "temperature": 0.0} for a in seen["asked"][:400] if a["seed"] != 7)
    assert seen["seed_after"] == 0


def test_the_same_request_is_always_treated_the_same():
    seen = probe("0.3")
    assert seen["asked"][400] == seen["asked"][0]


def test_a_reseeded_run_names_itself_so_its_fingerprint_never_matches_the_recording():
    assert probe("0.3")["harness"] == "reseeded by 7, share 0.3"


NOISE_PROBE = """
import json, sys
import numpy as np
from ragkit.models import resolve

calls = []
class Fake:
    name, dim = "fake", 4
    def embed_passages(self, texts):
        calls.append(list(texts))
        return np.array([[1.0, 0.0, 0.0, 0.0] for _ in texts], dtype=np.float32)
    embed_queries = embed_passages

resolve._load_embedder = lambda *args, **kwargs: Fake()  # the harness, installed at start-up, calls it
first = resolve._embedder("fake", 2, "", sys.argv[1]).embed_passages(["a", "b"])
resolve._embedder.cache_clear()  # as a later notebook's kernel: a new process with the same store
again = resolve._embedder("fake", 2, "", sys.argv[1]).embed_passages(["a", "b"])
clean = resolve._embedder.__wrapped__("fake", 2, "", sys.argv[1]).inner.embed_passages(["a"])
print(json.dumps({"calls": calls, "first": first.tolist(), "again": again.tolist(), "clean": clean.tolist()}))
"""


def test_moved_vectors_are_the_stored_ones_moved_so_a_perturbed_run_encodes_nothing_stored(tmp_path):
    run = run_with_harness(NOISE_PROBE, str(tmp_path), HARNESS_EMBEDDING_NOISE="1e-2")
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.splitlines()[-1])
    assert seen["calls"] == [["a", "b"]]  # the second read came from the store
    assert seen["first"] == seen["again"] and seen["first"][0] != seen["first"][1]  # moved, by the text
    assert seen["first"][0] != [1.0, 0.0, 0.0, 0.0] and seen["clean"] == [[1.0, 0.0, 0.0, 0.0]]


BATCH_PROBE = """
import json
from ragkit.models.llm import LlamaCppChat

built, asked = [], []
def build(self, path, *, threads=2, seed=0, replies=None, lora=(), batch=None):
    self.batch, self.seed = batch, seed
    built.append({"path": path, "threads": threads, "lora": list(lora), "batch": batch})

def record(self, messages, **options):
    asked.append({"batch": self.batch, "seed": self.seed, "options": options})

LlamaCppChat.__init__, LlamaCppChat.chat = build, record
import sitecustomize
sitecustomize._install_chat_batch(16)
chat = LlamaCppChat("model.gguf", threads=1, lora=["adapter.gguf"], seed=3)
for n in range(400):
    chat.chat([{"role": "user", "content": f"question {n}"}], max_tokens=40)
chat.chat([{"role": "user", "content": "question 0"}], max_tokens=40)
print(json.dumps({"built": built, "asked": asked, "harness": LlamaCppChat.harness}))
"""


def test_the_batch_harness_answers_its_share_greedily_from_one_twin_of_the_same_model():
    run = run_with_harness(BATCH_PROBE, HARNESS_CHAT_SHARE="0.3")
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.splitlines()[-1])
    # the twin is built once, with the model's own file, threads and adapters, and another batch size
    assert seen["built"] == [{"path": "model.gguf", "threads": 1, "lora": ["adapter.gguf"], "batch": None},
                             {"path": "model.gguf", "threads": 1, "lora": ["adapter.gguf"], "batch": 16}]
    twin_share = sum(a["batch"] == 16 for a in seen["asked"][:400]) / 400
    assert 0.22 <= twin_share <= 0.38
    # greedy, as recorded: neither the options nor the seed change, only who answers
    assert all(a["seed"] == 3 and a["options"] == {"max_tokens": 40} for a in seen["asked"])
    assert seen["asked"][400] == seen["asked"][0]
    assert seen["harness"] == "greedy at batch 16, share 0.3"


def test_the_harness_refuses_sampled_and_batched_replies_at_once():
    run = run_with_harness("pass", HARNESS_CHAT_SEED="7", HARNESS_CHAT_BATCH="16")
    assert run.returncode != 0 and "not both" in run.stderr


REAL_BATCH_PROBE = """
import json
from ragkit.models.llm import LlamaCppChat, smollm2_path

chat = LlamaCppChat(smollm2_path(), threads=2)
reply = chat.chat([{"role": "user", "content": "Name a colour."}], max_tokens=8)
print(json.dumps({"text": reply.text, "twin": chat.harness_twin.identity, "own": chat.identity}))
"""


@pytest.mark.model
def test_the_batch_harness_loads_a_real_twin_that_answers():
    run = run_with_harness(REAL_BATCH_PROBE, HARNESS_CHAT_BATCH="16", HARNESS_CHAT_SHARE="1")
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.splitlines()[-1])
    assert seen["twin"] == seen["own"] + ", batch 16" and seen["text"].strip()
