"""benchmarks/hotpotqa.py and benchmarks/strategyqa.py: their pure helpers and a run on tiny fake data
(a scripted chat model and a hashing embedder: no model is loaded)."""

import json
import re

import pytest

from benchmarks import harness, hotpotqa, hotpotqa_data, strategyqa
from ragkit import generate
from ragkit.corpus import Doc, Hit, Question
from ragkit.errors import CorpusError, ModelNotFound
from tests.fakes import HOTPOT_PARAGRAPHS, HOTPOT_ROWS, HashingEmbedder, ScriptedChat, ScriptedReader, stub_setting

STRATEGY_RECORDS = [
    {"qid": "q1", "question": "Could a koala swim to New Zealand?", "answer": False,
     "facts": ["Koalas swim short distances.", "New Zealand is 2,000 km away."]},
    {"qid": "q2", "question": "Is Lake Baikal deeper than Lake Ladoga?", "answer": True,
     "facts": ["Lake Baikal is 1,642 metres deep.", "Lake Ladoga is 230 metres deep."]},
    {"qid": "q3", "question": "Can an emu fly?", "answer": False, "facts": ["Emus are flightless birds."]},
    {"qid": "q4", "question": "Do koalas eat eucalyptus?", "answer": True, "facts": []},
    {"qid": "q5", "question": "Is a kiwi a bird?", "answer": True, "facts": ["The kiwi is a bird."]},
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.fixture
def strategy_dir(tmp_path):
    folder = tmp_path / "strategyqa"
    folder.mkdir()
    (folder / strategyqa.TRAIN_FILE).write_text(json.dumps(STRATEGY_RECORDS), encoding="utf-8")
    (folder / strategyqa.DEV_FILE).write_text(json.dumps(["q2", "q1", "q3", "q4"]), encoding="utf-8")
    write_jsonl(folder / strategyqa.FACTS_FILE, [{"_id": f"{r['qid']}_f{i}", "qid": r["qid"], "text": fact}
                                                 for r in STRATEGY_RECORDS for i, fact in enumerate(r["facts"])])
    return folder


@pytest.fixture
def quiet_env(monkeypatch, tmp_path):
    """Threads and caches as main() sets them, restored after the test; no real model can load."""
    monkeypatch.setenv("RAGKIT_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr(harness, "CACHE_ROOT", tmp_path / "cache")
    stub_setting(monkeypatch, "embedder", lambda *a, **k: HashingEmbedder())

    def no_model(*args, **kwargs):
        raise AssertionError("a test tried to load the real chat model")

    stub_setting(monkeypatch, "chat_model", no_model)
    return monkeypatch


def doc(i, title="", text=None):
    return Doc(f"d{i}", text or f"Paragraph {i} says something. And more.", title=title or f"Title {i}")


def hits(*numbers):
    return [Hit(doc(n), 1.0 / (rank + 1)) for rank, n in enumerate(numbers)]


# --- sampling ------------------------------------------------------------------------------------


def test_balanced_sample_takes_both_groups_in_turn_and_keeps_input_order():
    items = [("bridge", i) for i in range(250)] + [("comparison", i) for i in range(250)]
    sample = harness.balanced_sample(items, 100, key=lambda item: item[0], seed=3)
    assert sum(kind == "bridge" for kind, _ in sample) == 50 and len(sample) == 100
    assert sample == sorted(sample, key=items.index)
    assert sample == harness.balanced_sample(items, 100, key=lambda item: item[0], seed=3)
    assert sample != harness.balanced_sample(items, 100, key=lambda item: item[0], seed=4)


def test_balanced_sample_is_nested_and_odd_sizes_differ_by_one():
    items = [("a", i) for i in range(30)] + [("b", i) for i in range(20)]
    small, large = (harness.balanced_sample(items, n, key=lambda item: item[0], seed=1) for n in (7, 19))
    assert set(small) <= set(large)
    assert sorted(sum(kind == k for kind, _ in small) for k in "ab") == [3, 4]


def test_balanced_sample_fills_from_the_larger_group_and_returns_all_when_asked_for_more():
    items = [("yes", i) for i in range(3)] + [("no", i) for i in range(10)]
    sample = harness.balanced_sample(items, 9, key=lambda item: item[0])
    assert sum(kind == "yes" for kind, _ in sample) == 3 and len(sample) == 9
    assert harness.balanced_sample(items, None, key=lambda item: item[0]) == items
    assert harness.balanced_sample(items, 50, key=lambda item: item[0]) == items


# --- data ----------------------------------------------------------------------------------------


def test_load_hotpotqa_reads_questions_types_aliases_and_paragraphs(hotpot_dir):
    questions, docs = hotpotqa_data.load_hotpotqa(hotpot_dir)
    assert [q.id for q in questions] == ["b1", "b2", "c1", "c2"]
    assert [hotpotqa_data.type_of(q) for q in questions] == ["bridge", "bridge", "comparison", "comparison"]
    assert questions[0].relevant == ("p0", "p1") and questions[1].extra["aliases"] == ["Oceania"]
    assert len(docs) == 8 and docs[1].title == "Shirley Temple"


def test_question_type_comes_from_the_row_position_without_a_type_field():
    assert hotpotqa_data.question_type({}, 249) == "bridge"
    assert hotpotqa_data.question_type({}, 250) == "comparison"
    assert hotpotqa_data.question_type({"type": "comparison"}, 3) == "comparison"


def test_load_hotpotqa_refuses_gold_paragraphs_missing_from_the_pool(hotpot_dir):
    write_jsonl(hotpot_dir / hotpotqa_data.QUESTIONS_FILE, [{**HOTPOT_ROWS[0], "supporting_pids": ["p0", "p99"]}])
    with pytest.raises(CorpusError, match="p99"):
        hotpotqa_data.load_hotpotqa(hotpot_dir)


def test_load_hotpotqa_names_a_row_without_its_fields(hotpot_dir):
    write_jsonl(hotpot_dir / hotpotqa_data.QUESTIONS_FILE, [{"id": "x", "question": "?"}])
    with pytest.raises(CorpusError, match="row 1 lacks answer, supporting_pids"):
        hotpotqa_data.load_hotpotqa(hotpot_dir)


def test_missing_data_names_the_option_and_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_EVALDATA", str(tmp_path / "nowhere"))
    with pytest.raises(SystemExit, match="--data.*RAGKIT_EVALDATA"):
        harness.data_folder(None, "hotpotqa", (hotpotqa_data.QUESTIONS_FILE,))
    with pytest.raises(SystemExit, match=r"missing dev200_qids.json.*--data .*RAGKIT_EVALDATA"):
        harness.data_folder(str(tmp_path), "strategyqa", (strategyqa.DEV_FILE,))
    with pytest.raises(SystemExit, match="--data"):
        strategyqa.main(["--data", str(tmp_path), "--skip-llm"])


def test_load_strategyqa_keeps_the_dev_order_answers_and_facts(strategy_dir):
    questions, facts = strategyqa.load_strategyqa(strategy_dir)
    assert [q.id for q in questions] == ["q2", "q1", "q3", "q4"]
    assert [q.answer for q in questions] == ["yes", "no", "no", "yes"]
    assert questions[0].relevant == ("q2_f0", "q2_f1") and questions[3].relevant == ()
    assert len(facts) == 6 and facts[0].source == "q1"


def test_load_strategyqa_refuses_unknown_qids_and_non_boolean_answers(strategy_dir):
    (strategy_dir / strategyqa.DEV_FILE).write_text(json.dumps(["q1", "zz"]), encoding="utf-8")
    with pytest.raises(CorpusError, match="zz"):
        strategyqa.load_strategyqa(strategy_dir)
    (strategy_dir / strategyqa.DEV_FILE).write_text(json.dumps(["q1"]), encoding="utf-8")
    (strategy_dir / strategyqa.TRAIN_FILE).write_text(json.dumps([{**STRATEGY_RECORDS[0], "answer": "no"}]))
    with pytest.raises(CorpusError, match="true/false"):
        strategyqa.load_strategyqa(strategy_dir)


# --- the iterative baseline ------------------------------------------------------------------------


def recording_search(rankings):
    """A fake retriever: a fixed ranking per query (else nothing); records the queries and depths."""
    def search(query, *, k):
        search.calls.append((query, k))
        return [Hit(doc(n), 1.0) for n in rankings.get(query, [])][:k]
    search.calls = []
    return search


def test_expansion_queries_add_each_top_hits_title_and_first_sentence():
    top = [Hit(doc(1, "Kiss and Tell", "Kiss and Tell stars Shirley Temple. It is a comedy."), 1.0),
           Hit(doc(2, "Emu"), 0.5), Hit(doc(3), 0.4), Hit(doc(4), 0.3)]
    queries = hotpotqa.expansion_queries("Who played Archer?", top, follow=3)
    assert queries[0] == "Who played Archer? Kiss and Tell Kiss and Tell stars Shirley Temple."
    assert len(queries) == 3 and queries[1].startswith("Who played Archer? Emu Paragraph 2 says something.")


def test_iterative_search_runs_the_question_then_one_query_per_followed_hit_and_fuses_them():
    question = "Who played Archer?"
    followed = hotpotqa.expansion_queries(question, hits(1, 2), follow=2)
    search = recording_search({question: [1, 2], followed[0]: [5, 1], followed[1]: [5, 6]})
    fused = hotpotqa.iterative_search(search, question, k=3, follow=2, depth=20)
    assert [q for q, _ in search.calls] == [question, *followed] and {k for _, k in search.calls} == {20}
    assert [h.id for h in fused] == ["d5", "d1", "d2"]  # d5 is first in two lists, d1 first and second


def test_iterative_search_with_nothing_found_asks_no_second_query():
    search = recording_search({})
    assert hotpotqa.iterative_search(search, "unknown words") == []
    assert len(search.calls) == 1


# --- CoT-RAG evidence --------------------------------------------------------------------------------


def test_recording_search_keeps_the_budget_depth_but_hands_back_k():
    search = recording_search({"q": [1, 2, 3, 4, 5, 6]})
    recording = hotpotqa.RecordingSearch(search, keep=5)
    assert [h.id for h in recording("q", k=3)] == ["d1", "d2", "d3"]
    assert search.calls == [("q", 5)] and len(recording.rankings[0]) == 5


def test_run_cot_scores_steps_at_the_budget_and_its_union_at_k():
    steps = "1. Who starred in Kiss and Tell?\n2. What post did Shirley Temple hold?"
    chat = ScriptedChat(steps, "Shirley Temple starred in it.", "She was Chief of Protocol.",
                        "Shirley Temple [S1] was Chief of Protocol [S2].", pause=0.01)
    search = recording_search({"Who starred in Kiss and Tell?": [0, 2, 3, 4, 5],
                               "What post did Shirley Temple hold?": [1, 0, 6, 7]})
    run = hotpotqa.run_cot("What position did the Kiss and Tell star hold?", search, chat, max_steps=3, k=2)
    assert run.result.sources == ("d0", "d2", "d1")  # top 2 per step, once each
    assert [h.id for h in run.budget_hits()] == ["d0", "d1", "d2", "d3", "d6"]
    assert hotpotqa.strip_citations(run.result.answer) == "Shirley Temple was Chief of Protocol."
    assert run.seconds >= 0.01 * len(chat.calls) and len(chat.calls) == 4  # the wall time of every call


# --- the reader and the scores -----------------------------------------------------------------------


@pytest.mark.parametrize("reply, expected", [
    ("Chief of Protocol", "Chief of Protocol"), ("Answer: Chief of Protocol.", "Chief of Protocol"),
    ("The answer is yes.", "yes"), ('"Lake Baikal"\nbecause it is deeper', "Lake Baikal"), ("", ""),
    ("\n  So the answer is: 1945", "1945")])
def test_short_answer_keeps_the_first_line_without_its_lead(reply, expected):
    assert hotpotqa.short_answer(reply) == expected


def test_read_answer_puts_the_paragraphs_and_the_question_in_the_prompt():
    chat = ScriptedChat("Answer: Chief of Protocol.", pause=0.01)
    answer, seconds = hotpotqa.read_answer("What post?", [Hit(Doc("p1", "She was Chief of Protocol.",
                                                                  title="Shirley Temple"), 1.0)], chat)
    messages, options = chat.calls[0]
    assert answer == "Chief of Protocol" and seconds >= 0.01  # the call's wall time
    assert messages[-1]["content"] == ("Paragraphs:\n[1] Shirley Temple: She was Chief of Protocol.\n\n"
                                       "Question: What post?")
    assert options["max_tokens"] == 24 and options["stop"] == ["\n"]


def test_evidence_scores_count_all_gold_per_type_and_the_gold_share():
    questions = [Question("b", "?", ("x", "y"), extra={"type": "bridge"}),
                 Question("c", "?", ("z", "w"), extra={"type": "comparison"})]
    scores = hotpotqa.evidence_scores({"b": ["x", "y", "n"], "c": ["z", "n"]}, questions)
    assert scores == {"questions": 2, "all gold": 0.5, "bridge": 1.0, "comparison": 0.0, "gold recall": 0.75,
                      "paragraphs": 2.5}
    assert hotpotqa.evidence_scores({"b": []}, questions[:1])["comparison"] == ""


def test_answer_scores_use_the_aliases_and_squad_normalisation():
    questions = [Question("a", "?", ("x",), answer="Australia", extra={"aliases": ["Oceania"]}),
                 Question("b", "?", ("x",), answer="Lake Baikal")]
    scores = hotpotqa.answer_scores({"a": "oceania.", "b": "the Baikal"}, questions)
    assert scores["EM"] == 0.5 and scores["F1"] == pytest.approx((1 + 2 / 3) / 2)


def test_result_names_keep_partial_runs_apart():
    assert harness.result_name("hotpotqa", subset=False, skip_llm=False) == "hotpotqa"
    assert harness.result_name("hotpotqa", subset=True, skip_llm=True) == "hotpotqa-retrieval-subset"


# --- StrategyQA answers ----------------------------------------------------------------------------


@pytest.mark.parametrize("answer, expected", [
    ("yes", "yes"), ("No.", "no"), ("True", "yes"), ("false, it cannot", "no"), ("Yes, and no", "yes"),
    ("it is not true", "no"), ("That is not false", "yes"), ("the koala could not, so no", "no"),
    ("maybe", "unknown"), ("", "unknown"), ("it could be yes or no", "unknown"), ("nothing", "unknown")])
def test_parse_yes_no(answer, expected):
    assert strategyqa.parse_yes_no(answer) == expected


def test_accuracy_counts_unknown_as_wrong_and_separately():
    questions = [Question(f"q{i}", "?", (), answer=a) for i, a in enumerate(["yes", "no", "no", "yes"])]
    scores = strategyqa.accuracy({"q0": "Yes.", "q1": "false", "q2": "I am not sure", "q3": "no"}, questions)
    assert scores == {"questions": 4, "accuracy": 0.5, "unknown": 1,
                      "correct": {"q0": 1.0, "q1": 1.0, "q2": 0.0, "q3": 0.0}}


def test_accuracy_gains_compare_each_answer_row_with_the_bases_it_has():
    questions = [Question(f"q{i}", "?", (), answer=a) for i, a in enumerate(["yes", "no", "no", "yes"])]
    rows = {"majority class (always no)": strategyqa.accuracy({q.id: "no" for q in questions}, questions),
            "retrieval check: BM25, question -> facts": {"questions": 4, "facts R@5": 0.5},
            "always right": strategyqa.accuracy({q.id: q.answer for q in questions}, questions)}
    entry = strategyqa.accuracy_gains(rows)
    assert entry["bases"] == ["majority class (always no)"]  # plain CoT did not run
    assert [row["rung"] for row in entry["gains"]] == ["always right"]
    assert entry["gains"][0]["accuracy gain [95% interval]"].startswith("+0.500 [")


def test_plain_cot_reads_the_answer_line_of_rwrs_prompt():
    chat = ScriptedChat("Step 1: Emus are flightless birds.\nSo the answer is no.")
    answer, reply = strategyqa.plain_cot("Can an emu fly?", chat, max_steps=3)
    messages, options = chat.calls[0]
    assert answer == "no" and reply.startswith("Step 1")
    assert messages[-1]["content"] == "Can an emu fly?" and options["temperature"] == 0.0


def test_retrieval_check_leaves_out_questions_without_facts():
    questions = [Question("a", "first", ("f1", "f2")), Question("b", "second", ("f3",)), Question("c", "third", ())]
    ranking = {"first": ["f1", "x"], "second": ["f3"]}
    scores, seconds = strategyqa.retrieval_check(
        lambda q, k: [Hit(Doc(i, "t"), 1.0) for i in ranking.get(q, [])][:k], questions)
    assert scores["questions"] == 2 and scores["facts R@5"] == 0.75 and scores["all facts@5"] == 0.5
    assert set(seconds) == {"a", "b"}


# --- whole runs on tiny data -------------------------------------------------------------------------


def read_result(folder, name):
    return json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))


