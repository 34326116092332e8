"""Model sources: resolve "bundled:…", folders and .gguf files to a checked local folder."""

from .sources import BUNDLED, DEFAULT_MODEL, ModelFolder, cache_dir, resolve

__all__ = ["BUNDLED", "DEFAULT_MODEL", "ModelFolder", "cache_dir", "resolve"]
