"""ragkit.corpus: the course data loads, and bad files fail with errors that name the file."""

import json
import unicodedata
from collections import Counter

import pytest

from ragkit.corpus import DATA_DIR, MAX_DOC_CHARS, Doc, check_docs, load_docs, load_questions, read_jsonl
from ragkit.errors import CorpusError
from ragkit.text import normalize_answer


@pytest.fixture(scope="module")
def docs():
    return load_docs()


@pytest.fixture(scope="module")
def questions():
    return load_questions()


def test_handbook_has_enough_english_docs_over_enough_topics(docs):
    english = [d for d in docs if d.lang == "en"]
    assert len(english) >= 40
    assert len({d.topic for d in english}) >= 6


def test_handbook_has_a_vietnamese_section(docs):
    vietnamese = [d for d in docs if d.lang == "vi"]
    assert vietnamese
    assert all(d.id.startswith("vi-") and d.source == "handbook/vi" for d in vietnamese)


@pytest.mark.parametrize("lang", ["zh", "ru"])
def test_handbook_has_chinese_and_russian_office_sections(docs, lang):
    section = [d for d in docs if d.lang == lang]
    assert section
    assert all(d.id.startswith(f"{lang}-office-") and d.source == f"handbook/{lang}" for d in section)


def test_doc_ids_are_unique(docs):
    assert len({d.id for d in docs}) == len(docs)


def test_every_doc_has_a_title_and_text(docs):
    assert all(d.title.strip() and d.text.strip() for d in docs)


def test_there_are_enough_gold_questions(questions):
    assert len(questions) >= 30
    assert len({q.id for q in questions}) == len(questions)


def test_every_relevant_id_exists(docs, questions):
    ids = {d.id for d in docs}
    for question in questions:
        assert question.relevant, question.id
        assert set(question.relevant) <= ids, question.id


def test_rerank_queries_cover_every_doc_and_never_reuse_a_gold_question(docs, questions):
    training = read_jsonl(DATA_DIR / "rerank_queries.jsonl")
    ids = {d.id for d in docs}
    assert {item["doc_id"] for item in training} <= ids
    assert Counter(item["doc_id"] for item in training) == {doc_id: 5 for doc_id in ids}
    gold = {q.query.strip().casefold() for q in questions}
    reused = [item["query"] for item in training if item["query"].strip().casefold() in gold]
    assert not reused


def test_question_fields_outside_the_core_go_to_extra(tmp_path):
    path = write_lines(tmp_path, [{"id": "q1", "query": "leave?", "relevant": ["d1"], "hops": 2}])
    assert load_questions(path)[0].extra == {"hops": 2}


def write_lines(tmp_path, records, name="docs.jsonl"):
    path = tmp_path / name
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD = {"id": "d1", "text": "Annual leave is 25 days."}


def test_a_valid_file_loads_with_defaults_for_missing_fields(tmp_path):
    path = write_lines(tmp_path, [GOOD, "", {"id": "d2", "text": "Sick leave.", "topic": "sick-leave"}])
    assert load_docs(path) == [Doc("d1", "Annual leave is 25 days."), Doc("d2", "Sick leave.", topic="sick-leave")]


def test_empty_file_is_refused(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="empty.jsonl holds no records"):
        load_docs(path)


def test_broken_json_line_is_named(tmp_path):
    path = write_lines(tmp_path, [GOOD, '{"id": "d2", "text": "oops"'])
    with pytest.raises(CorpusError, match=r"docs\.jsonl:2: not valid JSON"):
        load_docs(path)


def test_a_json_array_line_is_refused(tmp_path):
    path = write_lines(tmp_path, ['["d1", "some text"]'])
    with pytest.raises(CorpusError, match=r"docs\.jsonl:1: expected a JSON object, got list"):
        load_docs(path)


def test_a_record_without_text_is_named(tmp_path):
    path = write_lines(tmp_path, [GOOD, {"id": "d2", "title": "no text"}])
    with pytest.raises(CorpusError, match=r"docs\.jsonl: record 2 lacks text"):
        load_docs(path)


def test_duplicate_ids_are_refused(tmp_path):
    path = write_lines(tmp_path, [GOOD, GOOD])
    with pytest.raises(CorpusError, match=r"docs\.jsonl: duplicate document id 'd1'"):
        load_docs(path)


@pytest.mark.parametrize("text", ["", "   \n", None, 42])
def test_an_empty_or_non_string_text_is_refused(tmp_path, text):
    path = write_lines(tmp_path, [{"id": "d1", "text": text}])
    with pytest.raises(CorpusError, match=r"docs\.jsonl: document 'd1' has no text"):
        load_docs(path)


