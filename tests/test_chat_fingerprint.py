"""The recorded chat fingerprint: a missing file, or one that is there but unreadable, is an error
(tests/chat_fingerprint.py): a run without one would compare no chat cell."""

import pytest

from tests import chat_fingerprint
from tests.chat_fingerprint import UnreadableFingerprint, recorded, replies_as_recorded

FINGERPRINT = '{"model": "m.gguf", "llama_cpu_features": "CPU : AVX2 = 1 |", "canary_replies": "4897d3"}'


@pytest.fixture
def recorded_at(tmp_path, monkeypatch):
    """Point the module at a file under tmp_path, with its cache emptied before and after."""
    path = tmp_path / "recorded_chat.json"
    monkeypatch.setattr(chat_fingerprint, "RECORDED", path)
    monkeypatch.setattr(chat_fingerprint, "_current_cached", lambda: pytest.fail("the chat model was loaded"))
    recorded.cache_clear()
    yield path
    recorded.cache_clear()


def test_a_missing_file_is_an_error_not_a_licence_to_compare_nothing(recorded_at):
    with pytest.raises(UnreadableFingerprint, match="missing.*make execute"):
        recorded()
    with pytest.raises(UnreadableFingerprint):
        replies_as_recorded()


def test_a_recorded_fingerprint_is_read(recorded_at):
    recorded_at.write_text(FINGERPRINT, encoding="utf-8")
    assert recorded()["canary_replies"] == "4897d3"


@pytest.mark.parametrize("text", ["{", "not json", "", "[]", '{"model": "m.gguf"}', "{}"])
def test_a_file_that_is_there_but_no_fingerprint_is_an_error(recorded_at, text):
    recorded_at.write_text(text, encoding="utf-8")
    with pytest.raises(UnreadableFingerprint, match="make execute"):
        recorded()
    with pytest.raises(UnreadableFingerprint):
        replies_as_recorded()


def test_an_unreadable_file_is_an_error(recorded_at):
    recorded_at.mkdir()  # there, but reading it fails
    with pytest.raises(UnreadableFingerprint, match="cannot be read"):
        recorded()


def test_the_committed_fingerprint_is_readable():
    recorded.cache_clear()
    assert set(recorded()) >= set(chat_fingerprint.FIELDS)