def test_hotpotqa_retrieval_run_with_bm25(hotpot_dir, tmp_path, quiet_env, capsys):
    out = tmp_path / "results"
    assert hotpotqa.main(["--data", str(hotpot_dir), "--retriever", "bm25", "--skip-llm", "--threads", "1",
                          "--results-dir", str(out)]) == 0
    result = read_result(out, "hotpotqa-retrieval")
    assert [row["rung"] for row in result["rows"]] == [hotpotqa.BM25_RUNG, hotpotqa.iterative_rung("bm25")]
    assert result["extra"]["types"] == {"bridge": 2, "comparison": 2} and result["rows"][0]["questions"] == 4
    gains = result["significance"]
    assert gains["bases"] == [hotpotqa.BM25_RUNG] and gains["metrics"] == ["all gold", "gold recall"]
    assert [(row["over"], row["rung"]) for row in gains["gains"]] == [(hotpotqa.BM25_RUNG,
                                                                       hotpotqa.iterative_rung("bm25"))]
    assert [row["id"] for row in gains["per_question"][hotpotqa.BM25_RUNG]] == ["b1", "b2", "c1", "c2"]
    assert "README check" in capsys.readouterr().out


def test_hotpotqa_hybrid_run_encodes_once_into_the_cache(hotpot_dir, tmp_path, quiet_env):
    out = tmp_path / "results"
    argv = ["--data", str(hotpot_dir), "--skip-llm", "--questions", "2", "--results-dir", str(out)]
    hotpotqa.main(argv)
    first = read_result(out, "hotpotqa-retrieval-subset")
    assert hotpotqa.HYBRID_RUNG in [row["rung"] for row in first["rows"]]
    assert first["extra"]["embedding_cache"]["encoded"] == 8 and first["extra"]["types"]["comparison"] == 1
    hotpotqa.main(argv)
    assert read_result(out, "hotpotqa-retrieval-subset")["extra"]["embedding_cache"]["reused"] == 8


