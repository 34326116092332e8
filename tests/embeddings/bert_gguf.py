"""Write a BERT sentence-embedding folder (the bundled all-MiniLM-L6-v2) as a float32 GGUF, as
llama.cpp's converter writes BERT models: the tests' embedding GGUF, since none can be downloaded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def write_bert_gguf(folder: Path, out: Path) -> Path:
    import gguf
    from safetensors.numpy import load_file

    config = json.loads((folder / "config.json").read_text())
    layers = config["num_hidden_layers"]
    writer = gguf.GGUFWriter(str(out), "bert")
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_block_count(layers)
    writer.add_head_count(config["num_attention_heads"])
    writer.add_layer_norm_eps(config["layer_norm_eps"])
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    _vocab(writer, folder, config)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, layers)
    for name, tensor in load_file(str(folder / "model.safetensors")).items():
        if name.endswith("position_ids") or name.startswith("pooler."):
            continue
        base, _, suffix = name.rpartition(".")
        mapped = names.get_name(base.removeprefix("bert."))
        if mapped is None:
            raise ValueError(f"no GGUF name for {name}")
        writer.add_tensor(f"{mapped}.{suffix}", np.ascontiguousarray(tensor, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def _vocab(writer, folder: Path, config: dict) -> None:
    """WordPiece as llama.cpp reads it: a word's first piece gets "▁", a continuation loses its "##"."""
    import gguf

    vocab = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    tokens, types = [], []
    for token in vocab:
        if token.startswith("[") and token.endswith("]"):
            tokens.append(token)
            types.append(gguf.TokenType.UNKNOWN if token == "[UNK]" else gguf.TokenType.CONTROL)
        elif token.startswith("##"):
            tokens.append(token[2:])
            types.append(gguf.TokenType.NORMAL)
        else:
            tokens.append("\u2581" + token)
            types.append(gguf.TokenType.NORMAL)
    writer.add_tokenizer_model("bert")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_type_count(config.get("type_vocab_size", 2))
    ids = {t: i for i, t in enumerate(vocab)}
    writer.add_bos_token_id(ids["[CLS]"])
    writer.add_eos_token_id(ids["[SEP]"])
    writer.add_sep_token_id(ids["[SEP]"])
    writer.add_pad_token_id(ids["[PAD]"])
    writer.add_unk_token_id(ids["[UNK]"])
    writer.add_mask_token_id(ids["[MASK]"])
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(True)
