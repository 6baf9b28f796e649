"""An on-disk store of chat replies, keyed by everything that decides a reply.

A llama.cpp reply depends only on the model file, the llama.cpp build and the request (messages,
options, seed), because the prompt cache is off (see ragkit.llm). So a stored reply is the reply the
model would give again. `make test` turns it on (RAGKIT_MODEL_CACHE) so that a solutions notebook
reuses the calls its lesson already made; a learner's own runs leave it off and time the real model.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict
from pathlib import Path

from ragkit.llm import ChatReply

SCHEMA = "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT NOT NULL)"


class ReplyCache:
    """Chat replies in one SQLite file under `folder` (keys: ragkit.llm.reply_key); a damaged entry is missing."""

    def __init__(self, folder: str | Path):
        self.path = Path(folder).expanduser() / "replies.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(self.path) as db:
            db.execute(SCHEMA)
        self.hits = self.misses = 0

    def get(self, key: str) -> ChatReply | None:
        """The stored reply for key, or None."""
        with sqlite3.connect(self.path) as db:
            row = db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        reply = _decode(row[0]) if row else None
        if reply is None:
            self.misses += 1
        else:
            self.hits += 1
        return reply

    def put(self, key: str, reply: ChatReply) -> None:
        """Store reply under key (replacing an older one)."""
        with sqlite3.connect(self.path) as db:
            db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?)", (key, json.dumps(asdict(reply))))


def _decode(text: str) -> ChatReply | None:
    try:
        return ChatReply(**json.loads(text))
    except (TypeError, ValueError):
        return None
