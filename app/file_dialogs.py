"""File pickers that open where the user was last, not in the program's folder.

    path = open_file(parent, "Import a conversation", "Confab conversation (*.json)")
    path = save_file(parent, "Export", "My chat.md", "Markdown (*.md);;JSON (*.json)")
    folder = choose_folder(parent, "Choose a model folder")

Qt's pickers start in the process's working directory when given no folder, which for an app started
from a launcher is the program's own folder. These start in the folder last used by any picker
(remembered in the app's settings file), or the user's home folder the first time or when that folder
is gone. Each returns None when the user cancels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog, QWidget

from app.settings.app_settings import settings_path
from app.store import data_dir

LAST_FOLDER_KEY = "file_dialogs/last_folder"
_home: Optional[Path] = None


def use_home(home: Optional[Path]) -> None:
    """Remember folders in `home`'s settings file (the app's `--home`); None: the default data folder."""
    global _home
    _home = Path(home) if home is not None else None


def _folder() -> Path:
    return _home if _home is not None else data_dir()


def _qsettings() -> QSettings:
    return QSettings(str(settings_path(_folder())), QSettings.Format.IniFormat)


def start_folder() -> Path:
    """The last folder a picker used, if it still exists; else the user's home folder."""
    try:
        last = _qsettings().value(LAST_FOLDER_KEY)
    except Exception:  # an unreadable settings file: just start at home
        last = None
    if isinstance(last, str) and last and Path(last).is_dir():
        return Path(last)
    return Path.home()


def remember(path: Path | str) -> None:
    """Remember the folder of `path` (or `path` itself, if a folder) for the next picker."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    try:
        _folder().mkdir(parents=True, exist_ok=True)
        qs = _qsettings()
        qs.setValue(LAST_FOLDER_KEY, str(folder))
        qs.sync()
    except OSError:  # not remembering is harmless
        pass


def open_file(parent: Optional[QWidget], caption: str, filters: str) -> Optional[Path]:
    """A file to read, or None."""
    file, _ = QFileDialog.getOpenFileName(parent, caption, str(start_folder()), filters)
    return _chosen(file)


def open_files(parent: Optional[QWidget], caption: str, filters: str) -> list[Path]:
    """Files to read (none when the user cancels)."""
    files, _ = QFileDialog.getOpenFileNames(parent, caption, str(start_folder()), filters)
    if files:
        remember(files[0])
    return [Path(f) for f in files]


def save_file(parent: Optional[QWidget], caption: str, name: str, filters: str,
              selected_filter: str = "") -> tuple[Optional[Path], str]:
    """(file to write or None, the filter the user picked); `name` is the suggested file name."""
    file, chosen_filter = QFileDialog.getSaveFileName(parent, caption, str(start_folder() / name), filters,
                                                      selected_filter)
    return _chosen(file), chosen_filter


def choose_folder(parent: Optional[QWidget], caption: str) -> Optional[Path]:
    """A folder, or None."""
    return _chosen(QFileDialog.getExistingDirectory(parent, caption, str(start_folder())))


def _chosen(path: str) -> Optional[Path]:
    if not path:
        return None
    remember(path)
    return Path(path)
