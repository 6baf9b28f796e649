"""ragkit.train.gguf_lora: a peft LoRA adapter written as a llama.cpp LoRA GGUF,
checked against llama.cpp's loader rules;
with the real model, llama.cpp (Q4_1 base + adapter) against transformers + peft."""

import json

import numpy as np
import pytest
import torch

from ragkit.errors import ConfigError, ModelNotFound
from ragkit.models.finetuned import load_model
from ragkit.train.finetune import FineTuneConfig, trainable
from ragkit.train.gguf_lora import HF_TO_GGUF, gguf_tensor_name, lora_to_gguf, rotary_permute
from tests.tiny_llm import tiny_chat_model

torch.set_num_threads(1)


def test_peft_names_map_to_the_base_gguf_tensor_names():
    prefix = "base_model.model.model.layers"
    assert gguf_tensor_name(f"{prefix}.3.self_attn.q_proj.lora_A.weight") == "blk.3.attn_q.weight.lora_a"
    assert gguf_tensor_name(f"{prefix}.12.mlp.down_proj.lora_B.weight") == "blk.12.ffn_down.weight.lora_b"
    assert len(set(HF_TO_GGUF.values())) == 7


def test_an_unsupported_tensor_is_refused_by_name():
    with pytest.raises(ConfigError, match="embed_tokens"):
        gguf_tensor_name("base_model.model.model.embed_tokens.lora_A.weight")


@pytest.mark.parametrize("heads", [9, 3])
def test_the_rotary_permutation_is_undone_by_the_one_transformers_applies_when_reading_a_gguf(heads):
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    rows = np.random.default_rng(0).normal(size=(heads * 64, 8)).astype(np.float32)
    back = LlamaTensorProcessor()._reverse_permute_weights(rotary_permute(rows, heads), heads, heads)
    assert np.array_equal(back, rows)


@pytest.fixture(scope="module")
def adapter(tmp_path_factory):
    """A rank-4 adapter of the tiny model (4 heads, 2 key/value heads) with random B matrices."""
    folder = tmp_path_factory.mktemp("adapter")
    model = trainable(load_model(tiny_chat_model(folder / "base"), threads=1)[0],
                      FineTuneConfig(lora_rank=4, lora_alpha=8.0))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.1)
    model.save_pretrained(folder / "peft")
    return folder / "peft", model


def test_the_gguf_holds_llama_cpp_adapter_metadata(adapter, tmp_path):
    import gguf

    reader = gguf.GGUFReader(str(lora_to_gguf(adapter[0], tmp_path / "a.gguf", heads=(4, 2))))
    fields = {name: reader.fields[name].contents() for name in
              ("general.architecture", "general.type", "adapter.type", "adapter.lora.alpha")}
    assert fields == {"general.architecture": "llama", "general.type": "adapter", "adapter.type": "lora",
                      "adapter.lora.alpha": 8.0}
    assert len(reader.tensors) == 2 * 7 * 2  # A and B, 7 projections, 2 layers


def test_the_tensor_shapes_pass_llama_cpps_checks_and_q_k_rows_are_permuted(adapter, tmp_path):
    import gguf

    folder, model = adapter
    tensors = {t.name: t for t in gguf.GGUFReader(str(lora_to_gguf(folder, tmp_path / "a.gguf", heads=(4, 2)))).tensors}
    weights = dict(model.named_parameters())
    for layer in range(2):
        for module, short in HF_TO_GGUF.items():
            base = weights[f"base_model.model.model.layers.{layer}.{module}.base_layer.weight"]  # torch: out x in
            a, b = (tensors[f"blk.{layer}.{short}.weight.lora_{m}"] for m in "ab")
            # llama-adapter.cpp: model ne[0] == a ne[0], model ne[1] == b ne[1], a ne[1] == b ne[0] (GGUF lists ne)
            assert (int(a.shape[0]), int(b.shape[1])) == (base.shape[1], base.shape[0])
            assert int(a.shape[1]) == int(b.shape[0]) == 4
            torch_b = weights[f"base_model.model.model.layers.{layer}.{module}.lora_B.default.weight"].detach().numpy()
            heads = {"attn_q": 4, "attn_k": 2}.get(short)
            expected = rotary_permute(torch_b, heads) if heads else torch_b
            assert b.tensor_type == gguf.GGMLQuantizationType.F16  # half the disk, as llama.cpp's converter writes
            assert np.array_equal(np.asarray(b.data).reshape(expected.shape), expected.astype(np.float16))


def test_options_llama_cpp_cannot_apply_are_refused(adapter, tmp_path):
    folder = tmp_path / "dora"
    folder.mkdir()
    config = json.loads((adapter[0] / "adapter_config.json").read_text())
    (folder / "adapter_config.json").write_text(json.dumps({**config, "use_dora": True}))
    with pytest.raises(ConfigError, match="use_dora"):
        lora_to_gguf(folder, tmp_path / "x.gguf", heads=(4, 2))
    with pytest.raises(ModelNotFound, match="no peft adapter"):
        lora_to_gguf(tmp_path / "nothing", tmp_path / "x.gguf", heads=(4, 2))


@pytest.mark.model
def test_llama_cpp_with_the_converted_adapter_agrees_with_transformers_and_peft(tmp_path):
    """Real SmolLM2: the same random LoRA (q/k included, so a wrong permutation would show) read both ways."""
    from ragkit.models.finetuned import load_base
    from ragkit.models.llm import LlamaCppChat, smollm2_path
    from ragkit.train.gguf_lora import base_heads

    model, tokenizer = load_base(threads=1)
    model = trainable(model, FineTuneConfig(lora_rank=8, lora_alpha=16.0, lora_targets=("q_proj", "k_proj", "v_proj")))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.15)
    model.save_pretrained(tmp_path / "peft")
    chat = LlamaCppChat(smollm2_path(), threads=1,
                        lora=[lora_to_gguf(tmp_path / "peft", tmp_path / "a.gguf", heads=base_heads(smollm2_path()))])
    for question in ("Who wrote the novel Dracula?", "Is a tomato a fruit? Answer yes or no."):
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                               add_generation_prompt=True)
        ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        with torch.inference_mode():
            ours = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1], -1)
        reply = chat._server.handle_completions({"prompt": ids, "max_tokens": 1, "n_probs": 3, "temperature": 0,
                                                 "cache_prompt": False})
        top = reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        assert top[0]["id"] == int(ours.argmax())
        assert all(abs(t["logprob"] - float(ours[t["id"]])) < 0.25 for t in top)  # Q4_1 vs float: close, not equal