def test_hotpotqa_llm_run_with_a_scripted_model(hotpot_dir, tmp_path, quiet_env):
    chat = ScriptedChat("1. Who starred in Kiss and Tell?\n2. Which post did she hold?")
    stub_setting(quiet_env, "chat_model", lambda *a, **k: chat)
    out = tmp_path / "results"
    hotpotqa.main(["--data", str(hotpot_dir), "--retriever", "bm25", "--llm-questions", "2", "--k", "2",
                   "--results-dir", str(out)])
    result = read_result(out, "hotpotqa-subset")
    rows = {row["rung"]: row for row in result["rows"]}
    assert rows["LLM sample: single-shot bm25"]["questions"] == 2
    assert rows["4. CoT-RAG, step rankings interleaved, cut at 5"]["paragraphs"] <= 5
    assert {"5. reader on the single-shot top 5", "5. reader on the CoT-RAG top 5",
            "5. CoT-RAG's own answer (citations stripped)"} <= set(rows)
    assert len(result["extra"]["per_question"]) == 2 and result["extra"]["cot_rag"]["mean_steps"] == 2
    assert {q["type"] for q in result["extra"]["per_question"]} == {"bridge", "comparison"}


def test_strategyqa_retrieval_run_with_bm25(strategy_dir, tmp_path, quiet_env, capsys):
    out = tmp_path / "results"
    strategyqa.main(["--data", str(strategy_dir), "--retriever", "bm25", "--skip-llm", "--results-dir", str(out)])
    rows = {row["rung"]: row for row in read_result(out, "strategyqa-retrieval")["rows"]}
    assert rows["majority class (always no)"]["accuracy"] == 0.5
    assert rows["retrieval check: BM25, question -> facts"]["questions"] == 3  # q4 has no facts
    assert "README check" in capsys.readouterr().out


