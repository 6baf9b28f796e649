"""ragkit.train.splits: the one held-out rule, and the two splits built on it."""

import pytest

from ragkit.train import reranker as reranker_training
from ragkit.train.splits import split_of

KEYS = [f"Question number {n} about the handbook?" for n in range(2000)]


@pytest.mark.parametrize("hashing, percent", [("sha256", 10), ("crc32", 15)])
def test_about_the_share_asked_is_held_out(hashing, percent):
    held = sum(split_of(key, percent=percent, hashing=hashing) == "heldout" for key in KEYS) / len(KEYS)
    assert abs(held - percent / 100) < 0.03


def test_case_and_spaces_do_not_move_a_key():
    for hashing in ("sha256", "crc32"):
        variants = ("Who wrote Dracula?", "  who  WROTE dracula? ", "who wrote dracula?")
        assert len({split_of(key, percent=50, hashing=hashing) for key in variants}) == 1


def test_the_two_hashes_split_differently_and_the_wrappers_use_theirs():
    sha = [split_of(key, percent=15) for key in KEYS]
    crc = [split_of(key, percent=15, hashing="crc32") for key in KEYS]
    assert sha != crc
    assert [reranker_training.split_of(key) for key in KEYS] == crc
    assert [split_of(key) for key in KEYS] == [split_of(key, percent=10) for key in KEYS]


def test_an_unknown_hash_is_refused():
    with pytest.raises(ValueError, match="hashing must be one of"):
        split_of("a question", percent=10, hashing="md5")
