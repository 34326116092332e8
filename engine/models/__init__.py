"""Model sources: resolve "bundled:…", folders and .gguf files to a checked local folder.

Threads: an Engine resolves and converts its model on its own engine thread, inside `Engine.load`;
`estimate_memory` and the Hub search and downloads run on whichever thread calls them (the app
runs them off the GUI thread).
"""

from .sources import BUNDLED, DEFAULT_MODEL, ModelFolder, cache_dir, resolve

__all__ = ["BUNDLED", "DEFAULT_MODEL", "ModelFolder", "cache_dir", "resolve"]