def test_strategyqa_llm_run_with_a_scripted_model(strategy_dir, tmp_path, quiet_env):
    chat = ScriptedChat("Step 1: Lake Baikal is 1,642 metres deep.\nSo the answer is yes.")
    stub_setting(quiet_env, "chat_model", lambda *a, **k: chat)
    out = tmp_path / "results"
    strategyqa.main(["--data", str(strategy_dir), "--questions", "2", "--paths", "2", "--results-dir", str(out)])
    result = read_result(out, "strategyqa-subset")
    rows = {row["rung"]: row for row in result["rows"]}
    assert rows["(a) plain CoT (greedy)"]["accuracy"] == 0.5 and rows["(a) plain CoT (greedy)"]["unknown"] == 0
    assert rows["(c) RwR (verify each step, top 3 facts)"]["steps corrected"] == "0/2"
    assert rows["(d) RwR vote (2 paths, embedding support)"]["accuracy"] == 0.5
    assert rows[strategyqa.RETRIEVE_THEN_READ]["accuracy"] == 0.5  # 'yes' to yes and no
    assert "retrieval check: hybrid, question -> facts" in rows
    assert result["extra"]["vote_majority_equals_self_consistency"] == 2
    assert result["extra"]["answers"] == {"yes": 1, "no": 1}


