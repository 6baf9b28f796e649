"""The one rule that holds out a fixed share of training data: a stable hash of the key (a question, a claim),
case-folded with its spaces collapsed, so the same text always lands on the same side on every machine."""

from __future__ import annotations

import hashlib
import zlib

HASHES = ("sha256", "crc32")
HELDOUT_PERCENT = 10  # every specialist's records hold out this share (the course cross-encoder: its own)


def split_of(key: str, *, percent: int = HELDOUT_PERCENT, hashing: str = "sha256") -> str:
    """'heldout' for a fixed ~percent% of keys, else 'train'."""
    if hashing not in HASHES:
        raise ValueError(f"hashing must be one of {', '.join(HASHES)}, got {hashing!r}")
    text = " ".join(key.casefold().split()).encode()
    number = zlib.crc32(text) if hashing == "crc32" else int.from_bytes(hashlib.sha256(text).digest()[:4], "big")
    return "heldout" if number % 100 < percent else "train"
