"""Convert a single .gguf file into a Hugging Face-format folder both backends can load.

transformers reads the config and tokenizer out of a GGUF without torch, but its weight loader needs
torch and a model instance, which the MLX build (macOS) does not have. So the weights are read and
dequantized here with the `gguf` package (numpy only) and written with safetensors; the tensor name
map and llama.cpp's Q/K row permutation are the only hand-written parts.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from ..errors import ModelLoadError

# llama.cpp stores these families with the Hugging Face layout apart from the names (and, for llama,
# permuted Q/K rows). Others are refused with a clear message rather than loaded wrong.
SUPPORTED_ARCHITECTURES = {"llama": True, "mistral": True, "qwen2": False, "qwen3": False}  # arch: permute Q/K

_BLOCK_NAMES = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
_BLOCK_RE = re.compile(r"^blk\.(\d+)\.(\w+)\.(weight|bias)$")
_TOP_RE = re.compile(r"^(\w+)\.(weight|bias)$")

Progress = Callable[[float, str], None]


def hf_name(gguf_name: str) -> str:
    """Map a llama.cpp tensor name to its Hugging Face name, or raise ModelLoadError."""
    if m := _BLOCK_RE.match(gguf_name):
        layer, part, kind = m.groups()
        if part in _BLOCK_NAMES:
            return f"model.layers.{layer}.{_BLOCK_NAMES[part]}.{kind}"
    elif (m := _TOP_RE.match(gguf_name)) and m.group(1) in _TOP_NAMES:
        return f"{_TOP_NAMES[m.group(1)]}.{m.group(2)}"
    raise ModelLoadError(f"unknown tensor {gguf_name!r} in GGUF file")


def unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Undo llama.cpp's interleaving of rotary halves in Q/K projection rows."""
    half = w.shape[0] // n_head // 2
    return w.reshape(n_head, half, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def convert_gguf(gguf_path: Path, out_dir: Path, progress: Optional[Progress] = None) -> Path:
    """Write config, tokenizer and float16 safetensors weights for `gguf_path` into `out_dir`.

    The folder is built under a temporary name and renamed at the end, so an interrupted
    conversion never leaves a half-written model behind.
    """
    import gguf
    from safetensors.numpy import save_file
    from transformers import AutoConfig, AutoTokenizer

    report = progress or (lambda fraction, message: None)
    try:
        reader = gguf.GGUFReader(gguf_path)
    except Exception as e:
        raise ModelLoadError(f"{gguf_path} is not a readable GGUF file: {e}") from e
    arch_field = reader.fields.get("general.architecture")
    arch = arch_field.contents() if arch_field else None
    if arch not in SUPPORTED_ARCHITECTURES:
        raise ModelLoadError(
            f"{gguf_path.name}: GGUF architecture {arch!r} is not supported "
            f"(supported: {', '.join(sorted(SUPPORTED_ARCHITECTURES))})"
        )
    tmp = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        report(0.0, "reading config and tokenizer")
        config = AutoConfig.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        config.torch_dtype = "float16"
        config.save_pretrained(tmp)
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        tokenizer.save_pretrained(tmp)
        tensors = _dequantized_tensors(reader, config, SUPPORTED_ARCHITECTURES[arch], report)
        if getattr(config, "tie_word_embeddings", False):
            tensors.pop("lm_head.weight", None)
        save_file(tensors, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        write_source(tmp, gguf_path)
    except ModelLoadError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    except Exception as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ModelLoadError(f"could not convert {gguf_path.name}: {e}") from e
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    report(1.0, "converted")
    return out_dir


SOURCE_FILE = "confab-source.json"
"""Written into a converted folder: which .gguf it came from (the torch backend reads the 4-bit
tensors from that file rather than the folder's float16 copy)."""


def write_source(folder: Path, gguf_path: Path) -> None:
    (folder / SOURCE_FILE).write_text(json.dumps({"gguf": gguf_path.name, "path": str(gguf_path.resolve())}))


def gguf_source(folder: Path) -> Optional[Path]:
    """The .gguf a converted folder came from, if it is still where it was; else None."""
    try:
        path = json.loads((folder / SOURCE_FILE).read_text()).get("path")
    except (OSError, ValueError):
        return None
    return Path(path) if path and Path(path).is_file() else None


def _dequantized_tensors(reader, config, permute_qk: bool, report: Progress) -> dict[str, np.ndarray]:
    from gguf.quants import dequantize

    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    out: dict[str, np.ndarray] = {}
    total = len(reader.tensors)
    for i, tensor in enumerate(reader.tensors):
        name = hf_name(tensor.name)
        w = dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        w = w.reshape([int(d) for d in reversed(tensor.shape)])
        if permute_qk and name.endswith("q_proj.weight"):
            w = unpermute(w, heads)
        elif permute_qk and name.endswith("k_proj.weight"):
            w = unpermute(w, kv_heads)
        out[name] = np.ascontiguousarray(w.astype(np.float16))
        if i % 16 == 0:
            report(0.1 + 0.8 * i / total, f"dequantizing {i}/{total} tensors")
    return out