def test_strategyqa_chat_setting_names_the_model_asked_and_the_result_file(strategy_dir, tmp_path, quiet_env):
    asked, chat = [], ScriptedChat("Step 1: Lake Baikal is 1,642 metres deep.\nSo the answer is yes.")
    stub_setting(quiet_env, "chat_model", lambda setting=None: asked.append(setting) or chat)
    out = tmp_path / "results"
    strategyqa.main(["--data", str(strategy_dir), "--questions", "2", "--retriever", "bm25", "--no-votes",
                     "--chat", "qwen-x", "--results-dir", str(out)])
    result = read_result(out, "strategyqa-qwen-x-subset")
    assert asked == ["qwen-x"] and not (out / "strategyqa-subset.json").exists()
    assert result["significance"]["bases"] == list(strategyqa.BASES)
    gains = {(row["rung"], row["over"]) for row in result["significance"]["gains"]}
    assert ("(c) RwR (verify each step, top 3 facts)", strategyqa.RETRIEVE_THEN_READ) in gains


def test_retrieve_then_read_gives_the_chat_model_the_questions_top_facts_and_no_chain():
    chat = ScriptedChat("So the answer is no.")
    search = recording_search({"Can an emu fly?": [0, 1, 2, 3, 4, 5]})
    assert strategyqa.retrieve_then_read("Can an emu fly?", search, chat) == "no"
    messages, options = chat.calls[0]
    facts = "\n".join(f"{n + 1}. {doc(n).text}" for n in range(5))
    assert messages[-1]["content"] == f"Question: Can an emu fly?\nFacts:\n{facts}"
    assert search.calls == [("Can an emu fly?", 5)]
    assert options["temperature"] == 0.0 and options["stop"] == ["\n"] and len(chat.calls) == 1


