"""ragkit.train.records.specialists and ragkit.models.specialists: training records from small fake evaluation
files, reading replies, scores, prompts put into a job's format, where specialists are found, and a build on a tiny
model."""

import gzip
import json
import math

import pytest
import torch

from ragkit.corpus import Doc
from ragkit.errors import ConfigError, CorpusError, ModelNotFound
from ragkit.models import finetuned, specialists
from ragkit.models.jobs import MAX_STEPS, SYSTEMS, parse_decomposition, parse_label, parse_yes_no
from ragkit.models.llm import ChatReply
from ragkit.models.specialists import Specialist, reframe, specialist_dir
from ragkit.search.lexical import BM25Index
from ragkit.text import numbered, search_tokenize
from ragkit.train import specialists as building
from ragkit.train.finetune import FineTuneConfig
from ragkit.train.heldout import decomposition_scores, heldout_scores, label_scores, rewriter_scores
from ragkit.train.records.specialists import (
    answerer_records,
    balance,
    build_records,
    decomposer_records,
    heldout_sample,
    judge_records,
    source_files,
    train_claims,
    wikidata_question,
)
from ragkit.train.splits import split_of
from tests.fakes import ScriptedChat
from tests.tiny_llm import tiny_chat_model

torch.set_num_threads(1)


def musique(n: int, steps: list[str], question: str = "") -> dict:
    return {"id": f"2hop__{n}", "question": question or f"Who is the spouse of the performer of Song {n}?",
            "question_decomposition": [{"question": s} for s in steps]}


def strategy(qid: str, answer: bool, steps=("Is it?", "Is #1 so?"), facts=("Fact one.",), question: str = "") -> dict:
    return {"qid": qid, "question": question or f"Is {qid} a thing?", "answer": answer, "facts": list(facts),
            "decomposition": list(steps)}


# --- decomposer records -------------------------------------------------------------------------------------


@pytest.mark.parametrize("step, question", [
    ("Erik Hort >> place of birth", "Where was Erik Hort born?"),
    ("#1 >> spouse", "Who is the spouse of #1?"),
    ("#1 of France >> mother", "Who is the mother of #1 of France?"),
    ("Lago District >> located in the administrative territorial entity",
     "In which administrative territorial entity is Lago District located?"),
    ("#2 >> capital of", "What is #2 capital of?"),
    ("UHF >> distributed by", "What is UHF distributed by?"),
    ("Learjet 60 >> manufacturer", "What is the manufacturer of Learjet 60?"),
    ("When was #1 abolished?", "When was #1 abolished?"),
])
def test_wikidata_steps_read_as_questions_and_keep_their_references(step, question):
    assert wikidata_question(step) == question


def test_decomposer_records_keep_dev_questions_out_and_drop_long_decompositions():
    items = [musique(1, ["Green >> performer", "#1 >> spouse"]), musique(2, ["a?"] * 5)]
    records, counts = decomposer_records(items, [strategy("q1", True), strategy("dev", False)], exclude=["dev"])
    assert [r["source"] for r in records] == ["musique:2hop__1", "strategyqa:q1"]
    assert records[0]["answer"] == "1. Who is the performer of Green?\n2. Who is the spouse of #1?"
    assert counts["musique dropped (over 4 steps)"] == 1 and counts["musique"] == counts["strategyqa"] == 1
    assert records[0]["messages"] == [{"role": "system", "content": SYSTEMS["decomposer"]},
                                      {"role": "user", "content": items[0]["question"]}]


def test_the_target_ends_after_the_last_step():
    assert numbered(["A?", "B #1?"]) == "1. A?\n2. B #1?"
    assert parse_decomposition(numbered(["A?", "B #1?"])) == ["A?", "B #1?"]


def test_the_held_out_tenth_is_fixed_by_the_question_text():
    questions = [f"Question number {n}?" for n in range(2000)]
    held = [q for q in questions if split_of(q) == "heldout"]
    assert 0.08 < len(held) / len(questions) < 0.12
    assert split_of("Who wrote Dracula?") == split_of("  who wrote  DRACULA? ")


# --- answerer and judge records -----------------------------------------------------------------------------


FACTS = [{"_id": f"q{n}_f0", "qid": f"q{n}", "text": text} for n, text in enumerate(
    ["Tomatoes are red fruits.", "Bananas are yellow fruits.", "Limes are green fruits.",
     "Koalas eat leaves, not fruits.", "Kiwi fruits grow on vines.", "Paris is the capital of France."])]


