"""Where Confab keeps its data: one folder holding `confab.db`, a `states/` folder and the prompt cache.

The folder is `$CONFAB_HOME` when that is set (tests and portable installs use it), else the
platform's user data folder for "Confab" (platformdirs).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

HOME_ENV = "CONFAB_HOME"
"""Environment variable that overrides the data folder."""
DB_NAME = "confab.db"
"""File name of the one database."""
STATES_DIR_NAME = "states"
"""Folder, inside the data folder, holding saved session state files."""
PREFIX_CACHE_DIR_NAME = "prompt-cache"
"""Folder, inside the data folder, where the engine keeps prompts' K/V (EngineConfig.prefix_cache_dir)."""


def data_dir() -> Path:
    """The data folder: `$CONFAB_HOME` if set and not empty, else platformdirs' user data dir."""
    override = os.environ.get(HOME_ENV, "").strip()
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_data_dir("Confab", appauthor=False))


def database_path(home: Path | None = None) -> Path:
    """`confab.db` inside `home` (default: `data_dir()`)."""
    return (home if home is not None else data_dir()) / DB_NAME


def states_dir(home: Path | None = None) -> Path:
    """The saved-state folder inside `home` (default: `data_dir()`); not created here."""
    return (home if home is not None else data_dir()) / STATES_DIR_NAME


def prefix_cache_dir(home: Path | None = None) -> Path:
    """The engine's prompt cache inside `home` (default: `data_dir()`); a cache, safe to delete."""
    return (home if home is not None else data_dir()) / PREFIX_CACHE_DIR_NAME
