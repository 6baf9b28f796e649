"""ragkit.text: tokenizing en/ru/vi/zh, sentence splitting, chunking."""

import pytest

from ragkit.text import LANGUAGES, chunk, fold_diacritics, split_sentences, tokenize, whitespace_tokenize


def test_english_words_keep_apostrophes_and_drop_punctuation():
    assert tokenize("Don't forget: the manager's approval, please!") == [
        "don't", "forget", "the", "manager's", "approval", "please"]


def test_tokens_are_lowercased():
    assert tokenize("VPN Laptop HR") == ["vpn", "laptop", "hr"]


def test_stopwords_are_dropped_only_when_asked():
    assert tokenize("how many days of leave") == ["how", "many", "days", "of", "leave"]
    assert tokenize("how many days of leave", stopwords=True) == ["many", "days", "leave"]


def test_english_snowball_stemming():
    assert tokenize("running reimbursements approved", stem=True) == ["run", "reimburs", "approv"]


def test_russian_words_get_the_russian_stemmer_by_script():
    assert tokenize("Кошки бегали", stem=True) == ["кошк", "бега"]
    assert tokenize("Кошки бегали", stem=True, lang="ru") == ["кошк", "бега"]


def test_mixed_script_text_stems_each_word_in_its_language():
    assert tokenize("cats кошки", stem=True) == ["cat", "кошк"]


def test_vietnamese_diacritics_fold_to_plain_letters():
    assert tokenize("Nghỉ ốm", fold=True) == ["nghi", "om"]
    assert tokenize("Nghỉ ốm") == ["nghỉ", "ốm"]


def test_folding_turns_d_with_stroke_into_d():
    assert tokenize("Đơn đi làm", fold=True) == ["don", "di", "lam"]
    assert fold_diacritics("Đà Nẵng") == "Da Nang"


def test_folded_query_matches_a_query_typed_without_diacritics():
    assert tokenize("nghỉ phép năm", fold=True) == tokenize("nghi phep nam", fold=True)


def test_vietnamese_is_not_stemmed_when_lang_is_vi():
    assert tokenize("những ngày nghỉ", lang="vi", stem=True) == ["những", "ngày", "nghỉ"]


def test_chinese_becomes_overlapping_character_bigrams():
    assert tokenize("年假天数") == ["年假", "假天", "天数"]


def test_a_single_chinese_character_stays_one_token():
    assert tokenize("假") == ["假"]


def test_chinese_next_to_latin_letters_is_still_split_into_bigrams():
    assert tokenize("使用GPU训练") == ["使用", "gpu", "训练"]


def test_unknown_language_names_the_supported_ones():
    with pytest.raises(ValueError) as err:
        tokenize("hello", lang="fr")
    for lang in LANGUAGES:
        assert lang in str(err.value)


def test_whitespace_tokenize_cannot_split_chinese():
    text = "员工每年有二十五天年假"
    assert whitespace_tokenize(text) == [text]
    assert len(tokenize(text)) == len(text) - 1


def test_whitespace_tokenize_keeps_punctuation_attached():
    assert whitespace_tokenize("Leave, please.") == ["leave,", "please."]


def test_split_sentences_on_full_stops_and_question_marks():
    assert split_sentences("Leave is 25 days. Ask HR! Is it paid? Yes.") == [
        "Leave is 25 days.", "Ask HR!", "Is it paid?", "Yes."]


def test_split_sentences_keeps_abbreviations_whole():
    text = "Bring receipts, e.g. Taxi or hotel bills. Then file them."
    assert split_sentences(text) == ["Bring receipts, e.g. Taxi or hotel bills.", "Then file them."]


def test_split_sentences_splits_after_words_that_merely_end_like_an_abbreviation():
    assert split_sentences("Read the terms. Then sign the forms. Done.") == [
        "Read the terms.", "Then sign the forms.", "Done."]


def test_split_sentences_does_not_split_decimals():
    assert split_sentences("The rate is 0.30 EUR per km. It changed in 2024.") == [
        "The rate is 0.30 EUR per km.", "It changed in 2024."]


def test_split_sentences_on_cjk_full_stops():
    assert split_sentences("员工有年假。病假需要证明。") == ["员工有年假。", "病假需要证明。"]


def test_split_sentences_of_blank_text_is_empty():
    assert split_sentences("   \n ") == []


PROSE = " ".join(f"Sentence {i} has exactly seven words here." for i in range(40))


def test_chunk_respects_max_words():
    chunks = chunk(PROSE, max_words=20)
    assert len(chunks) == 20  # two 7-word sentences fit in 20 words, three do not
    assert all(len(c.split()) <= 20 for c in chunks)


def test_chunk_keeps_every_word_once_in_order():
    assert " ".join(chunk(PROSE, max_words=20)).split() == PROSE.split()


def test_chunk_keeps_whole_sentences_together():
    first, second = split_sentences(PROSE)[:2]
    assert chunk(PROSE, max_words=20)[0] == f"{first} {second}"
    assert first == "Sentence 0 has exactly seven words here."


def test_chunk_splits_a_single_over_long_sentence():
    sentence = " ".join(f"w{i}" for i in range(25)) + "."
    chunks = chunk(sentence, max_words=10)
    assert [len(c.split()) for c in chunks] == [10, 10, 5]
    assert " ".join(chunks).split() == sentence.split()


def test_chunk_handles_a_huge_document():
    words = [f"w{i}" for i in range(200_000)]
    text = " ".join(w + ("." if i % 13 == 12 else "") for i, w in enumerate(words))
    chunks = chunk(text, max_words=120)
    assert max(len(c.split()) for c in chunks) <= 120
    assert [w.rstrip(".") for w in " ".join(chunks).split()] == words


def test_chunk_overlap_repeats_the_last_sentence():
    chunks = chunk("One two. Three four. Five six.", max_words=4, overlap_sentences=1)
    assert chunks == ["One two. Three four.", "Three four. Five six."]


def test_chunk_of_short_text_is_the_text():
    assert chunk("Just one sentence.", max_words=50) == ["Just one sentence."]


@pytest.mark.parametrize("max_words", [0, -3])
def test_chunk_rejects_max_words_below_one(max_words):
    with pytest.raises(ValueError, match="max_words"):
        chunk("Some text.", max_words=max_words)


def test_search_tokenize_folds_stems_and_drops_stop_words():
    from ragkit.text import search_tokenize

    assert search_tokenize("The nghỉ ốm Policies") == ["nghi", "om", "polici"]
