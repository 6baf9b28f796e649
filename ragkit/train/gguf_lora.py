"""A peft LoRA adapter of a Llama-architecture model written as a llama.cpp LoRA GGUF, so that llama.cpp
applies it at run time on top of the shipped quantised model (xllamacpp: CommonParams.lora_adapters).

The format, as llama.cpp's convert_lora_to_gguf.py writes it and llama-adapter.cpp reads it: metadata
general.type="adapter", adapter.type="lora", adapter.lora.alpha (llama.cpp scales by alpha / rank, as
peft does); per adapted weight two tensors named after the base GGUF's tensor plus ".lora_a" / ".lora_b",
stored in torch's shapes (A: rank x in, B: out x rank), which GGUF lists reversed. The GGUF keeps the
query and key rows in llama.cpp's rotary order, so B of q_proj and k_proj is permuted as the base was.
Taught in lessons/09_specialists.ipynb.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ragkit.errors import ConfigError, ModelNotFound

HF_TO_GGUF = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
              "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
              "mlp.down_proj": "ffn_down"}
_PEFT_NAME = re.compile(r"^(?:base_model\.model\.)?model\.layers\.(\d+)\.(\w+\.\w+)\.lora_([AB])\.weight$")


def gguf_tensor_name(peft_name: str) -> str:
    """'base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight' -> 'blk.3.attn_q.weight.lora_a'."""
    match = _PEFT_NAME.match(peft_name)
    if not match or match.group(2) not in HF_TO_GGUF:
        raise ConfigError(f"cannot convert the adapter tensor {peft_name!r}: only the attention and MLP "
                          f"projections of a Llama model are supported ({', '.join(HF_TO_GGUF)})")
    layer, module, matrix = match.groups()
    return f"blk.{layer}.{HF_TO_GGUF[module]}.weight.lora_{matrix.lower()}"


def rotary_permute(rows, heads: int):
    """Reorder a query/key projection's output rows from Hugging Face's rotary layout to llama.cpp's."""
    return rows.reshape(heads, 2, rows.shape[0] // heads // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def base_heads(base_gguf: str | Path) -> tuple[int, int]:
    """(attention heads, key/value heads) of a Llama GGUF, read from its metadata."""
    import gguf

    reader = gguf.GGUFReader(str(base_gguf))
    arch = reader.fields["general.architecture"].contents()
    if arch != "llama":
        raise ConfigError(f"{base_gguf} is a {arch!r} model; this converter writes adapters for 'llama' only")
    heads = reader.fields["llama.attention.head_count"]
    return heads.contents(), reader.fields.get("llama.attention.head_count_kv", heads).contents()


def check_adapter_config(config: dict) -> None:
    """Refuse peft options llama.cpp's LoRA loader has no equivalent for."""
    unsupported = [name for name in ("use_dora", "use_rslora", "fan_in_fan_out") if config.get(name)]
    unsupported += [name for name in ("rank_pattern", "alpha_pattern") if config.get(name)]
    if unsupported or config.get("peft_type", "LORA") != "LORA":
        what = ", ".join(unsupported) or config.get("peft_type")
        raise ConfigError(f"cannot convert this adapter for llama.cpp: {what}")


def lora_to_gguf(adapter_dir: str | Path, out_file: str | Path, *, heads: tuple[int, int]) -> Path:
    """Write the peft LoRA adapter in adapter_dir as a llama.cpp LoRA GGUF, for a base with these
    (attention heads, key/value heads) (see base_heads).

    Taught in lessons/09_specialists.ipynb.
    """
    import gguf
    from peft.utils import load_peft_weights

    adapter_dir, out_file = Path(adapter_dir), Path(out_file)
    if not (adapter_dir / "adapter_config.json").is_file():
        raise ModelNotFound(f"no peft adapter in {adapter_dir} (no adapter_config.json)")
    config = json.loads((adapter_dir / "adapter_config.json").read_text(encoding="utf-8"))
    check_adapter_config(config)
    query_heads, kv_heads = heads
    tensors = load_peft_weights(str(adapter_dir), device="cpu")
    writer = gguf.GGUFWriter(str(out_file), arch="llama")
    writer.add_string(gguf.Keys.General.TYPE, gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(config["lora_alpha"]))
    for name in sorted(tensors):
        target = gguf_tensor_name(name)
        array = tensors[name].float()
        if target.endswith("lora_b") and (".attn_q." in target or ".attn_k." in target):
            array = rotary_permute(array, query_heads if ".attn_q." in target else kv_heads)
        writer.add_tensor(target, array.contiguous().half().numpy())  # float16, as llama.cpp's converter writes
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out_file