class FakeSpecialist(ScriptedChat):
    """A scripted specialist: a chat model with a job."""

    def __init__(self, job, *replies):
        self.job, self.name = job, f"{job} specialist"
        super().__init__(*replies)


def test_strategyqa_specialist_rows_without_the_votes(strategy_dir, tmp_path, quiet_env):
    chat = ScriptedChat("Step 1: Lake Baikal is 1,642 metres deep.\nSo the answer is yes.")
    fakes = {"answerer": FakeSpecialist("answerer", "no"), "judge": FakeSpecialist("judge", "supports")}
    stub_setting(quiet_env, "chat_model", lambda *a, **k: chat)
    quiet_env.setattr(strategyqa, "specialist", lambda job: fakes[job])
    out = tmp_path / "results"
    strategyqa.main(["--data", str(strategy_dir), "--questions", "2", "--retriever", "bm25", "--no-votes",
                     "--specialists", "--results-dir", str(out)])
    result = read_result(out, "strategyqa-specialists-subset")  # never overwrites the few-shot run's file
    rows = {row["rung"]: row for row in result["rows"]}
    assert not any(name.startswith(("(b)", "(d)")) for name in rows)
    assert rows["(a+) plain CoT, its steps read by the answerer specialist"]["accuracy"] == 0.5  # 'no' to yes and no
    assert rows["(c+) RwR with judge + answerer specialists (top 3 facts)"]["steps confirmed"] == "2/2"
    assert rows["(e) retrieve then read: top 5 facts, answerer specialist (no chain)"]["questions"] == 2
    read_prompt = fakes["answerer"].calls[0][0][-1]["content"]
    assert read_prompt.endswith("Facts:\n1. Lake Baikal is 1,642 metres deep.")
    assert result["extra"]["specialist_verdicts"] == {"confirmed": 2, "corrected": 0, "unverified": 0}
    gains = result["significance"]
    assert gains["bases"] == list(strategyqa.BASES)
    assert {row["rung"] for row in gains["gains"] if row["over"] == "(a) plain CoT (greedy)"} == {
        "majority class (always no)", *(name for name in rows if name.startswith(("(c)", "(a+)", "(c+)", "(e)")))}


