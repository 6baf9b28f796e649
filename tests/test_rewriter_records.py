"""ragkit.train.records.rewriter: rewrites sampled, judged by where the relevant documents land,
and kept only if better."""

import gzip
import json

import pytest

from ragkit.corpus import Doc, Hit
from ragkit.models import specialists
from ragkit.models.jobs import SYSTEMS
from ragkit.search.lexical import BM25Index
from ragkit.text import search_tokenize
from ragkit.train.records import specialists as specialist_records
from ragkit.train.records.rewriter import (
    Task,
    build_records,
    candidates,
    fused_ranking,
    hotpotqa_pool,
    hotpotqa_tasks,
    judged,
    judged_rows,
    kept,
    restoration_records,
    rewrite_records,
    rule_keywords,
    sample_keywords,
    scifact_tasks,
    strategyqa_tasks,
    training_tasks,
    write_judgements,
)
from tests.fakes import ScriptedChat


class SeededChat(ScriptedChat):
    """A scripted chat model with a sampling seed, recording the seed of each call."""

    seed = 0

    def chat(self, messages, **options):
        return super().chat(messages, **options, seed_at_call=self.seed)


def ranked_search(rankings):
    """A search that returns the given id ranking for each query (a default one for any other query)."""
    def search(query, *, k):
        return [Hit(Doc(doc_id, doc_id), 1.0) for doc_id in rankings.get(query, ["x1", "x2", "x3"])][:k]
    return search


TASK = Task("t:1", "what helps a fever", ("d1",), "c")
SEARCHES = {"bm25": ranked_search({"what helps a fever": ["x1", "x2", "d1"], "fever remedy": ["d1", "x1"]}),
            "dense": ranked_search({"what helps a fever": ["x1", "d1"], "fever remedy": ["x1", "d1"]})}


def test_the_rule_made_keyword_query_keeps_the_words_bm25_keeps():
    assert rule_keywords("What is the capital of France?") == "capital France"


def test_each_sample_is_drawn_with_its_own_seed_and_the_seed_is_restored():
    chat = SeededChat("fever remedy", "", "fever cure")
    assert sample_keywords(chat, "what helps a fever", n=3) == ["fever remedy", "fever cure"]  # the empty one drops
    assert [options["seed_at_call"] for _, options in chat.calls] == [0, 1, 2] and chat.seed == 0
    assert all(options["temperature"] > 0 for _, options in chat.calls)


def test_candidates_are_unique_and_never_the_query_itself():
    chat = SeededChat("fever remedy", "Fever Remedy", "what helps a fever")
    found = candidates(chat, "What helps a fever", "keywords", samples=3)
    assert found == [("fever remedy", "sampled"), ("helps fever", "rule")]


def test_a_question_list_is_searched_with_the_original_and_fused():
    search = ranked_search({"q": ["a", "b"], "r": ["c", "a"]})
    assert fused_ranking(["q", "r"], search) == ["a", "c", "b"]
    assert fused_ranking(["r"], search) == ["c", "a"]


def test_a_question_of_stop_words_alone_finds_nothing_and_the_others_still_count():
    bm25 = BM25Index([Doc("a", "fever remedy"), Doc("b", "tax forms"), Doc("c", "leave days")],
                     tokenizer=search_tokenize)
    assert fused_ranking(["How is it?"], bm25.search) == []
    assert fused_ranking(["How is it?", "fever"], bm25.search)[0] == "a"


def test_a_candidate_is_kept_only_if_it_ranks_the_relevant_documents_higher_than_the_original():
    judgement = judged(TASK, "keywords", [("fever remedy", "sampled"), ("fever", "rule")], SEARCHES)
    assert judgement["original_rr"] == {"bm25": pytest.approx(1 / 3), "dense": 0.5}
    by_rewrite = {row["rewrite"]: row for row in judgement["candidates"]}
    assert by_rewrite["fever remedy"]["gain"] == pytest.approx(((1 - 1 / 3) + 0) / 2)
    assert by_rewrite["fever"]["gain"] < 0  # found nothing relevant
    assert kept(judgement)["rewrite"] == "fever remedy"
    worse = judged(TASK, "keywords", [("fever", "rule")], SEARCHES)
    assert kept(worse) is None


