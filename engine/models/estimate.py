"""How much memory a model would take, read from file headers before anything is loaded.

    from engine import estimate_memory

    e = estimate_memory("bundled:smollm2-135m-instruct", max_context=4096)
    print(e.weights_bytes, e.bytes_per_session)

Only headers and metadata are read (safetensors headers, a GGUF's header): no tensor data, no conversion (torch is only asked, for dtype="auto", what this
machine's hardware computes in). The figures are those `Engine.capacity()`
reports once the same source is loaded with the same dtype and max_context.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from .. import backends
from ..capacity import DTYPE_BYTES, bytes_per_session, model_context_limit
from ..errors import ModelLoadError
from ..kv_cache_type import kv_element_bytes
from .gguf_convert import SUPPORTED_ARCHITECTURES, gguf_source
from .gguf_int4 import GROUP, INT4_TYPES
from .sources import check_folder, locate
from ..types import EngineConfig

# Bytes per element of each safetensors dtype; float ones are cast to the load dtype.
_ST_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "U64": 8, "I32": 4, "U32": 4,
             "I16": 2, "U16": 2, "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
_ST_FLOATS = {"F64", "F32", "F16", "BF16"}
INT4_BYTES_PER_32 = 16 + 2 * 2
"""Bytes per 32 weights held in int4: 16 of codes, a bfloat16 scale and a bfloat16 zero."""


@dataclass(frozen=True)
class MemoryEstimate:
    """What loading a model would cost, before loading it."""

    weights_bytes: int
    """Bytes of the weights once loaded in the chosen dtype."""
    bytes_per_session: int
    """State bytes of one session filled to `max_context` (as `Capacity.bytes_per_session`)."""
    max_context: int
    """Tokens per session the figure above assumes."""
    name: str
    """The model's name as the engine would report it."""


def estimate_memory(source: str, max_context: int = 4096, dtype: str = "auto", cache_type_k: str = "f16",
                    cache_type_v: str = "f16") -> MemoryEstimate:
    """Estimate weights and per-session bytes of `source` without loading its weights.

    source: "bundled:<name>", a Hugging Face or MLX folder, or a .gguf file (as `Engine.load`).
    dtype: "auto" means the dtype the platform's default backend loads in (on torch: bfloat16 where
    the hardware has it, else float16 on CUDA, float32 on CPU; float16 on MLX/Metal). Raises ModelLoadError saying what is wrong with the source, and
    InvalidRequestError for a bad dtype or max_context. cache_type_k/_v: a GGUF's K/V cache types on
    llama.cpp (EngineConfig's); a quantized type takes its share of the float16 figure.
    """
    EngineConfig(dtype=dtype, max_context=max_context, cache_type_k=cache_type_k, cache_type_v=cache_type_v)
    dtype = auto_dtype() if dtype == "auto" else dtype
    kind, path, name = locate(source)
    if kind == "folder" and backends.default_backend() == "torch" and (origin := gguf_source(path)):
        kind, path = "gguf", origin  # a converted folder: torch reads its weights from the .gguf
    if kind == "gguf":
        # llama.cpp caches float16 keys and values whatever the weights' dtype, or the types chosen
        kv_share = ((kv_element_bytes(cache_type_k) + kv_element_bytes(cache_type_v)) / 4
                    if backends.choose("auto", "gguf")[0] == "llamacpp" else None)
        return _from_gguf(path, name, max_context, dtype, kv_share)
    return replace(_from_folder(path, max_context, dtype), name=name)


def trained_context(source: str) -> Optional[int]:
    """The longest context `source` was trained for (a GGUF's `<arch>.context_length`, a folder's
    `max_position_embeddings`), read before loading; None when the model does not say.
    What `serve --context max` and the app's context choice go up to."""
    kind, path, _ = locate(source)
    if kind == "gguf":
        from .gguf_header import read_header

        meta = read_header(path).meta
        limit = meta.get(f"{meta.get('general.architecture')}.context_length")
        return int(limit) if isinstance(limit, int) and limit > 0 else None
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ModelLoadError(f"{path.name}: config.json could not be read: {e}") from e
    return model_context_limit(config)


def auto_dtype() -> str:
    """The dtype "auto" loads in with the platform's default backend and device: on torch, the one
    `choose_dtype` picks for this machine (the backend asks the same function)."""
    if backends.default_backend() == "mlx":
        return "float16"
    if not backends.is_installed("torch"):
        return "float32"
    from ..backends.torch_dtype import auto_device, choose_dtype

    return choose_dtype(auto_device()).dtype


