"""A .gguf file served as it is stored (the llama.cpp backend): nothing converted, no weights written.

The config and tokenizer are read out of the file itself with transformers' GGUF support, exactly as
the conversion for torch and MLX reads them (engine/models/gguf_convert.py), so the chat template and
stop tokens render the same on every backend. Building the tokenizer from the file's 49k-token
vocabulary takes seconds, so its few small JSON files are kept in the cache beside nothing else.

A vision model's text part that transformers' GGUF reader knows under another architecture name
(TEXT_ALIASES) is read through a copy of the file's metadata under that name (no tensors copied).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import ModelLoadError
from .cache_lock import build_once
from .gguf_header import read_header

TEXT_ALIASES = {"qwen2vl": "qwen2"}
"""llama.cpp architecture -> the one transformers' GGUF reader knows for its text model: Qwen2-VL's and
Qwen2.5-VL's text model is Qwen2's with M-RoPE positions (llama.cpp places those; the config and the
tokenizer are Qwen2's)."""


def read_metadata(gguf_path: Path, out_dir: Path) -> Path:
    """`out_dir` holding config.json and the tokenizer files of `gguf_path` (written once)."""
    def done() -> bool:
        return (out_dir / "config.json").is_file() and (out_dir / "tokenizer_config.json").is_file()

    # another process may be writing it (two test workers read one tiny GGUF)
    build_once(out_dir, done, lambda: _write_metadata(gguf_path, out_dir))
    return out_dir


def _write_metadata(gguf_path: Path, out_dir: Path) -> None:
    from transformers import AutoConfig, AutoTokenizer

    tmp = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        source = _text_alias(gguf_path, tmp / "text.gguf") or gguf_path
        config = AutoConfig.from_pretrained(source.parent, gguf_file=source.name)
        config.save_pretrained(tmp)
        AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name).save_pretrained(tmp)
        if source != gguf_path:
            source.unlink()
    except Exception as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ModelLoadError(f"could not read the config and tokenizer of {gguf_path.name}: {e}") from e
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)


def _text_alias(gguf_path: Path, out: Path) -> Path | None:
    """`out`: `gguf_path`'s metadata under its TEXT_ALIASES name (and an `output.weight` of one
    number where the file has one, which tells transformers the embeddings are not tied); None where
    the architecture needs no alias."""
    arch = read_header(gguf_path).meta.get("general.architecture", "")
    alias = TEXT_ALIASES.get(arch)
    if alias is None:
        return None
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(str(gguf_path))
    writer = gguf.GGUFWriter(str(out), alias)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        name = alias + key[len(arch):] if key.startswith(arch + ".") else key
        writer.add_key_value(name, field.contents(), field.types[0],
                             sub_type=field.types[1] if len(field.types) > 1 else None)
    if any(t.name == "output.weight" for t in reader.tensors):
        writer.add_tensor("output.weight", np.zeros(1, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out
