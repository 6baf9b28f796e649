"""Does the default chat model reply here as it did when the notebooks' outputs were recorded?

llama.cpp picks its CPU kernels by the instructions a CPU has, so another CPU can give other replies.
The fingerprint is those instructions (as llama.cpp reports them) plus a digest of the replies to three
fixed prompts. `make execute` records it in tests/recorded_chat.json; under nbval, cells marked
NBVAL_CHAT_OUTPUT are compared only when this machine's fingerprint equals the recorded one.
A missing file, or one that cannot be read as a fingerprint, is an error (UnreadableFingerprint): without a
fingerprint no chat cell could ever be compared, and the run would pass whatever the replies.
"""

from __future__ import annotations

import hashlib
import json
import sys
from functools import cache
from pathlib import Path

RECORDED = Path(__file__).with_name("recorded_chat.json")
FIELDS = ("model", "llama_cpu_features", "canary_replies")
CANARY = (
    ({"role": "user", "content": "Name three rivers of Europe."}, {}),
    ({"role": "user", "content": "Split into steps: who built the palace where the museum is?"},
     {"json_schema": {"type": "object", "properties": {"steps": {"type": "array", "items": {"type": "string"}}},
                      "required": ["steps"]}}),
    ({"role": "user", "content": "Is Paris in France? Think step by step."},
     {"grammar": 'root ::= "Step 1: " [^\\n]{1,60} "\\nSo the answer is " ("yes" | "no")\n'}),
)


def current() -> dict[str, str]:
    """This machine's fingerprint: llama.cpp's CPU features and a digest of the canary replies."""
    import xllamacpp

    from ragkit.config import load_settings
    from ragkit.models.llm import LlamaCppChat, smollm2_path

    chat = LlamaCppChat(smollm2_path(), threads=load_settings().threads)
    replies = [chat.chat([message], max_tokens=40, **options).text for message, options in CANARY]
    harness = getattr(LlamaCppChat, "harness", "")  # set by tests/portable when it reseeds a share of the replies
    replies = [harness, *replies] if harness else replies
    cpu = next((line.strip() for line in xllamacpp.get_system_info().splitlines() if line.strip().startswith("CPU")),
               "unknown")
    return {"model": chat.identity, "llama_cpu_features": cpu,
            "canary_replies": hashlib.sha256(json.dumps(replies).encode()).hexdigest()}


class UnreadableFingerprint(RuntimeError):
    """tests/recorded_chat.json is there but holds no readable fingerprint."""


@cache
def recorded() -> dict[str, str]:
    """The fingerprint of the machine that recorded the committed outputs."""
    try:
        found = json.loads(RECORDED.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UnreadableFingerprint(f"{RECORDED} is missing, so no chat cell could be compared: restore it with git, "
                                    "or record this machine's with `make execute`") from None
    except (OSError, ValueError) as error:
        raise UnreadableFingerprint(f"{RECORDED} cannot be read ({error}): restore it with git, or record this "
                                    "machine's with `make execute`") from error
    if not isinstance(found, dict) or any(not isinstance(found.get(field), str) for field in FIELDS):
        raise UnreadableFingerprint(f"{RECORDED} is not a fingerprint (a JSON object with {', '.join(FIELDS)}): "
                                    "restore it with git, or record this machine's with `make execute`")
    return found


@cache
def _current_cached() -> dict[str, str]:
    return current()


def replies_as_recorded() -> bool:
    """True if this machine's fingerprint equals the recorded one."""
    then = recorded()  # read first: a missing or broken recording fails before the model loads
    return _current_cached() == then


def difference() -> str:
    """What differs between this machine's fingerprint and the recorded one, in words."""
    here, then = _current_cached(), recorded()
    changed = [key for key in then if here.get(key) != then[key]]
    if "llama_cpu_features" in changed:
        return f"llama.cpp runs other CPU kernels here ({here['llama_cpu_features']!r}, recorded: " \
               f"{then['llama_cpu_features']!r})"
    return "the chat model's replies differ here: " + ", ".join(changed) if changed else "nothing differs"


if __name__ == "__main__":  # `make execute`: record the fingerprint of the machine that records the outputs
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python -m tests.chat_fingerprint --record")
    RECORDED.write_text(json.dumps(current(), indent=1) + "\n", encoding="utf-8")
    print(f"recorded the chat model's fingerprint in {RECORDED}")
