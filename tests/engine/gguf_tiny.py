"""A tiny llama GGUF written by the tests: the bundled model's tokenizer fields, seeded random weights
whose linear layers are stored in 4-bit formats (Q4_0, Q4_1) and the rest in F32 / Q8_0."""

from __future__ import annotations

from pathlib import Path

import numpy as np

HIDDEN, FFN, LAYERS, HEADS, KV_HEADS = 64, 128, 2, 4, 2
VOCAB = 1024
"""The bundled tokenizer's first VOCAB tokens (bytes, specials and the first merges' results): writing
and converting the full 49,152-token vocabulary takes tens of seconds."""
LINEARS = {  # name: ([out, in], format)
    "attn_q": ([HIDDEN, HIDDEN], "Q4_0"),
    "attn_k": ([HIDDEN // HEADS * KV_HEADS, HIDDEN], "Q4_1"),
    "attn_v": ([HIDDEN // HEADS * KV_HEADS, HIDDEN], "Q4_1"),
    "attn_output": ([HIDDEN, HIDDEN], "Q4_0"),
    "ffn_gate": ([FFN, HIDDEN], "Q4_1"),
    "ffn_up": ([FFN, HIDDEN], "Q4_1"),
    "ffn_down": ([HIDDEN, FFN], "Q4_0"),
}
LINEAR_ELEMENTS = LAYERS * sum(shape[0] * shape[1] for shape, _ in LINEARS.values())


def write_tiny_gguf(path: Path, bundled: Path, seed: int = 0) -> Path:
    """`bundled`: the bundled model's GGUF, or a GGUF of its tokenizer fields alone (the GPU proof's
    vocab.gguf); only its tokenizer is read, so both give the same file."""
    import gguf
    from gguf.quants import quantize

    reader = gguf.GGUFReader(str(bundled))
    writer = gguf.GGUFWriter(str(path), "llama")
    U32, F32 = gguf.GGUFValueType.UINT32, gguf.GGUFValueType.FLOAT32
    shape = {"llama.block_count": LAYERS, "llama.context_length": 2048, "llama.embedding_length": HIDDEN,
             "llama.feed_forward_length": FFN, "llama.attention.head_count": HEADS,
             "llama.attention.head_count_kv": KV_HEADS, "llama.vocab_size": VOCAB,
             "llama.rope.dimension_count": HIDDEN // HEADS}
    for key, value in shape.items():
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
    rng = np.random.default_rng(seed)
    vocab = VOCAB

    def add(name: str, w: np.ndarray, kind: str = "F32") -> None:
        if kind == "F32":
            writer.add_tensor(name, w.astype(np.float32))
        else:
            qtype = gguf.GGMLQuantizationType[kind]
            writer.add_tensor(name, quantize(w.astype(np.float32), qtype), raw_dtype=qtype)

    add("token_embd.weight", rng.standard_normal((vocab, HIDDEN)) * 0.5, "Q8_0")
    add("output_norm.weight", 1 + 0.1 * rng.standard_normal(HIDDEN))
    for i in range(LAYERS):
        add(f"blk.{i}.attn_norm.weight", 1 + 0.1 * rng.standard_normal(HIDDEN))
        add(f"blk.{i}.ffn_norm.weight", 1 + 0.1 * rng.standard_normal(HIDDEN))
        for part, (shape, kind) in LINEARS.items():
            add(f"blk.{i}.{part}.weight", rng.standard_normal(shape) * 0.3, kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
