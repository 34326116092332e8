"""Tiny llama GGUFs written by the tests: the bundled model's tokenizer fields and seeded random
weights. `write_tiny_gguf`: linear layers in Q4_0/Q4_1, the rest F32 / Q8_0 (the bundled model's
formats). `write_tiny_k_gguf`: Q4_K and Q6_K, as in the Q4_K_M files most users download."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

VOCAB = 1024
"""The bundled tokenizer's first VOCAB tokens (bytes, specials and the first merges' results): writing
and converting the full 49,152-token vocabulary takes tens of seconds."""


@dataclass(frozen=True)
class Shape:
    hidden: int
    ffn: int
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2

    def linears(self, formats: dict[str, str]) -> dict[str, tuple[list[int], str]]:
        """name: ([out, in], format) of each layer's linear weights."""
        kv = self.hidden // self.heads * self.kv_heads
        shapes = {"attn_q": [self.hidden, self.hidden], "attn_k": [kv, self.hidden], "attn_v": [kv, self.hidden],
                  "attn_output": [self.hidden, self.hidden], "ffn_gate": [self.ffn, self.hidden],
                  "ffn_up": [self.ffn, self.hidden], "ffn_down": [self.hidden, self.ffn]}
        return {name: (shape, formats[name]) for name, shape in shapes.items()}


SHAPE = Shape(hidden=64, ffn=128)
HIDDEN, FFN, LAYERS, HEADS, KV_HEADS = SHAPE.hidden, SHAPE.ffn, SHAPE.layers, SHAPE.heads, SHAPE.kv_heads
LINEARS = SHAPE.linears({"attn_q": "Q4_0", "attn_k": "Q4_1", "attn_v": "Q4_1", "attn_output": "Q4_0",
                         "ffn_gate": "Q4_1", "ffn_up": "Q4_1", "ffn_down": "Q4_0"})
LINEAR_ELEMENTS = LAYERS * sum(shape[0] * shape[1] for shape, _ in LINEARS.values())

K_SHAPE = Shape(hidden=256, ffn=512)
"""K-quant blocks hold 256 weights, so every row the k-quant file stores is a multiple of 256 long."""
K_LINEARS = K_SHAPE.linears({"attn_q": "Q4_K", "attn_k": "Q4_K", "attn_v": "Q6_K", "attn_output": "Q4_K",
                             "ffn_gate": "Q4_K", "ffn_up": "Q4_K", "ffn_down": "Q6_K"})
"""Q4_K_M's split: Q6_K for the values and the down projections (llama-quantize gives half the layers
Q6_K there), Q4_K elsewhere; the tied embedding (and so the output layer) is Q6_K too."""


def k_blocks(kind: str, rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """Random valid Q4_K / Q6_K blocks (the gguf package cannot quantize either): random quants and
    sub-block scales, block scales small enough that the weights stay under about 1 in size."""
    import gguf

    qtype = gguf.GGMLQuantizationType[kind]
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    data = rng.integers(0, 256, (rows, cols // block, size), dtype=np.uint8)
    if kind == "Q4_K":  # d and dmin (float16) come first, then 6-bit scales and mins, then nibbles
        scales, at = rng.uniform(1e-4, 1e-3, (rows, cols // block, 2)), slice(0, 4)
    elif kind == "Q6_K":  # low nibbles, high bits, int8 scales, then d (float16) last
        scales, at = rng.uniform(1e-4, 3e-4, (rows, cols // block, 1)), slice(size - 2, size)
    else:
        raise ValueError(f"not a k-quant written here: {kind}")
    data[..., at] = np.frombuffer(scales.astype(np.float16).tobytes(), np.uint8).reshape(rows, cols // block, -1)
    return data.reshape(rows, -1)


def _writer(path: Path, bundled: Path, shape: Shape):
    """A GGUFWriter for `shape` with the bundled tokenizer's first VOCAB tokens."""
    import gguf

    reader = gguf.GGUFReader(str(bundled))
    writer = gguf.GGUFWriter(str(path), "llama")
    U32, F32 = gguf.GGUFValueType.UINT32, gguf.GGUFValueType.FLOAT32
    keys = {"llama.block_count": shape.layers, "llama.context_length": 2048, "llama.embedding_length": shape.hidden,
            "llama.feed_forward_length": shape.ffn, "llama.attention.head_count": shape.heads,
            "llama.attention.head_count_kv": shape.kv_heads, "llama.vocab_size": VOCAB,
            "llama.rope.dimension_count": shape.hidden // shape.heads}
    for key, value in keys.items():
        writer.add_key_value(key, value, U32)
    writer.add_key_value("llama.rope.freq_base", 100000.0, F32)  # the bundled model's
    writer.add_key_value("llama.attention.layer_norm_rms_epsilon", 1e-5, F32)
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()[:VOCAB]
    known = set(tokens)
    merges = [m for m in reader.fields["tokenizer.ggml.merges"].contents()
              if m.replace(" ", "", 1) in known and all(part in known for part in m.split(" ", 1))]
    cut = {"tokenizer.ggml.tokens": tokens, "tokenizer.ggml.merges": merges,
           "tokenizer.ggml.token_type": reader.fields["tokenizer.ggml.token_type"].contents()[:VOCAB]}
    for key, field in reader.fields.items():
        if key.startswith("tokenizer."):
            types = field.types
            writer.add_key_value(key, cut.get(key, field.contents()), types[0],
                                 sub_type=types[1] if len(types) > 1 else None)
    return writer


def _write(path: Path, bundled: Path, seed: int, shape: Shape, linears: dict, embedding: str) -> Path:
    import gguf
    from gguf.quants import quantize

    writer = _writer(path, bundled, shape)
    rng = np.random.default_rng(seed)

    def add(name: str, w: np.ndarray, kind: str = "F32") -> None:
        qtype = gguf.GGMLQuantizationType[kind]
        if kind == "F32":
            writer.add_tensor(name, w.astype(np.float32))
        elif kind in ("Q4_K", "Q6_K"):
            writer.add_tensor(name, k_blocks(kind, *w.shape, rng), raw_dtype=qtype)
        else:
            writer.add_tensor(name, quantize(w.astype(np.float32), qtype), raw_dtype=qtype)

    add("token_embd.weight", rng.standard_normal((VOCAB, shape.hidden)) * 0.5, embedding)
    add("output_norm.weight", 1 + 0.1 * rng.standard_normal(shape.hidden))
    for i in range(shape.layers):
        add(f"blk.{i}.attn_norm.weight", 1 + 0.1 * rng.standard_normal(shape.hidden))
        add(f"blk.{i}.ffn_norm.weight", 1 + 0.1 * rng.standard_normal(shape.hidden))
        for part, (dims, kind) in linears.items():
            add(f"blk.{i}.{part}.weight", rng.standard_normal(dims) * 0.3, kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_tiny_gguf(path: Path, bundled: Path, seed: int = 0) -> Path:
    """`bundled`: the bundled model's GGUF, or a GGUF of its tokenizer fields alone (the GPU proof's
    vocab.gguf); only its tokenizer is read, so both give the same file."""
    return _write(path, bundled, seed, SHAPE, LINEARS, "Q8_0")


def write_tiny_k_gguf(path: Path, bundled: Path, seed: int = 0) -> Path:
    """The k-quant file: Q4_K and Q6_K linear layers and a Q6_K tied embedding, 256 wide."""
    return _write(path, bundled, seed, K_SHAPE, K_LINEARS, "Q6_K")