def facts_index():
    return BM25Index([Doc(f["_id"], f["text"], source=f["qid"]) for f in FACTS], tokenizer=search_tokenize)


def test_answerer_records_are_balanced_and_come_with_gold_and_retrieved_facts():
    items = [strategy(f"q{n}", n < 4, facts=[FACTS[n]["text"]], question=f"Is fact {n} about fruit?")
             for n in range(6)] + [strategy("dev", True)]
    records, counts = answerer_records(items, facts_index(), exclude=["dev"], k=2)
    assert counts["labels"] == {"no": 4, "yes": 4} and counts["questions"] == 4
    assert [r["facts"] for r in records[:2]] == ["gold", "bm25"] and all(r["split"] == records[0]["split"]
                                                                          for r in records[:2])
    assert records[0]["messages"][1]["content"].startswith("Question: Is fact ") and "\nFacts:\n1. " in \
        records[0]["messages"][1]["content"]


def test_the_held_out_sample_takes_the_corpora_in_turn_and_skips_training_records():
    records = ([{"split": "heldout", "source": f"strategyqa:{i}"} for i in range(5)]
               + [{"split": "train", "source": "scifact:0"}]
               + [{"split": "heldout", "source": f"scifact:{i}"} for i in range(2)])
    sample = heldout_sample(records, 5)
    assert [r["source"] for r in sample] == ["strategyqa:0", "scifact:0", "strategyqa:1", "scifact:1", "strategyqa:2"]
    assert len(heldout_sample(records, 100)) == 7 and heldout_sample(records, 0) == []


def test_balance_cuts_the_larger_label_to_the_smaller_keeping_the_order():
    kept = balance(list(range(10)), key=lambda n: n < 3)
    assert kept[:3] == [0, 1, 2] and len(kept) == 6 and kept == sorted(kept)
    assert kept == balance(list(range(10)), key=lambda n: n < 3)  # seeded


def test_judge_records_pair_a_fact_with_look_alikes_and_scifact_rationales_with_claims():
    items = [strategy(f"q{n}", True, facts=[FACTS[n]["text"]]) for n in range(6)]
    claims = [{"id": "1", "claim": "Aspirin lowers fever.",
               "evidence": [{"doc_id": "9", "label": "SUPPORT", "sentences": [0]}]},
              {"id": "2", "claim": "Aspirin raises fever.",
               "evidence": [{"doc_id": "9", "label": "CONTRADICT", "sentences": [0, 1]}]}]
    sentences = {"9": {"title": "Aspirin", "sentences": ["Aspirin lowers fever.", "It is an NSAID."]}}
    records, counts = judge_records(items, facts_index(), claims, sentences, exclude=["q5"], distractors=2)
    supports = [r for r in records if r["source"] == "strategyqa:q0" and r["answer"] == "supports"][0]
    unrelated = [r for r in records if r["source"] == "strategyqa:q0" and r["answer"] == "unrelated"][0]
    assert "Tomatoes are red fruits." in supports["messages"][1]["content"]
    assert "Tomatoes are red fruits." not in unrelated["messages"][1]["content"].split("Step:")[0]
    assert counts["by source"]["scifact contradicts"] == 1 and counts["by source"]["scifact unrelated"] == 2
    assert "[1] Aspirin: Aspirin lowers fever. It is an NSAID.\nStep: Aspirin raises fever." in \
        [r for r in records if r["answer"] == "contradicts"][0]["messages"][1]["content"]
    assert not any(r["source"] == "strategyqa:q5" for r in records)


def test_the_judge_leaves_out_a_train_claim_that_repeats_a_test_claim():
    train = [{"id": "1", "claim": "Aspirin lowers fever."}, {"id": "2", "claim": "Coffee raises blood pressure."}]
    test = [{"id": "900", "claim": "aspirin lowers fever."}]
    assert [claim["id"] for claim in train_claims(train, test)] == ["2"]


def write_evaldata(root, *, questions: int = 24):
    """Small fake copies of the evaluation files (data/benchmarks/) the decomposer is built from."""
    (root / "musique").mkdir(parents=True)
    (root / "strategyqa").mkdir()
    items = [musique(n, ["Song >> performer", "#1 >> spouse"], question=f"Who married the singer of song {n}?")
             for n in range(questions)]
    (root / "musique" / "dev_decompositions.json").write_text(json.dumps(items))
    train = [strategy("q1", True), strategy("dev", True)]
    (root / "strategyqa" / "strategyqa_train.json").write_text(json.dumps(train))
    (root / "strategyqa" / "dev200_qids.json").write_text(json.dumps(["dev"]))
    return root


