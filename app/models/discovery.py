"""Find models already on this computer: the Hugging Face cache, LM Studio's folders, Confab's own.

Pure filesystem work (directory listings and file sizes, never file contents), depth-limited, and
it never raises: an unreadable folder is skipped. Still, call it off the GUI thread: a home folder on
a network drive can be slow.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Literal

from app.store import data_dir

Kind = Literal["folder", "gguf"]
Where = Literal["Hugging Face cache", "LM Studio", "Confab", "Other"]
# Pieces of a split GGUF and vision projectors cannot be loaded on their own.
_SKIP_GGUF = re.compile(r"(-\d{5}-of-\d{5}\.gguf$)|(^mmproj)", re.IGNORECASE)


@dataclass(frozen=True)
class ModelCandidate:
    """A model found on disk that the engine can be asked to load."""

    name: str
    """Shown in the picker, e.g. "HuggingFaceTB/SmolLM2-360M-Instruct"."""
    source: str
    """Path string `Engine.load` accepts (a folder or a .gguf file)."""
    kind: Kind
    size_bytes: int
    """Bytes of the weight files on disk (not the memory they take once loaded)."""
    where: Where
    """Which of the usual places it was found in ("Other" for folders passed in)."""


def hf_hub_dir() -> Path:
    """The Hugging Face hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if hub := os.environ.get("HF_HUB_CACHE"):
        return Path(hub).expanduser()
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface"
    return Path(home).expanduser() / "hub"


def lmstudio_dirs() -> list[Path]:
    home = Path.home()
    return [home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"]


def find_models(extra_dirs: Iterable[Path | str] = ()) -> list[ModelCandidate]:
    """Every loadable-looking model in the usual places and in `extra_dirs`, each source once."""
    found: list[ModelCandidate] = []
    found += _scan_hf_cache(hf_hub_dir())
    for root in lmstudio_dirs():
        found += _scan_tree(Path(root), "LM Studio", depth=3)
    found += _scan_tree(data_dir() / "models", "Confab", depth=2)
    for root in extra_dirs:
        found += _scan_tree(Path(root).expanduser(), "Other", depth=2)
    seen: set[str] = set()
    unique = []
    for candidate in found:
        key = os.path.realpath(candidate.source)
        if key not in seen:
            seen.add(key)
            unique.append(candidate)
    return unique


def _scan_hf_cache(hub: Path) -> Iterator[ModelCandidate]:
    """models--ORG--NAME/snapshots/REV: a safetensors folder, or the .gguf files inside it."""
    for repo in _subdirs(hub):
        if not repo.name.startswith("models--"):
            continue
        repo_name = repo.name.removeprefix("models--").replace("--", "/")
        snapshots = _subdirs(repo / "snapshots")
        for snap in snapshots:
            name = repo_name if len(snapshots) == 1 else f"{repo_name} ({snap.name[:7]})"
            yield from _candidates_in(snap, name, "Hugging Face cache")


def _scan_tree(root: Path, where: Where, depth: int) -> Iterator[ModelCandidate]:
    """Model folders and .gguf files under `root`, at most `depth` folders down."""
    for folder, files in _walk(root, depth):
        rel = folder.relative_to(root).as_posix() if folder != root else ""
        yield from _candidates_in(folder, rel or root.name, where, files, gguf_prefix=rel)


def _candidates_in(folder: Path, name: str, where: Where, files: list[os.DirEntry] | None = None,
                   gguf_prefix: str | None = None) -> Iterator[ModelCandidate]:
    """A model folder (config.json + *.safetensors) named `name`, or the loadable .gguf files
    directly in `folder` (named `gguf_prefix/file`, `gguf_prefix` defaulting to `name`)."""
    prefix = name if gguf_prefix is None else gguf_prefix
    entries = files if files is not None else _files(folder)
    names = {e.name for e in entries}
    weights = [e for e in entries if e.name.endswith(".safetensors")]
    if "config.json" in names and weights:
        yield ModelCandidate(name, str(folder), "folder", sum(_size(e) for e in weights), where)
        return
    for e in entries:
        if e.name.lower().endswith(".gguf") and not _SKIP_GGUF.search(e.name):
            label = f"{prefix}/{e.name}" if prefix else e.name
            yield ModelCandidate(label, str(folder / e.name), "gguf", _size(e), where)


def _walk(root: Path, depth: int) -> Iterator[tuple[Path, list[os.DirEntry]]]:
    """(folder, its files) for `root` and its subfolders down to `depth`; hidden and partial folders
    (a conversion in progress) are skipped."""
    stack = [(root, 0)]
    while stack:
        folder, level = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        files = [e for e in entries if _is_file(e)]
        yield folder, files
        if level < depth and not any(e.name == "config.json" for e in files):
            for e in sorted(entries, key=lambda e: e.name, reverse=True):
                if _is_dir(e) and not e.name.startswith(".") and not e.name.endswith(".partial"):
                    stack.append((Path(e.path), level + 1))


def _subdirs(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as it:
            return sorted((Path(e.path) for e in it if _is_dir(e)), key=lambda p: p.name.lower())
    except OSError:
        return []


def _files(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return [e for e in it if _is_file(e)]
    except OSError:
        return []


def _is_file(e: os.DirEntry) -> bool:
    try:
        return e.is_file()  # follows symlinks: the HF cache links snapshot files to blobs
    except OSError:
        return False


def _is_dir(e: os.DirEntry) -> bool:
    try:
        return e.is_dir()
    except OSError:
        return False


def _size(e: os.DirEntry) -> int:
    try:
        return e.stat().st_size
    except OSError:
        return 0
