"""Tokenizers, diacritic folding, sentence splitting and chunking for en/ru/vi/zh text."""

from __future__ import annotations

import re
import string
import unicodedata
from functools import cache, lru_cache
from typing import Sequence

import snowballstemmer

LANGUAGES = ("auto", "en", "ru", "vi", "zh")

# A short English stop list written for the course: function words that carry no topic.
ENGLISH_STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in
    into is it its may me my must no not of on or our should so than that the their them then there
    these they this to was we were what when where which who why will with would you your""".split()
)

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+(?:['’][^\W_{_CJK}]+)*")
_IS_CJK = re.compile(rf"[{_CJK}]")
_IS_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "approx.", "vs.", "no.", "mr.", "ms.", "dr.")
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")  # a word: letters or digits, inner apostrophes kept
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=[\"'“(\[]?[A-ZÀ-ỸА-ЯЁ0-9])|(?<=[。！？])")


def whitespace_tokenize(text: str) -> list[str]:
    """Lowercase and split on spaces: the naive baseline. Taught in lessons/01_bag_of_words.ipynb."""
    return text.lower().split()


def fold_diacritics(text: str) -> str:
    """Strip accents and tone marks ('nghỉ ốm' -> 'nghi om'). Taught in lessons/01_bag_of_words.ipynb."""
    decomposed = unicodedata.normalize("NFD", text.replace("đ", "d").replace("Đ", "D"))
    return "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character pairs of a CJK run; a lone character stays as it is."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(
    text: str, *, lang: str = "auto", fold: bool = False, stem: bool = False, stopwords: bool = False
) -> list[str]:
    """Lowercased word tokens, CJK as bigrams, optional folding/stemming/stopwords.

    Taught in lessons/01_bag_of_words.ipynb.
    """
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}: tokenize() supports {', '.join(LANGUAGES)}")
    text = unicodedata.normalize("NFC", text).lower()
    if fold:
        text = fold_diacritics(text)
    tokens: list[str] = []
    for match in _TOKEN.finditer(text):
        word = match.group()
        if _IS_CJK.match(word):
            tokens.extend(cjk_bigrams(word))
        elif not (stopwords and word in ENGLISH_STOPWORDS):
            tokens.append(stem_word(word, lang) if stem else word)
    return tokens


def search_tokenize(text: str) -> list[str]:
    """The best rung of lesson 01's tokenizer ladder: folded, stemmed, English stop words dropped."""
    return tokenize(text, fold=True, stem=True, stopwords=True)


def restates(text: str, fact: str, *, share: float = 0.6) -> bool:
    """Whether text holds most (share) of the fact's content words (search_tokenize's): a copy of the same fact."""
    words = set(search_tokenize(fact))
    return bool(words) and len(words & set(search_tokenize(text))) >= share * len(words)


@lru_cache(maxsize=1 << 17)  # Snowball in pure Python is the slowest part of tokenizing; words repeat
def stem_word(word: str, lang: str = "auto") -> str:
    """Snowball stem: Russian for Cyrillic words, English for Latin ones (unless lang says vi)."""
    if lang in ("vi", "zh"):
        return word
    russian = lang == "ru" or (lang == "auto" and _IS_CYRILLIC.search(word))
    return _stemmer("russian" if russian else "english").stemWord(word)


@cache
def _stemmer(language: str):
    return snowballstemmer.stemmer(language)


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences (., !, ? and CJK 。！？), keeping common abbreviations whole."""
    pieces = [p.strip() for p in _SENTENCE_END.split(text.strip()) if p and p.strip()]
    sentences: list[str] = []
    for piece in pieces:
        if sentences and sentences[-1].lower().split()[-1].lstrip("([\"'“") in _ABBREVIATIONS:
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


def chunk(text: str, *, max_words: int = 120, overlap_sentences: int = 0) -> list[str]:
    """Pack whole sentences into chunks of at most max_words words; split over-long sentences.

    Taught in lessons/05_parent_child.ipynb.
    """
    if max_words < 1:
        raise ValueError("max_words must be at least 1")
    if not 0 <= overlap_sentences:
        raise ValueError("overlap_sentences must be 0 or more")
    units = [part for sentence in split_sentences(text) for part in _cut_words(sentence, max_words)]
    chunks: list[list[str]] = []
    current: list[str] = []
    for unit in units:
        if current and _word_count(current + [unit]) > max_words:
            chunks.append(current)
            current = current[-overlap_sentences:] if overlap_sentences else []
            while current and _word_count(current + [unit]) > max_words:
                current = current[1:]
        current.append(unit)
    if current:
        chunks.append(current)
    return [" ".join(c) for c in chunks]


def _cut_words(sentence: str, max_words: int) -> list[str]:
    words = sentence.split()
    return [" ".join(words[i : i + max_words]) for i in range(0, len(words), max_words)] or [sentence]


def _word_count(units: list[str]) -> int:
    return sum(len(u.split()) for u in units)


# --- answers compared as SQuAD does ------------------------------------------------------------

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation (any script's) and the articles a/an/the, collapse whitespace, as SQuAD."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION and not unicodedata.category(ch).startswith("P"))
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_key(answer: str) -> str:
    """What two answers must share to count as the same: SQuAD-normalised, 'yes, …' → 'yes'."""
    key = normalize_answer(answer or "")
    first = key.split()[0] if key else ""
    return first if first in ("yes", "no") else key


def numbered(texts: Sequence[str]) -> str:
    """Lines numbered from 1, nothing after the last: '1. …\\n2. …' (a decomposer's steps, an answerer's facts)."""
    return "\n".join(f"{i}. {text}" for i, text in enumerate(texts, start=1))
