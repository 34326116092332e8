"""A .gguf file served as it is stored (the llama.cpp backend): nothing converted, no weights written.

The config and tokenizer are read out of the file itself with transformers' GGUF support, exactly as
the conversion for torch and MLX reads them (engine/models/gguf_convert.py), so the chat template and
stop tokens render the same on every backend. Building the tokenizer from the file's 49k-token
vocabulary takes seconds, so its few small JSON files are kept in the cache beside nothing else.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import ModelLoadError
from .cache_lock import building


def read_metadata(gguf_path: Path, out_dir: Path) -> Path:
    """`out_dir` holding config.json and the tokenizer files of `gguf_path` (written once)."""
    def done() -> bool:
        return (out_dir / "config.json").is_file() and (out_dir / "tokenizer_config.json").is_file()

    if done():
        return out_dir
    with building(out_dir):  # another process may be writing it (two test workers read one tiny GGUF)
        if not done():
            _write_metadata(gguf_path, out_dir)
    return out_dir


def _write_metadata(gguf_path: Path, out_dir: Path) -> None:
    from transformers import AutoConfig, AutoTokenizer

    tmp = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        config = AutoConfig.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        config.save_pretrained(tmp)
        AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name).save_pretrained(tmp)
    except Exception as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ModelLoadError(f"could not read the config and tokenizer of {gguf_path.name}: {e}") from e
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