def test_command_lines_have_the_documented_defaults_and_help(capsys):
    hot = hotpotqa.parse_args([])
    assert (hot.retriever, hot.llm_questions, hot.max_steps, hot.k, hot.questions) == ("hybrid", 100, 3, 3, None)
    strat = strategyqa.parse_args([])
    assert (strat.retriever, strat.paths, strat.scorer, strat.questions) == ("hybrid", 5, "embedding", None)
    for module in (hotpotqa, strategyqa):
        with pytest.raises(SystemExit) as exit_:
            module.parse_args(["--help"])
        assert exit_.value.code == 0 and "--data" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        strategyqa.parse_args(["--scorer", "nli"])


def test_course_multihop_scores_each_pipeline_per_question_for_its_gains():
    from benchmarks import course_multihop

    docs = {doc_id: Doc(doc_id, text, title=title) for doc_id, title, text in HOTPOT_PARAGRAPHS}
    questions = [Question("b1", "first?", ("p0", "p1")), Question("b2", "second?", ("p5",))]
    found = {"first?": [docs["p0"], docs["p1"]], "second?": [docs["p5"]]}
    missed = {"first?": [docs["p0"], docs["p3"]], "second?": [docs["p6"]]}
    runs = {course_multihop.BASES[0]: ({q: [Hit(d, 1.0) for d in ds] for q, ds in missed.items()}, 0.01),
            course_multihop.BASES[1]: ({q: [Hit(d, 1.0) for d in ds] for q, ds in found.items()}, 0.02)}
    results = course_multihop.scored(runs, questions)
    rows = course_multihop.rows_for(runs, results)
    assert [row["all_gold@5"] for row in rows] == [0.0, 1.0] and [row["ms/question"] for row in rows] == [10, 20]
    entry = harness.significance(results, course_multihop.BASES, course_multihop.METRICS)
    assert entry["gains"][0]["all_gold@5 gain [95% interval]"] == "+1.000 [+1.000, +1.000]"