def test_build_records_reads_the_files_and_names_a_broken_one(tmp_path):
    root = write_evaldata(tmp_path / "eval")
    records, counts = build_records("decomposer", root=root)
    assert counts["musique"] == 24 and counts["strategyqa"] == 1
    (root / "strategyqa" / "dev200_qids.json").write_text("[not json")
    with pytest.raises(ValueError, match="dev200_qids.json"):
        build_records("decomposer", root=root)


def test_build_records_reads_gzip_compressed_files_as_data_benchmarks_keeps_them(tmp_path):
    root = write_evaldata(tmp_path / "eval")
    plain = build_records("decomposer", root=root)
    for path in (root / "musique" / "dev_decompositions.json", root / "strategyqa" / "strategyqa_train.json"):
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
        path.unlink()
    assert build_records("decomposer", root=root) == plain
    files = source_files("decomposer", root=root)
    assert files["musique"] == root / "musique" / "dev_decompositions.json.gz"
    assert files["dev200"] == root / "strategyqa" / "dev200_qids.json"  # a plain file is read as it is


def test_build_records_names_missing_evaluation_data_and_the_setting(tmp_path):
    with pytest.raises(CorpusError, match="RAGKIT_EVALDATA") as caught:
        build_records("decomposer", root=tmp_path / "nowhere")
    assert "musique/dev_decompositions.json" in str(caught.value) and str(tmp_path / "nowhere") in str(caught.value)


# --- reading replies and scoring ----------------------------------------------------------------------------


@pytest.mark.parametrize("text, label", [("Yes.", "yes"), ("no, because it is not", "no"), ("maybe", ""), ("", "")])
def test_yes_no_is_read_from_the_first_word(text, label):
    assert parse_yes_no(text) == label


@pytest.mark.parametrize("text, label", [("supports", "supports"), ("Contradicts.", "contradicts"),
                                         ("The evidence is unrelated", "unrelated"), ("confirmed", "")])
def test_a_judge_label_is_its_first_label_word(text, label):
    assert parse_label(text) == label


def test_decomposition_scores_align_steps_by_position_and_count_missing_ones_as_zero():
    gold = [["Who is the performer of Green?", "Who is the spouse of #1?"], ["A b?"]]
    scores = decomposition_scores([gold[0], ["A b?", "C d?"]], gold, stopped=[True, False])
    assert scores["step_f1"] == pytest.approx((1.0 + 0.5) / 2)
    assert [scores[k] for k in ("right_count", "stopped", "mean_steps", "gold_mean_steps")] == [0.5, 0.5, 2, 1.5]


def test_label_scores_give_accuracy_the_majority_baseline_and_accuracy_per_label():
    scores = label_scores(["yes", "yes", "no", "?"], ["yes", "no", "no", "no"], labels=("yes", "no"))
    assert scores == {"n": 4, "accuracy": 0.5, "majority": 0.75, "unreadable": 0.25, "accuracy[yes]": 1.0,
                      "accuracy[no]": pytest.approx(1 / 3)}


def test_evaluate_runs_a_chat_model_on_the_records():
    records = [{"messages": [{"role": "user", "content": "Q?"}], "answer": a} for a in ("yes", "no")]
    assert heldout_scores(ScriptedChat("Yes.", "yes"), records, job="answerer")["accuracy"] == 0.5


def test_the_relevance_judge_is_also_scored_by_how_its_p_yes_ranks_relevant_passages_first():
    records = [{"messages": [{"role": "user", "content": "Q?"}], "answer": a} for a in ("yes", "no", "yes")]
    replies = [ChatReply("no", "scripted", top_logprobs=(("no", math.log(p_no)), ("yes", math.log(1 - p_no))))
               for p_no in (0.6, 0.9, 0.55)]  # says "no" every time, yet ranks both relevant passages first
    scores = heldout_scores(ScriptedChat(*replies), records, job="relevance")
    assert scores["accuracy[yes]"] == 0.0 and scores["auc"] == 1.0