def test_a_shorter_keyword_query_that_loses_nothing_is_kept_as_a_tie():
    searches = {"bm25": ranked_search({"what helps a fever": ["d1"], "fever help": ["d1"], "a fever helps what": ["d1"],
                                       "fever": ["x1", "d1"]}),
                "dense": ranked_search({"what helps a fever": ["x1", "d1"], "fever help": ["x1", "d1"],
                                        "a fever helps what": ["d1"], "fever": ["x1", "d1"]})}
    candidates = [("fever help", "rule"), ("a fever helps what", "sampled"), ("fever", "sampled")]
    tie = kept(judged(TASK, "keywords", candidates, searches))
    # "fever" is shorter but loses under BM25; "a fever helps what" gains but is no shorter: it beats, so it wins
    assert tie["rewrite"] == "a fever helps what" and tie["why"] == "beat"
    tie = kept(judged(TASK, "keywords", candidates[:1] + candidates[2:], searches))
    assert tie["rewrite"] == "fever help" and tie["why"] == "tied"
    assert kept(judged(TASK, "questions", [(["fever help"], "sampled")], searches)) is None  # lists must beat it


def test_records_hold_the_kept_rewrites_in_the_rewriter_prompt_and_count_what_was_kept_and_why():
    judgements = [judged(TASK, "keywords", [("fever remedy", "sampled")], SEARCHES),
                  judged(TASK, "questions", [(["fever remedy"], "sampled")], SEARCHES),
                  judged(TASK, "keywords", [("fever", "rule")], SEARCHES)]
    records, counts = rewrite_records(judgements)
    assert counts == {"keywords judged": 2, "keywords beat (sampled)": 1, "questions judged": 1,
                      "questions beat (sampled)": 1}
    assert records[0]["messages"] == [{"role": "system", "content": SYSTEMS["rewriter"]},
                                      {"role": "user", "content": "keywords: what helps a fever"}]
    assert records[0]["answer"] == "fever remedy"
    assert json.loads(records[1]["answer"]) == {"questions": ["fever remedy"]}


def test_restoration_records_ask_for_the_text_back_from_its_stripped_form():
    records = restoration_records(["Làm thêm giờ có được trả lương không?", "no accents here"], source="xquad-vi")
    assert len(records) == 1  # a text without diacritics teaches nothing to restore
    assert records[0]["messages"][-1]["content"] == "keywords: lam them gio co duoc tra luong khong?"
    assert records[0]["answer"] == "Làm thêm giờ có được trả lương không?"


def test_training_queries_leave_out_test_claims_and_dev200_and_know_their_relevant_documents():
    queries = [{"_id": "1", "text": "Aspirin lowers fever."}, {"_id": "2", "text": "Coffee has caffeine."},
               {"_id": "9", "text": "Coffee has caffeine."}]
    tasks = scifact_tasks(queries, {"1": {"d1": 1}, "2": {"d4": 1}}, {"9": {"d4": 1}})
    assert tasks == [Task("scifact:1", "Aspirin lowers fever.", ("d1",), "scifact")]
    items = [{"qid": "s1", "question": "Do cats purr?"}, {"qid": "dev", "question": "Do cows fly?"}]
    facts = [{"_id": "s1_f0", "qid": "s1", "text": "Cats purr."}, {"_id": "dev_f0", "qid": "dev", "text": "No."}]
    assert strategyqa_tasks(items, facts, exclude=["dev"]) == [Task("strategyqa:s1", "Do cats purr?", ("s1_f0",),
                                                                    "strategyqa")]


def test_hotpotqa_questions_are_searched_in_the_pool_of_every_question_s_paragraphs():
    items = [{"_id": "h1", "question": "Which river flows through Paris?", "answer": "Seine",
              "context": [["Paris", ["Paris is a city."]], ["Seine", ["The Seine flows through Paris."]],
                          ["Lyon", ["Lyon is a city."]]], "supporting_facts": [["Paris", 0], ["Seine", 0]]},
             {"_id": "h2", "question": "Where is Lyon?", "answer": "France",
              "context": [["Lyon", ["Lyon is a city."]]], "supporting_facts": [["Lyon", 0]]}]
    assert hotpotqa_tasks(items)[0] == Task("hotpotqa:h1", "Which river flows through Paris?", ("Paris", "Seine"),
                                            "hotpotqa")
    assert [doc.id for doc in hotpotqa_pool(items)] == ["Paris", "Seine", "Lyon"]


