"""Models for the GPU proof in real models' shapes, without downloading one: random weights (seeded) in
the shape of the bundled SmolLM2-135M and of SmolLM2-1.7B, with the bundled model's tokenizer and chat
template, written as float16 GGUF and quantized by llama.cpp's own `llama-quantize` (the formats users
download: the bundled model's Q4_1 with Q8_0 embeddings, and Q4_K_M). Speed depends on shapes and
formats, not on what the weights say: these time as the real models do (their text is noise)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Optional

SHAPES = {
    "smollm2-135m-shape": dict(layers=30, hidden=576, ff=1536, heads=9, kv_heads=3, rope=100000.0,
                               quant=["Q4_1", "--token-embedding-type", "q8_0"]),
    "smollm2-1.7b-shape": dict(layers=24, hidden=2048, ff=8192, heads=32, kv_heads=32, rope=130000.0,
                               quant=["Q4_K_M"]),
}


def write_f16(shape: dict, vocab_gguf: Path, out: Path, seed: int = 0) -> Path:
    """A float16 GGUF of `shape` with random weights (std 0.02, norms 1) and the tokenizer of `vocab_gguf`."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    reader = gguf.GGUFReader(str(vocab_gguf))
    vocab = len(reader.fields["tokenizer.ggml.tokens"].contents())
    hidden, heads, kv_heads = shape["hidden"], shape["heads"], shape["kv_heads"]
    head_dim = hidden // heads
    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_name(out.stem)
    writer.add_block_count(shape["layers"])
    writer.add_context_length(8192)
    writer.add_embedding_length(hidden)
    writer.add_feed_forward_length(shape["ff"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(shape["rope"])
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    for key, field in reader.fields.items():
        if key.startswith("tokenizer."):
            writer.add_key_value(key, field.contents(), field.types[0],
                                 sub_type=field.types[1] if len(field.types) > 1 else None)

    def weight(rows: int, cols: int):
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float16)

    ones = np.ones(hidden, dtype=np.float32)
    writer.add_tensor("token_embd.weight", weight(vocab, hidden))  # tied: the output layer reads it too
    for i in range(shape["layers"]):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", ones)
        writer.add_tensor(f"blk.{i}.attn_q.weight", weight(hidden, hidden))
        writer.add_tensor(f"blk.{i}.attn_k.weight", weight(kv_heads * head_dim, hidden))
        writer.add_tensor(f"blk.{i}.attn_v.weight", weight(kv_heads * head_dim, hidden))
        writer.add_tensor(f"blk.{i}.attn_output.weight", weight(hidden, hidden))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", ones)
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weight(shape["ff"], hidden))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weight(shape["ff"], hidden))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", weight(hidden, shape["ff"]))
    writer.add_tensor("output_norm.weight", ones)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def make(kit: Path, folder: Path, env: dict, sizes: list[str]) -> tuple[Optional[Path], Optional[Path]]:
    """(the 135M-shaped Q4_1, the 1.7B-shaped Q4_K_M), made once into `folder`; only those `sizes`
    ("small", "large") names, None for the other."""
    folder.mkdir(parents=True, exist_ok=True)
    made: list[Optional[Path]] = []
    for size, (name, shape) in zip(("small", "large"), SHAPES.items()):
        if size not in sizes:
            made.append(None)
            continue
        quantized = folder / f"{name}-{shape['quant'][0].lower()}.gguf"
        if not quantized.exists():
            f16 = write_f16(shape, kit / "vocab.gguf", folder / f"{name}-f16.gguf")
            quant = [a for a in shape["quant"][1:]] + [str(f16), str(quantized), shape["quant"][0]]
            subprocess.run([str(kit / "bin" / "llama-quantize"), *quant], check=True, env=env,
                           stdout=subprocess.DEVNULL)
            f16.unlink()
        made.append(quantized)
    return made[0], made[1]
