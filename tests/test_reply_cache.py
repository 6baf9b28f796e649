"""ragkit.models.cache, chat replies: stored replies, and the real local model reusing them."""

import sqlite3

import pytest

from ragkit.config import load_settings
from ragkit.models.cache import ReplyCache
from ragkit.models.llm import ChatReply, LlamaCppChat, reply_key, smollm2_path

REQUEST = {"messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 8, "seed": 0}


def test_a_stored_reply_comes_back_equal(tmp_path):
    cache = ReplyCache(tmp_path)
    reply = ChatReply("Blue.", "m", prompt_tokens=5, completion_tokens=2, seconds=0.3, finish_reason="stop",
                      top_logprobs=(("Blue", -0.1), ("Red", -2.5)))
    assert cache.get("k") is None
    cache.put("k", reply)
    assert ReplyCache(tmp_path).get("k") == reply
    assert (cache.hits, cache.misses) == (0, 1)


def test_a_damaged_entry_counts_as_missing(tmp_path):
    cache = ReplyCache(tmp_path)
    cache.put("k", ChatReply("Blue.", "m"))  # the file and its table exist once something is stored
    with sqlite3.connect(cache.path) as db:
        db.execute("UPDATE replies SET reply = 'not json' WHERE key = 'k'")
    with pytest.warns(UserWarning, match="damaged"):
        assert cache.get("k") is None


def test_the_key_ignores_key_order_and_sees_every_field():
    assert reply_key("m", REQUEST) == reply_key("m", dict(reversed(list(REQUEST.items()))))
    assert reply_key("m", REQUEST) != reply_key("m", {**REQUEST, "seed": 1})
    assert reply_key("m", REQUEST) != reply_key("other model", REQUEST)


def test_the_setting_is_read_from_the_environment():
    settings = load_settings({"RAGKIT_MODEL_CACHE": ".cache/models"}, config_file="/dev/null")
    assert settings.model_cache == ".cache/models"
    assert load_settings({}, config_file="/dev/null").model_cache == ""


@pytest.mark.model
def test_the_local_model_answers_a_repeated_request_from_the_cache(tmp_path, monkeypatch):
    chat = LlamaCppChat(smollm2_path(), replies=ReplyCache(tmp_path))
    first = chat.chat("Name a colour.", max_tokens=8)
    monkeypatch.setattr(chat, "_complete", lambda request: pytest.fail("the model was asked again"))
    assert chat.chat("Name a colour.", max_tokens=8) == first
    assert (chat.replies.hits, chat.replies.misses) == (1, 1)