def test_a_sampling_run_appends_one_line_per_query_and_form_and_goes_on_where_it_stopped(tmp_path):
    path, corpora = tmp_path / "judgements.jsonl.gz", {"c": [Doc("d1", "fever")]}
    chat = SeededChat("fever remedy", '{"questions": ["fever remedy"]}')
    samples = {"keywords": 1, "questions": 1}
    assert write_judgements(path, [TASK], chat, corpora, samples=samples, searches_of=lambda docs: SEARCHES) == 2
    calls = len(chat.calls)
    assert write_judgements(path, [TASK], chat, corpora, samples=samples, searches_of=lambda docs: SEARCHES) == 0
    assert len(chat.calls) == calls  # nothing asked again
    rows = [json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8")]
    assert [(row["id"], row["form"]) for row in rows] == [("t:1", "keywords"), ("t:1", "questions")]
    assert kept(rows[1])["rewrite"] == ["fever remedy"]


def write_rewriter_data(root):
    """A sampling run's two judgements (one kept) and one Vietnamese question, as data/benchmarks/rewriter holds."""
    judgements = [judged(TASK, "keywords", [("fever remedy", "sampled")], SEARCHES),
                  judged(TASK, "keywords", [("fever", "rule")], SEARCHES)]
    (root / "rewriter").mkdir()
    (root / "rewriter/judgements.jsonl").write_text("".join(json.dumps(j) + "\n" for j in judgements))
    (root / "rewriter/xquad_vi_questions.jsonl").write_text(json.dumps({"id": "x", "question": "Đội nào thắng?"},
                                                                       ensure_ascii=False) + "\n")


def test_a_build_trains_on_the_kept_rewrites_and_the_restorations(tmp_path):
    write_rewriter_data(tmp_path)
    records, counts = build_records(root=tmp_path)
    assert [r["answer"] for r in records] == ["fever remedy", "Đội nào thắng?"]
    assert counts == {"keywords judged": 2, "keywords beat (sampled)": 1, "keywords restored (xquad-vi)": 1}


def test_a_run_takes_the_training_sets_in_turn_and_searches_each_in_its_own_corpus():
    read = {"scifact_queries": [{"_id": str(i), "text": f"claim {i}"} for i in range(3)],
            "scifact_train": {str(i): {f"d{i}": 1} for i in range(3)}, "scifact_test": {},
            "scifact_corpus": [{"_id": f"d{i}", "title": "", "text": "word " * 200} for i in range(3)],
            "strategyqa": [{"qid": f"s{i}", "question": f"question {i}?"} for i in range(3)], "dev200": ["s2"],
            "facts": [{"_id": f"s{i}_f0", "qid": f"s{i}", "text": f"fact {i}"} for i in range(3)],
            "hotpotqa": []}
    tasks, corpora = training_tasks(read, per_source=2)
    assert [task.corpus for task in tasks] == ["scifact", "strategyqa", "scifact", "strategyqa"]
    assert {doc.id for doc in corpora["strategyqa"]} == {"s0_f0", "s1_f0"}  # dev200's facts are not searched
    assert all(len(doc.text) <= 600 for doc in corpora["scifact"])  # abstracts cut as a reader's passages


def test_a_run_killed_while_writing_loses_only_the_damaged_judgement(tmp_path):
    path, corpora = tmp_path / "judgements.jsonl.gz", {"c": [Doc("d1", "fever")]}
    chat = SeededChat("fever remedy", '{"questions": ["fever remedy"]}')
    samples = {"keywords": 1, "questions": 1}
    write_judgements(path, [TASK], chat, corpora, samples=samples, searches_of=lambda docs: SEARCHES)
    whole = path.read_bytes()
    with gzip.open(path, "ab") as out:
        out.write(b'{"id": "t:2", "form": "keywords"}\n')
    path.write_bytes(path.read_bytes()[:-20])  # the last member cut short, inside its line
    assert [row["form"] for row in judged_rows(path)] == ["keywords", "questions"]
    assert path.read_bytes() == whole  # rewritten from what was whole


def test_the_rewriter_job_builds_from_its_records_module(tmp_path):
    write_rewriter_data(tmp_path)
    records, _ = specialist_records.build_records("rewriter", root=tmp_path)
    assert [r["answer"] for r in records] == ["fever remedy", "Đội nào thắng?"]
    assert set(specialist_records.source_files("rewriter", root=tmp_path)) == {"judgements", "vietnamese"}
    assert specialists.job_of("rewriter").max_tokens >= 96


def test_restorations_are_sampled_down_to_as_many_as_the_kept_rewrites(tmp_path):
    write_rewriter_data(tmp_path)
    questions = [{"id": str(n), "question": f"Đội {n} nào thắng?"} for n in range(5)]
    (tmp_path / "rewriter/xquad_vi_questions.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions))
    records, counts = build_records(root=tmp_path)
    assert [r["source"].split(":")[0] for r in records] == ["t", "xquad-vi"]  # one kept rewrite, one restoration
    assert counts["keywords restored (xquad-vi)"] == 1