def test_course_multihop_reader_bridges_add_rows_their_gains_and_the_readers_answers_as_bridges(tmp_path, quiet_env):
    from benchmarks import course_multihop

    stub_setting(quiet_env, "chat_model", lambda *a, **k: ScriptedChat("1. Who founded the Hermitage?\n"
                                                                         "2. Where was #1 born?"))
    reader = ScriptedReader(("Catherine II", 0))
    quiet_env.setattr(generate, "specialist_reader", lambda **kwargs: reader)
    out = tmp_path / "results"
    assert course_multihop.main(["--no-specialist", "--reader-bridges", "--results-dir", str(out)]) == 0
    result = read_result(out, "course-multihop-no-specialist-reader-bridges")
    sentence, by_reader = ("CoT-RAG self-ask (steps + question), few-shot 135M",
                           "CoT-RAG self-ask (steps + question), reader bridges, few-shot 135M")
    rows = {row["pipeline"]: row for row in result["rows"]}
    assert {sentence, by_reader, "CoT-RAG self-ask (steps alone), reader bridges, RRF with the question's ranking, "
                                 "few-shot 135M"} <= set(rows) and len(rows) == 3 + 2 * 2 * 2
    assert {"all_gold@5", "recall@5", "ms/question"} <= set(rows[by_reader])
    gains = result["significance"]
    assert gains["bases"][:2] == list(course_multihop.BASES) and sentence in gains["bases"]
    paired = [row for row in gains["gains"] if row["over"] == sentence]
    assert [row["rung"] for row in paired] == [by_reader]
    assert re.fullmatch(r"[+-]\d\.\d{3} \[[+-]\d\.\d{3}, [+-]\d\.\d{3}\]", paired[0]["all_gold@5 gain [95% interval]"])
    assert len([row for row in gains["gains"] if row["over"] not in course_multihop.BASES]) == 4  # 2 queries x 2 ways
    # step 2 was asked with step 1's reader answer in place of #1, and records where each bridge came from
    assert reader.calls[:2] == [("Who founded the Hermitage?", reader.calls[0][1]),
                                ("Where was Catherine II born?", reader.calls[1][1])]
    assert len(reader.calls) == 2 * 2 * 47 and all(len(ids) == 2 for _, ids in reader.calls)
    bridges = result["extra"]["bridges"]
    assert bridges[by_reader]["mh01"] == [{"step": "Who founded the Hermitage?", "bridge": "Catherine II",
                                           "from": "reader"},
                                          {"step": "Where was #1 born?", "bridge": "Catherine II", "from": "reader"}]
    assert {step["from"] for step in bridges[sentence]["mh01"]} == {"sentence"}
    assert result["extra"]["bridge_sources"][by_reader] == {"steps": 94, "reader": 94, "sentence": 0, "nothing": 0}


def test_course_multihop_reader_bridges_stop_when_the_reader_is_not_built(tmp_path, quiet_env):
    from benchmarks import course_multihop

    def not_built(**kwargs):
        raise ModelNotFound("no reader specialist: build it with `make specialists SPECIALISTS=reader`")

    quiet_env.setattr(generate, "specialist_reader", not_built)
    with pytest.raises(ModelNotFound, match="SPECIALISTS=reader"):
        course_multihop.main(["--no-specialist", "--reader-bridges", "--results-dir", str(tmp_path)])
    assert not list(tmp_path.iterdir())