def test_the_relevance_judge_is_also_scored_on_its_hard_pairs_alone():
    records = [{"messages": [{"role": "user", "content": "Q?"}], "answer": a, **extra}
               for a, extra in (("yes", {}), ("no", {}), ("no", {"negative": "random"}))]
    replies = [ChatReply("no", "scripted", top_logprobs=(("no", math.log(p_no)), ("yes", math.log(1 - p_no))))
               for p_no in (0.6, 0.5, 0.9)]  # the easy negative ranked last, the hard one above the relevant passage
    scores = heldout_scores(ScriptedChat(*replies), records, job="relevance")
    assert scores["auc"] == 0.5 and scores["auc[hard]"] == 0.0


def test_the_rewriter_is_scored_by_agreement_with_the_kept_rewrite_and_exact_restoration():
    records = [{"form": "keywords", "source": "scifact:1", "answer": "statin LDL risk"},
               {"form": "questions", "source": "hotpotqa:2", "answer": '{"questions": ["Who?", "Where?"]}'},
               {"form": "keywords", "source": "xquad-vi:3", "answer": "Đội nào thắng?"},
               {"form": "keywords", "source": "xquad-vi:4", "answer": "Ai là vua?"}]
    replies = ["statin LDL", "not json and no question", "Đội nào thắng?", "Ai la vua?"]
    scores = rewriter_scores(replies, records)
    assert scores["agreement[restore]"] == 0.5  # the unaccented reply does not count
    assert scores["agreement[keywords]"] == pytest.approx(0.8)  # 2 of 3 words, both right
    assert scores["agreement[questions]"] < 0.5 and scores["n"] == 4


# --- a specialist as a chat model ---------------------------------------------------------------------------


def test_any_prompt_is_put_into_the_jobs_format():
    few_shot = [{"role": "system", "content": "Split it."}, {"role": "user", "content": "Example?"},
                {"role": "assistant", "content": "1. E?"}, {"role": "user", "content": "Who wrote Dracula?"}]
    assert reframe("decomposer", few_shot) == [{"role": "system", "content": SYSTEMS["decomposer"]},
                                               {"role": "user", "content": "Who wrote Dracula?"}]


def test_a_specialist_drops_schemas_and_grammars_and_names_itself(tmp_path):
    backend = ScriptedChat("1. Who wrote Dracula?")
    chat = Specialist("decomposer", backend, path=tmp_path / "decomposer", record={})
    reply = chat.chat("Who wrote Dracula?", max_tokens=20, json_schema={"type": "object"}, grammar="root ::= x",
                      stop=["\n\n"])
    messages, options = backend.calls[0]
    assert options == {"max_tokens": 20, "temperature": 0.0, "stop": ["\n\n"]}
    assert messages[0]["content"] == SYSTEMS["decomposer"] and reply.model.startswith("decomposer specialist")


def test_the_rewriter_specialist_keeps_a_json_schema_its_question_lists_follow(tmp_path):
    backend = ScriptedChat('{"questions": ["Who wrote Dracula?"]}')
    chat = Specialist("rewriter", backend, path=tmp_path / "rewriter", record={})
    chat.chat("questions: who wrote dracula", json_schema={"type": "object"}, grammar="root ::= x")
    assert backend.calls[0][1]["json_schema"] == {"type": "object"} and "grammar" not in backend.calls[0][1]


def test_the_rewriter_is_scored_on_held_out_records_as_lesson_03_asks_it():
    records = [{"messages": [{"role": "user", "content": "keywords: q"}], "form": "keywords", "source": "s:1",
                "answer": "q"},
               {"messages": [{"role": "user", "content": "questions: q"}], "form": "questions", "source": "s:2",
                "answer": '{"questions": ["q?"]}'}]
    backend = ScriptedChat("q", '{"questions": ["q?"]}')
    scores = heldout_scores(backend, records, job="rewriter")
    assert backend.calls[0][1]["stop"] == ["\n"] and backend.calls[1][1]["json_schema"]["required"] == ["questions"]
    assert scores["agreement"] == 1.0


def test_cot_rag_takes_a_specialist_like_any_backend(tmp_path):
    from ragkit.reason.cot_rag import decompose
    from ragkit.reason.steps import Meter

    chat = Specialist("decomposer", ScriptedChat("1. Who composed The Nutcracker?\n2. Where was #1 born?"),
                      path=tmp_path / "decomposer", record={})
    steps, _, warnings = decompose("Where was the composer of The Nutcracker born?", Meter(chat), max_steps=MAX_STEPS)
    assert steps == ["Who composed The Nutcracker?", "Where was #1 born?"] and warnings == []