def _from_folder(path: Path, max_context: int, dtype: str) -> MemoryEstimate:
    from safetensors import safe_open

    model = check_folder(path, name=path.name)  # config, complete weights and a tokenizer
    quantized = model.is_mlx_quantized
    total = 0
    for file in model.weight_files:
        try:
            with safe_open(str(file), framework="numpy") as f:
                for key in f.keys():
                    piece = f.get_slice(key)
                    total += _loaded_bytes(key, piece.get_shape(), piece.get_dtype(), dtype, quantized)
        except Exception as e:
            raise ModelLoadError(f"{file.name} is not a readable safetensors file: {e}") from e
    return MemoryEstimate(total, _per_session(model.config, dtype, max_context), max_context, model.name)


def _loaded_bytes(key: str, shape: list[int], st_dtype: str, dtype: str, quantized: bool) -> int:
    """Bytes of one tensor once loaded: floats in `dtype`, except the scales and biases of packed
    (MLX-quantized) layers and any integer data, which stay as stored."""
    count = 1
    for d in shape:
        count *= int(d)
    keep = st_dtype not in _ST_FLOATS or (quantized and key.endswith((".scales", ".biases")))
    return count * (_ST_BYTES.get(st_dtype, 4) if keep else DTYPE_BYTES[dtype])


def _from_gguf(path: Path, name: str, max_context: int, dtype: str, kv_share: Optional[float] = None) -> MemoryEstimate:
    """kv_share: on llama.cpp, the K/V cache's bytes as a share of float16's (None: K/V in `dtype`)."""
    stat = path.stat()
    config_items, elements, int4_elements = _gguf_facts(str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if backends.default_backend() == "mlx":  # MLX loads the dequantized float16 folder, all in `dtype`
        int4_elements = 0
    # torch keeps Q4_0/Q4_1/Q4_K tensors 4-bit (half a byte per weight plus a bfloat16 scale and zero
    # per 32) and dequantizes the rest into `dtype`.
    weights = (elements - int4_elements) * DTYPE_BYTES[dtype] + int4_elements * INT4_BYTES_PER_32 // 32
    if kv_share is None:
        return MemoryEstimate(weights, _per_session(dict(config_items), dtype, max_context), max_context, name)
    per_session = math.ceil(_per_session(dict(config_items), "float16", max_context) * kv_share)
    return MemoryEstimate(weights, per_session, max_context, name)


@functools.lru_cache(maxsize=16)
def _gguf_facts(path: str, size: int, mtime_ns: int) -> tuple[tuple, int, int]:
    """(config items for capacity, total tensor elements, elements in 4-bit group formats) of a GGUF
    file, from its header alone: gguf.GGUFReader parses the tokenizer's fields too (4.5 s for the
    bundled model on a busy 2-core machine, where the header takes milliseconds)."""
    from .gguf_header import read_header

    header = read_header(Path(path))  # a truncated or foreign file: refused in words

    def field(key: str):
        return header.meta.get(key)

    arch = field("general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise ModelLoadError(
            f"{Path(path).name}: GGUF architecture {arch!r} is not supported "
            f"(supported: {', '.join(sorted(SUPPORTED_ARCHITECTURES))})"
        )
    layers, heads = field(f"{arch}.block_count"), field(f"{arch}.attention.head_count")
    hidden = field(f"{arch}.embedding_length")
    if not (layers and heads and hidden):
        raise ModelLoadError(f"{Path(path).name}: GGUF header lacks the layer, head or width counts")
    kv = field(f"{arch}.attention.head_count_kv") or heads
    heads = max(heads) if isinstance(heads, tuple) else heads
    config = {
        "num_hidden_layers": int(layers),
        "num_attention_heads": int(heads),
        "num_key_value_heads": int(max(kv) if isinstance(kv, tuple) else kv),
        "hidden_size": int(hidden),
        "head_dim": int(field(f"{arch}.attention.key_length") or int(hidden) // int(heads)),
    }
    elements = int4_elements = 0
    for dims, kind in header.tensor_shapes.values():
        count = math.prod(dims)
        elements += count
        if kind in INT4_TYPES and len(dims) == 2 and dims[0] % GROUP == 0:  # as gguf_int4.is_int4
            int4_elements += count
    return tuple(sorted(config.items())), elements, int4_elements


def _per_session(config: dict, dtype: str, max_context: int) -> int:
    try:
        return bytes_per_session(config, dtype, max_context)
    except (KeyError, TypeError, ValueError) as e:
        raise ModelLoadError(f"the model's config lacks what a session size needs: {e}") from e
