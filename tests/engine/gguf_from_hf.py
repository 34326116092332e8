"""Write a tiny Hugging Face test model as a GGUF file, so the llama.cpp backend runs the very weights
torch and MLX run (float32, no quantization), with the bundled GGUF's tokenizer and chat template
(which the tiny models' tokenizer files were converted from)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np

_BLOCK = {
    "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
    "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
}
_TOP = {"model.embed_tokens": "token_embd", "model.norm": "output_norm", "lm_head": "output"}


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's interleaving of rotary halves in Q/K rows (what convert_hf_to_gguf.py does)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _gguf_name(name: str) -> str:
    base, _, kind = name.rpartition(".")
    if base in _TOP:
        return f"{_TOP[base]}.{kind}"
    _, _, rest = base.partition("model.layers.")
    layer, _, part = rest.partition(".")
    return f"blk.{layer}.{_BLOCK[part]}.{kind}"


def write_gguf_from_folder(folder: Path, out: Path, bundled: Path, chat_template: Optional[str] = None) -> Path:
    """`folder`'s weights with the bundled model's tokenizer (and its chat template, unless
    `chat_template` is given)."""
    import gguf
    from safetensors.numpy import load_file

    config = json.loads((folder / "config.json").read_text())
    arch = config["model_type"]
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    rope = config.get("rope_parameters") or {}
    writer = gguf.GGUFWriter(str(out), arch)
    writer.add_name(folder.name)
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(float(rope.get("rope_theta", config.get("rope_theta", 10000.0))))
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    reader = gguf.GGUFReader(str(bundled))
    for key, field in reader.fields.items():
        if key.startswith("tokenizer.") and not (chat_template and key == "tokenizer.chat_template"):
            types = field.types
            writer.add_key_value(key, field.contents(), types[0], sub_type=types[1] if len(types) > 1 else None)
    if chat_template:
        writer.add_chat_template(chat_template)
    for name, w in load_file(str(folder / "model.safetensors")).items():
        if arch == "llama" and name.endswith("q_proj.weight"):
            w = _permute(w, heads)
        elif arch == "llama" and name.endswith("k_proj.weight"):
            w = _permute(w, kv_heads)
        writer.add_tensor(_gguf_name(name), np.ascontiguousarray(w.astype(np.float32)))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out