# --- where specialists live ---------------------------------------------------------------------------------


@pytest.fixture
def places(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(specialists, "COMMITTED_DIR", tmp_path / "committed")
    return tmp_path / "committed" / "decomposer", tmp_path / "cache" / "specialists" / "decomposer"


def test_a_missing_specialist_names_the_command_that_builds_it(places):
    with pytest.raises(ModelNotFound, match=r"question decomposer specialist is not built yet: run `make specialists` "
                                            r"\(up to an hour a job"):
        specialist_dir("decomposer")


@pytest.mark.parametrize("present, found", [((0, 1), 0), ((1,), 1), ((0,), 0)])
def test_a_committed_specialist_comes_before_a_built_one(places, present, found):
    for index in present:
        places[index].mkdir(parents=True)
        (places[index] / specialists.RECORD_FILE).write_text("{}")
    assert specialist_dir("decomposer") == places[found]
    if 1 in present:
        assert specialist_dir("decomposer", source="built") == places[1]


def test_an_unknown_job_or_source_is_refused():
    with pytest.raises(ConfigError, match="decomposer, answerer, judge"):
        specialist_dir("summariser")
    with pytest.raises(ConfigError, match="source"):
        specialist_dir("decomposer", source="hub")


# --- building on a tiny model -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A decomposer built from fake evaluation files on the tiny random Llama: the whole path in seconds."""
    folder = tmp_path_factory.mktemp("build")
    root, base = write_evaldata(folder / "eval"), tiny_chat_model(folder / "tiny")
    config = FineTuneConfig(batch_size=4, max_steps=4, learning_rate=1e-2, lora_rank=4, lora_alpha=8.0)
    record = building.build_specialist("decomposer", config=config, root=root, out_dir=folder / "decomposer",
                                          base=base, threads=1, eval_limit=3, progress=False)
    return folder, record, dict(config=config, root=root, out_dir=folder / "decomposer", base=base, threads=1,
                                eval_limit=3, progress=False)


def test_a_build_records_its_provenance_scores_and_adapters(built):
    folder, record, _ = built
    assert record["data"]["files"]["musique"]["path"] == "musique/dev_decompositions.json"
    assert len(record["data"]["files"]["musique"]["sha256"]) == 64 and record["data"]["counts"]["musique"] == 24
    assert set(record["heldout"]) >= {"step_f1", "right_count", "stopped"} and record["report"]["steps"] == 4
    assert record["heldout_untrained"]["n"] == record["heldout"]["n"] >= 1  # the same prompts, before training
    files = {p.name for p in (folder / "decomposer").iterdir()}
    assert {"adapter_model.safetensors", "adapter.gguf", "specialist.json", "finetune.json", "heldout.jsonl"} <= files
    assert not (folder / "decomposer.partial").exists()
    from peft.utils import load_peft_weights

    weights = load_peft_weights(str(folder / "decomposer"), device="cpu")
    assert {str(t.dtype) for t in weights.values()} == {"torch.float16"}


def test_the_same_build_is_reused_and_a_new_config_builds_again(built):
    _, record, options = built
    assert building.build_specialist("decomposer", **options)["reused"]


def test_a_built_specialist_loads_back_and_answers_in_transformers(built):
    folder, record, _ = built
    chat = specialists.load_specialist(folder / "decomposer", backend="transformers", threads=1)
    reply = chat.chat([{"role": "user", "content": "Who married the singer of song 3?"}], max_tokens=8)
    assert reply.completion_tokens <= 8 and chat.record["key"] == record["key"]


def test_a_specialist_trained_with_another_prompt_is_refused(built, tmp_path, monkeypatch):
    folder, _, _ = built
    monkeypatch.setitem(specialists.SYSTEMS, "decomposer", "Another prompt.")
    with pytest.raises(ModelNotFound, match="another prompt"):
        specialists.load_specialist(folder / "decomposer", backend="transformers", threads=1)


@pytest.mark.model
def test_a_specialist_of_the_real_model_runs_in_llama_cpp_and_in_transformers(tmp_path):
    """A specialist folder made by hand (an untrained adapter with small random B) loads both ways."""
    from ragkit.train import finetune

    model, tokenizer = finetuned.load_base(threads=1)
    config = FineTuneConfig(lora_rank=4, lora_alpha=8.0, lora_targets=("q_proj", "v_proj"))
    torch.manual_seed(0)
    model = finetune.trainable(model, config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.02)
    report = finetune.TrainReport("lora", 0, 0, 0, 0, 0, 0, 0.0, 0.0, float("nan"), float("nan"))
    trained = finetune.Trained(model, tokenizer, report, config, finetune.base_identity(None))
    adapter = building.gguf_adapter(trained, tmp_path)
    record = {"job": "decomposer", "prompt": SYSTEMS["decomposer"], "base": trained.base, "gguf_lora": True}
    folder = finetune.save_finetuned(trained, tmp_path / "decomposer",
                                     extra=lambda f: building._write_specialist(f, record, [], adapter))
    for backend in ("llama.cpp", "transformers"):
        chat = specialists.load_specialist(folder, backend=backend, threads=1)
        reply = chat.chat("Where was the composer of The Nutcracker born?", max_tokens=12)
        assert reply.text.strip() and reply.model == f"decomposer specialist (decomposer, {backend})"


def test_a_new_config_or_new_records_make_a_new_build_key():
    data, base = {"records_sha256": "a"}, {"folder": "/m"}
    key = building.build_key(FineTuneConfig(), data, base=base)
    assert key == building.build_key(FineTuneConfig(), dict(data), base=dict(base))
    assert key != building.build_key(FineTuneConfig(lora_rank=8), data, base=base)
    assert key != building.build_key(FineTuneConfig(), {"records_sha256": "b"}, base=base)


# --- the committed specialists ------------------------------------------------------------------------------

COMMITTED = sorted(path.parent.name for path in specialists.COMMITTED_DIR.glob(f"*/{specialists.RECORD_FILE}"))
CHECKED_RECORDS = 40  # held-out records replayed here; the build scored eval_limit of them


def test_the_decomposer_specialist_is_committed_with_its_provenance():
    assert "decomposer" in COMMITTED, "lessons 06, 07 and 09 use it: build it with `make specialists` and commit it"
    record = specialists.specialist_record(specialists.COMMITTED_DIR / "decomposer")
    assert record["key"] and record["ragkit_commit"] and record["data"]["files"]["musique"]["sha256"]
    assert record["heldout"]["run by"] == "llama.cpp" and record["gguf_lora"]


def test_the_reader_specialist_is_committed_with_its_provenance():
    assert "reader" in COMMITTED, "lessons 06, 08 and 09 use it: build it with `make specialists SPECIALISTS=reader`"
    record = specialists.specialist_record(specialists.COMMITTED_DIR / "reader")
    assert record["data"]["files"]["squad"]["sha256"] and record["data"]["files"]["hotpotqa_sample"]["sha256"]
    assert record["heldout"]["run by"] == "llama.cpp" and record["gguf_lora"] and record["key"]


@pytest.mark.model
@pytest.mark.parametrize("job", COMMITTED)
def test_a_committed_specialist_loads_and_meets_its_held_out_metric(job):
    folder = specialists.COMMITTED_DIR / job
    record = specialists.specialist_record(folder)
    heldout = [json.loads(line) for line in (folder / "heldout.jsonl").read_text(encoding="utf-8").splitlines()]
    chat = specialists.load_specialist(folder, threads=2)
    # the reader's, relevance judge's and rewriter's records come from several sources in turn, as their builds
    # scored them
    replayed = (heldout_sample(heldout, CHECKED_RECORDS) if job in ("reader", "relevance", "rewriter")
                else heldout[:CHECKED_RECORDS])
    scores = heldout_scores(chat, replayed, job=job)
    # the relevance judge reranks by P(yes), so it is held to how it ranks, not to which word it says
    metric = {"decomposer": "step_f1", "reader": "f1", "relevance": "auc", "rewriter": "agreement"}.get(job, "accuracy")
    # a subset of the held-out records, on any CPU: near the recorded score, and clearly above the untrained model
    assert scores[metric] >= record["heldout"][metric] - 0.1
    assert scores[metric] >= record["heldout_untrained"][metric] + 0.1
    if job == "reader":  # copying spans, not only saying yes, no or "not in the passages"
        assert scores["f1[span]"] >= 0.3
    if job == "answerer":  # always one answer would pass the lines above on a balanced subset
        assert min(scores["accuracy[yes]"], scores["accuracy[no]"]) >= 0.3
