"""Delete a downloaded model from the Hugging Face cache, freeing its disk space.

Only paths inside the Hub cache are touched. A snapshot entry is a link to a blob; a blob still linked
from another snapshot (the same file in another revision) is kept. When a repo has no snapshot left,
its whole cache folder goes (refs, partial downloads).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from app.models.discovery import hf_hub_dir


def _repo_of(path: Path, hub: Path) -> Path:
    """models--ORG--NAME folder holding `path` (a snapshot folder or a file in one)."""
    rel = path.relative_to(hub)  # ValueError outside the cache
    if len(rel.parts) < 3 or rel.parts[1] != "snapshots" or not rel.parts[0].startswith("models--"):
        raise ValueError(f"{path} is not a downloaded model in the Hugging Face cache")
    return hub / rel.parts[0]


def downloaded_size(source: str) -> int:
    """Bytes the model's files take on disk (links followed)."""
    path = Path(source)
    files = [path] if path.is_file() else [p for p in path.iterdir() if p.is_file()]
    return sum(p.stat().st_size for p in files)


def delete_downloaded(source: str) -> int:
    """Remove a downloaded model (a .gguf file or a model folder) from the Hub cache; returns bytes freed.
    Raises ValueError for anything outside the cache."""
    hub = hf_hub_dir().resolve()
    path = Path(os.path.abspath(source))
    repo = _repo_of(path, hub if path.is_relative_to(hub) else hf_hub_dir())
    entries = [path] if not path.is_dir() else list(path.iterdir())
    blobs = {e.resolve() for e in entries if e.is_symlink()}
    freed = 0
    for e in entries:
        if not e.is_symlink() and e.is_file():
            freed += e.stat().st_size
        e.unlink()
    if path.is_dir():
        path.rmdir()
    elif not any(path.parent.iterdir()):
        path.parent.rmdir()
    still_linked = {p.resolve() for p in (repo / "snapshots").rglob("*") if p.is_symlink()}
    for blob in blobs - still_linked:
        if blob.exists():
            freed += blob.stat().st_size
            blob.unlink()
    if not any((repo / "snapshots").iterdir()):
        shutil.rmtree(repo, ignore_errors=True)
    return freed
