"""ragkit.train.finetune on a tiny random Llama: loss masking, training, atomic saves, load-back, the chat interface."""

import json
import math

import pytest
import torch

from ragkit.errors import CorpusError, ModelNotFound, TrainingError
from ragkit.models import finetuned
from ragkit.models.finetuned import load_finetuned, load_model
from ragkit.models.llm import TransformersChat
from ragkit.train import finetune
from ragkit.train.finetune import (
    IGNORE,
    FineTuneConfig,
    encode_example,
    fine_tune,
    pad_batch,
    read_records,
    save_finetuned,
    train,
)
from tests.tiny_llm import tiny_chat_model

torch.set_num_threads(1)
QUICK = dict(batch_size=4, max_steps=6, learning_rate=1e-2, lora_rank=4, lora_alpha=8.0, max_length=128)


def record(question: str, answer: str) -> dict:
    return {"messages": [{"role": "system", "content": "Split the question."}, {"role": "user", "content": question}],
            "answer": answer}


RECORDS = [record(f"Who is the spouse of performer {n}?", f"1. Who is performer {n}?\n2. Who is the spouse of #1?")
           for n in range(8)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_chat_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def tokenizer(tiny):
    return load_model(tiny, threads=1)[1]


@pytest.fixture(scope="module")
def trained_lora(tiny):
    return train(RECORDS, config=FineTuneConfig(**QUICK), base=tiny, threads=1, progress=False)


def test_only_the_answer_and_its_end_of_turn_count_in_the_loss(tokenizer):
    ids, labels = encode_example(tokenizer, RECORDS[0]["messages"], RECORDS[0]["answer"])
    counted = [i for i, label in zip(ids, labels) if label != IGNORE]
    assert tokenizer.decode(counted) == RECORDS[0]["answer"] + "<|im_end|>"
    first = labels.index(next(label for label in labels if label != IGNORE))
    assert all(label == IGNORE for label in labels[:first]) and labels[first:] == ids[first:]
    assert tokenizer.decode(ids[:first]).endswith("<|im_start|>assistant\n")


def test_the_prompt_is_tokenized_as_at_inference(tokenizer):
    ids, labels = encode_example(tokenizer, RECORDS[0]["messages"], RECORDS[0]["answer"])
    prompt = tokenizer.apply_chat_template(RECORDS[0]["messages"], tokenize=False, add_generation_prompt=True)
    inference = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    assert ids[: len(inference)] == inference and all(label == IGNORE for label in labels[: len(inference)])


@pytest.mark.parametrize("method", ["full", "lora"])
def test_the_loss_is_the_cross_entropy_of_the_answer_tokens_alone(tiny, tokenizer, method):
    model = finetune.trainable(load_model(tiny, threads=1)[0], FineTuneConfig(method=method, **QUICK))
    examples = [encode_example(tokenizer, r["messages"], r["answer"]) for r in (RECORDS[0], record("Q?", "1. A"))]
    batch = pad_batch(examples, tokenizer.pad_token_id)
    with torch.no_grad():
        loss = finetune.answer_loss(model, batch).item()
        assert loss == pytest.approx(model(**batch).loss.item(), rel=1e-5)  # transformers' own loss agrees
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    by_hand = []
    for row, (ids, labels) in enumerate(examples):
        for position in range(1, len(ids)):
            if labels[position] != IGNORE:
                by_hand.append(-torch.log_softmax(logits[row, position - 1], -1)[labels[position]].item())
    assert loss == pytest.approx(sum(by_hand) / len(by_hand), rel=1e-4)


def test_padding_never_counts(tokenizer):
    examples = [encode_example(tokenizer, r["messages"], r["answer"]) for r in (RECORDS[0], record("Q?", "1. A"))]
    batch = pad_batch(examples, tokenizer.pad_token_id)
    short = len(examples[1][0])
    assert batch["attention_mask"][1, short:].sum() == 0 and (batch["labels"][1, short:] == IGNORE).all()


@pytest.mark.parametrize("method", ["lora", "full"])
def test_training_reports_its_steps_tokens_and_loss_curve(tiny, method):
    config = FineTuneConfig(method=method, **QUICK)
    report = train(RECORDS, config=config, base=tiny, threads=1, progress=False).report
    assert (report.method, report.steps, report.examples, report.train_examples, report.skipped) == (
        method, 6, 24, 8, 0)
    assert len(report.losses) == 6 and report.tokens > report.answer_tokens > 0 and report.tokens_per_second > 0
    assert math.isfinite(report.first_loss) and report.last_loss < report.first_loss


def test_lora_trains_adapters_only_and_full_leaves_the_embeddings(tiny):
    lora = finetune.trainable(load_model(tiny, threads=1)[0], FineTuneConfig(**QUICK))
    assert {n for n, p in lora.named_parameters() if p.requires_grad} and all(
        "lora_" in n for n, p in lora.named_parameters() if p.requires_grad)
    full = finetune.trainable(load_model(tiny, threads=1)[0], FineTuneConfig(method="full", **QUICK))
    assert not full.get_input_embeddings().weight.requires_grad
    assert full.model.layers[0].self_attn.q_proj.weight.requires_grad


def test_the_same_seed_trains_the_same_model(tiny, trained_lora):
    again = train(RECORDS, config=FineTuneConfig(**QUICK), base=tiny, threads=1, progress=False)
    assert again.report.losses == trained_lora.report.losses


def test_epochs_and_max_steps_plan_the_batches():
    plan = finetune.batch_plan([5] * 10, FineTuneConfig(batch_size=4, epochs=2))
    assert sorted(map(len, plan)) == [2, 2, 4, 4, 4, 4] and sorted(i for b in plan[:3] for i in b) == list(range(10))
    plan = finetune.batch_plan([5] * 10, FineTuneConfig(batch_size=4, max_steps=7))
    assert len(plan) == 7 and sorted(i for b in plan[:3] for i in b) == list(range(10))


def test_batches_group_examples_of_similar_length():
    lengths = [(n * 37) % 100 for n in range(64)]
    plan = finetune.batch_plan(lengths, FineTuneConfig(batch_size=8, epochs=1))
    padded = sum(max(lengths[i] for i in b) * len(b) for b in plan)
    assert sorted(i for b in plan for i in b) == list(range(64)) and padded < 1.15 * sum(lengths)  # ~1.7 unsorted


def test_frozen_layers_get_no_adapters_and_no_updates(tiny):
    lora = finetune.trainable(load_model(tiny, threads=1)[0], FineTuneConfig(frozen_layers=1, **QUICK))
    assert {n.split(".layers.")[1].split(".")[0] for n, p in lora.named_parameters() if p.requires_grad} == {"1"}
    full = finetune.trainable(load_model(tiny, threads=1)[0], FineTuneConfig(method="full", frozen_layers=1, **QUICK))
    assert not any(p.requires_grad for p in full.model.layers[0].parameters())
    assert all(p.requires_grad for p in full.model.layers[1].parameters())
    with pytest.raises(ValueError, match="frozen_layers=2 leaves nothing"):
        finetune.trainable(load_model(tiny, threads=1)[0], FineTuneConfig(frozen_layers=2, **QUICK))


def greedy(chat: TransformersChat, prompt: str = "Who is the spouse of performer 3?") -> str:
    return chat.chat([{"role": "system", "content": "Split the question."}, {"role": "user", "content": prompt}],
                     max_tokens=24).text


@pytest.mark.parametrize("merge", [False, True])
def test_a_saved_lora_model_loads_back_with_the_same_greedy_output(tmp_path, trained_lora, merge):
    save_finetuned(trained_lora, tmp_path / "model")
    model, tokenizer, record_ = load_finetuned(tmp_path / "model", threads=1, merge=merge)
    assert record_["config"]["method"] == "lora" and record_["report"]["steps"] == 6
    assert (tmp_path / "model" / "adapter_model.safetensors").exists()
    before = greedy(TransformersChat(trained_lora.model, trained_lora.tokenizer, name="trained"))
    assert greedy(TransformersChat(model, tokenizer, name="loaded")) == before


def test_a_saved_full_model_loads_back_with_the_same_greedy_output(tmp_path, tiny):
    trained = train(RECORDS, config=FineTuneConfig(method="full", **QUICK), base=tiny, threads=1, progress=False)
    fine_tune_dir = save_finetuned(trained, tmp_path / "full")
    model, tokenizer, _ = load_finetuned(fine_tune_dir, threads=1)
    assert greedy(TransformersChat(model, tokenizer, name="loaded")) == greedy(
        TransformersChat(trained.model, trained.tokenizer, name="trained"))


def test_an_interrupted_save_leaves_nothing_that_loads(tmp_path, trained_lora):
    def interrupted(folder):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        save_finetuned(trained_lora, tmp_path / "model", extra=interrupted)
    assert not (tmp_path / "model").exists() and not (tmp_path / "model.partial").exists()
    with pytest.raises(ModelNotFound, match="no finished fine-tuned model"):
        load_finetuned(tmp_path / "model")


def test_a_killed_save_leaves_a_partial_folder_that_never_loads_and_the_old_model_intact(tmp_path, trained_lora):
    save_finetuned(trained_lora, tmp_path / "model")
    partial = tmp_path / "model.partial"
    partial.mkdir()
    (partial / "adapter_model.safetensors").write_bytes(b"half")
    with pytest.raises(ModelNotFound):
        load_finetuned(partial)
    assert load_finetuned(tmp_path / "model", threads=1)[2]["report"]["steps"] == 6


def test_fine_tune_trains_and_saves(tmp_path, tiny):
    report = fine_tune(RECORDS, tmp_path / "m", config=FineTuneConfig(**QUICK), base=tiny, threads=1, progress=False)
    saved = json.loads((tmp_path / "m" / finetuned.RECORD_FILE).read_text())
    assert saved["report"]["losses"] == list(report.losses) and saved["base"]["folder"] == str(tiny.resolve())


# --- the chat interface --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_chat(tiny):
    model, tokenizer = load_model(tiny, threads=1)
    return TransformersChat(model, tokenizer, name="tiny")


def test_a_reply_has_the_chat_reply_fields(tiny_chat):
    reply = tiny_chat.chat("Is a tomato red?", max_tokens=5)
    assert reply.model == "tiny" and reply.prompt_tokens > 5 and 0 < reply.completion_tokens <= 5
    assert reply.seconds > 0 and reply.finish_reason in ("stop", "length")


def test_logprobs_give_the_first_tokens_alternatives_the_greedy_reply_first(tiny_chat):
    reply = tiny_chat.chat("Is a tomato red?", max_tokens=1, logprobs=3)
    tokens, logprobs = zip(*reply.top_logprobs)
    assert len(tokens) == 3 and list(logprobs) == sorted(logprobs, reverse=True) and logprobs[0] <= 0
    assert tokens[0] == reply.text and tiny_chat.chat("Is a tomato red?", max_tokens=1).top_logprobs == ()


def test_max_tokens_cuts_the_reply_and_says_so(tiny_chat):
    reply = tiny_chat.chat("Is a tomato red?", max_tokens=3)
    assert reply.completion_tokens == 3 and reply.finish_reason == "length"


def test_a_stop_string_ends_the_reply_before_it(tiny_chat):
    full = tiny_chat.chat("Is a tomato red?", max_tokens=30, temperature=1.0).text  # seeded: the same path twice
    assert len(set(full)) > 4
    stop = full[4:6]
    reply = tiny_chat.chat("Is a tomato red?", max_tokens=30, temperature=1.0, stop=[stop])
    assert reply.text == full[: full.index(stop)] and reply.finish_reason == "stop"


def test_a_stop_string_is_looked_for_in_the_reply_not_across_the_end_of_the_prompt(tiny_chat):
    assert tiny_chat.chat("Is a tomato red?", max_tokens=4).text.startswith("\n\n")  # this random model's habit
    reply = tiny_chat.chat("Is a tomato red?", max_tokens=4, stop=["\n\n"])  # the prompt ends in '\n'
    assert reply.completion_tokens == 2 and reply.text == "" and reply.finish_reason == "stop"


def test_schema_and_grammar_are_ignored_not_refused(tiny_chat):
    plain = tiny_chat.chat("Is a tomato red?", max_tokens=5).text
    constrained = tiny_chat.chat("Is a tomato red?", max_tokens=5, json_schema={"type": "object"}, grammar="root ::= x")
    assert constrained.text == plain


def test_greedy_replies_repeat_and_sampling_follows_the_seed(tiny_chat):
    assert tiny_chat.chat("Hi", max_tokens=8).text == tiny_chat.chat("Hi", max_tokens=8).text
    sampled = [tiny_chat.chat("Hi", max_tokens=8, temperature=1.0).text for _ in range(2)]
    assert sampled[0] == sampled[1]


# --- errors -------------------------------------------------------------------------------------------------


def test_no_records_is_a_clear_error(tiny):
    with pytest.raises(TrainingError, match="no training records"):
        train([], config=FineTuneConfig(**QUICK), base=tiny, threads=1, progress=False)


def test_fewer_records_than_a_batch_is_a_clear_error(tiny):
    with pytest.raises(TrainingError, match="batch_size=4"):
        train(RECORDS[:3], config=FineTuneConfig(**QUICK), base=tiny, threads=1, progress=False)


def test_records_all_longer_than_max_length_name_the_setting(tiny):
    with pytest.raises(TrainingError, match="max_length=8"):
        train(RECORDS, config=FineTuneConfig(**{**QUICK, "max_length": 8}), base=tiny, threads=1, progress=False)


def test_a_malformed_record_names_its_file_and_line(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps(RECORDS[0]) + "\n\n" + json.dumps({"messages": RECORDS[0]["messages"]}) + "\n")
    with pytest.raises(CorpusError, match=rf"{path}:3: .*answer"):
        read_records(path)
    path.write_text(json.dumps(RECORDS[0]) + "\n{not json\n")
    with pytest.raises(CorpusError, match=rf"{path}:2: not valid JSON"):
        read_records(path)


def test_a_record_without_messages_is_refused_in_memory_too(tiny):
    with pytest.raises(CorpusError, match="training record 2: .*messages"):
        train([RECORDS[0], {"answer": "x"}] + RECORDS, config=FineTuneConfig(**QUICK), base=tiny, threads=1,
              progress=False)


def test_running_out_of_memory_names_the_batch_size(tiny, monkeypatch):
    def no_memory(*args, **kwargs):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 123 bytes")

    monkeypatch.setattr(finetune, "pad_batch", no_memory)
    with pytest.raises(TrainingError, match=r"batch_size=4.*FineTuneConfig\(batch_size=\.\.\.\) \(e\.g\. 2\)"):
        train(RECORDS, config=FineTuneConfig(**QUICK), base=tiny, threads=1, progress=False)


def test_other_runtime_errors_pass_through():
    with pytest.raises(RuntimeError, match="shape"):
        with finetune.memory_errors(FineTuneConfig()):
            raise RuntimeError("shape mismatch")


@pytest.mark.parametrize("bad", [{"method": "qlora"}, {"batch_size": 0}, {"learning_rate": -1.0},
                                 {"epochs": 0, "max_steps": 0}])
def test_a_bad_config_is_refused(bad):
    with pytest.raises(ValueError):
        FineTuneConfig(**bad)


def test_options_are_keyword_only():
    with pytest.raises(TypeError):
        FineTuneConfig("full")


@pytest.mark.model
def test_the_default_chat_model_loads_into_transformers_ready_for_chat():
    model, tokenizer = finetuned.load_base(threads=1)
    assert round(sum(p.numel() for p in model.parameters()) / 1e6, 1) == 134.5
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer("Hi")["input_ids"][0] != tokenizer.convert_tokens_to_ids(
        "<|im_start|>")  # no BOS added, as llama.cpp adds none
    reply = TransformersChat(model, tokenizer, name="smollm2").chat("What is the capital of France?", max_tokens=16)
    assert "Paris" in reply.text and reply.finish_reason == "stop"


def test_the_keyed_training_code_holds_the_loss_the_masking_and_the_batches():
    code = finetune.training_code()
    assert all(f"def {name}(" in code for name in ("answer_loss", "encode_example", "batch_plan", "trainable"))