def test_a_directory_as_path_is_refused(tmp_path):
    with pytest.raises(CorpusError, match="cannot read"):
        load_docs(tmp_path)


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(CorpusError, match="nothere.jsonl"):
        load_docs(tmp_path / "nothere.jsonl")


def test_a_non_utf8_file_is_refused(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes('{"id": "d1", "text": "Café"}\n'.encode("latin-1"))
    with pytest.raises(CorpusError, match=r"cannot read .*latin1\.jsonl"):
        load_docs(path)


def test_an_oversized_document_must_be_chunked_first(tmp_path):
    path = write_lines(tmp_path, [{"id": "big", "text": "x" * (MAX_DOC_CHARS + 1)}])
    with pytest.raises(CorpusError, match=r"docs\.jsonl: document 'big' has .*ragkit\.text\.chunk\(\)"):
        load_docs(path)


def test_a_document_of_exactly_the_maximum_size_is_accepted():
    assert check_docs([Doc("d", "x" * MAX_DOC_CHARS)])


def test_an_empty_corpus_is_refused():
    with pytest.raises(CorpusError, match="empty"):
        check_docs([])


def test_a_question_without_relevant_ids_field_is_named(tmp_path):
    path = write_lines(tmp_path, [{"id": "q1", "query": "leave?"}], name="questions.jsonl")
    with pytest.raises(CorpusError, match=r"questions\.jsonl: record 1 needs id, query and relevant"):
        load_questions(path)


def test_relevant_given_as_a_string_is_refused_not_split_into_letters(tmp_path):
    path = write_lines(tmp_path, [{"id": "q1", "query": "leave?", "relevant": "en-annual-01"}],
                       name="questions.jsonl")
    with pytest.raises(CorpusError, match="relevant must be a list"):
        load_questions(path)


def test_a_question_id_used_twice_is_named(tmp_path):
    records = [{"id": "q1", "query": "leave?", "relevant": []}, {"id": "q2", "query": "VPN?", "relevant": []},
               {"id": "q1", "query": "sick?", "relevant": []}]
    path = write_lines(tmp_path, records, name="questions.jsonl")
    with pytest.raises(CorpusError, match=r"questions\.jsonl: question ids used more than once: q1;"):
        load_questions(path)


def test_relevant_ids_missing_from_the_corpus_are_named(tmp_path):
    corpus = [Doc("en-annual-01", "Annual leave is 25 days.")]
    records = [{"id": "q1", "query": "leave?", "relevant": ["en-annual-01", "en-annual-99"]},
               {"id": "q2", "query": "VPN?", "relevant": ["en-vpn-01"]}]
    path = write_lines(tmp_path, records, name="questions.jsonl")
    with pytest.raises(CorpusError, match=r"not in the corpus \(q1 -> en-annual-99; q2 -> en-vpn-01\)"):
        load_questions(path, corpus=corpus)
    assert len(load_questions(path)) == 2  # without a corpus there is nothing to check them against


def test_a_long_list_of_missing_ids_is_cut_short(tmp_path):
    records = [{"id": f"q{n}", "query": "leave?", "relevant": [f"d{n}"]} for n in range(8)]
    path = write_lines(tmp_path, records, name="questions.jsonl")
    with pytest.raises(CorpusError, match=r"q4 -> d4; and 3 more\)"):
        load_questions(path, corpus=[Doc("other", "text")])


@pytest.mark.parametrize("questions_file, corpus_file", [("questions.jsonl", "handbook.jsonl"),
                                                         ("multihop_questions.jsonl", "multihop_kb.jsonl")])
def test_the_course_questions_name_only_docs_of_their_corpus(questions_file, corpus_file):
    checked = load_questions(DATA_DIR / questions_file, corpus=load_docs(DATA_DIR / corpus_file))
    assert checked == load_questions(DATA_DIR / questions_file)


# The multi-hop knowledge base and its questions (data/README.md, lessons 06 and 07).

MULTIHOP_KB = DATA_DIR / "multihop_kb.jsonl"
MULTIHOP_QUESTIONS = DATA_DIR / "multihop_questions.jsonl"


@pytest.fixture(scope="module")
def multihop_docs():
    return load_docs(MULTIHOP_KB)


@pytest.fixture(scope="module")
def multihop_questions():
    return load_questions(MULTIHOP_QUESTIONS)


def test_multihop_kb_loads_in_english_and_russian(multihop_docs):
    assert {d.lang for d in multihop_docs} == {"en", "ru"}
    for doc in multihop_docs:
        assert doc.id.startswith(f"kb-{doc.lang}-") and doc.source == f"kb/{doc.lang}", doc.id
        assert doc.title.strip() and doc.topic and len(doc.text) <= 600, doc.id


def test_multihop_has_enough_questions_with_unique_ids(multihop_questions):
    assert len(multihop_questions) >= 30
    assert len({q.id for q in multihop_questions}) == len(multihop_questions)


def test_every_multihop_gold_id_exists_and_hops_match(multihop_docs, multihop_questions):
    ids = {d.id for d in multihop_docs}
    for question in multihop_questions:
        assert set(question.relevant) <= ids, question.id
        assert len(set(question.relevant)) == len(question.relevant), question.id
        assert question.extra["hops"] == len(question.relevant) in (2, 3), question.id
        assert len(question.extra["decomposition"]) == question.extra["hops"], question.id


def test_multihop_answers_are_grounded(multihop_docs, multihop_questions):
    texts = {d.id: d.text.casefold() for d in multihop_docs}
    for question in multihop_questions:
        assert question.style in {"bridge", "comparison", "yes-no"}, question.id
        if question.style == "bridge":
            assert question.answer.casefold() in texts[question.relevant[-1]], question.id
        elif question.style == "yes-no":
            assert question.answer in {"yes", "no"}, question.id


def test_some_multihop_questions_need_a_russian_passage(multihop_questions):
    assert sum(any(r.startswith("kb-ru-") for r in q.relevant) for q in multihop_questions) >= 8


# Hand-written answer aliases (data/README.md, "How the answer aliases were written").

COURSE_SETS = [("questions.jsonl", "handbook.jsonl"), ("multihop_questions.jsonl", "multihop_kb.jsonl")]
POLARITY = {"yes": {"yes", "да"}, "no": {"no", "нет"}}


def flat(text):
    """Case-folded, with runs of whitespace as one space: how an answer is looked up in a document."""
    return " ".join(text.split()).casefold()


def written_in(text, lang):
    """Whether text has letters, all in the script of lang (Vietnamese: Latin with at least one diacritic)."""
    letters = [ch for ch in text if ch.isalpha()]
    scripts = {unicodedata.name(ch).split()[0] for ch in letters}
    accented = not all(ch.isascii() for ch in letters)
    return bool(letters) and {"en": scripts == {"LATIN"} and not accented, "vi": scripts == {"LATIN"} and accented,
                              "ru": "CYRILLIC" in scripts, "zh": "CJK" in scripts}[lang]


@pytest.mark.parametrize("questions_file", [questions_file for questions_file, _ in COURSE_SETS])
def test_every_course_question_has_answer_aliases_after_its_answer(questions_file):
    records = read_jsonl(DATA_DIR / questions_file)
    for record in records:
        keys = list(record)
        assert "aliases" not in record and keys[keys.index("answer") + 1] == "answer_aliases", record["id"]
        aliases = record["answer_aliases"]
        # yes/no answers take no alias: "no, he was not" would give a wrong "yes, he was" part of its F1
        assert isinstance(aliases, list) and (aliases or record["answer"] in POLARITY), record["id"]
        assert all(isinstance(a, str) and a == a.strip() and normalize_answer(a) for a in aliases), record["id"]
        assert len(set(aliases)) == len(aliases) and record["answer"] not in aliases, record["id"]
    assert [q.extra["answer_aliases"] for q in load_questions(DATA_DIR / questions_file)] == \
        [r["answer_aliases"] for r in records]


@pytest.mark.parametrize("questions_file, corpus_file", COURSE_SETS)
def test_answers_are_found_in_a_gold_doc_and_given_in_the_question_language(questions_file, corpus_file):
    docs = {d.id: d for d in load_docs(DATA_DIR / corpus_file)}
    for question in load_questions(DATA_DIR / questions_file):
        answers = (question.answer, *question.extra["answer_aliases"])
        if question.answer in POLARITY:  # yes/no: stated by no document; every alias keeps the polarity
            assert all(normalize_answer(a).split()[0] in POLARITY[question.answer] for a in answers), question.id
            continue
        stated_in = {docs[r].lang for r in question.relevant for a in answers if flat(a) in flat(docs[r].text)}
        assert stated_in, f"{question.id}: neither the answer nor an alias occurs in a gold document"
        if question.lang not in stated_in:  # the documents state it in another language
            assert any(written_in(a, question.lang) for a in answers), question.id
