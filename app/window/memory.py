"""The window's place, size, splitter and last open conversation, kept across restarts.

Stored beside the settings (`<home>/settings.ini`, group "window") but apart from `AppSettings`:
these are not choices the user makes in a dialog, and a bad value only means the default layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QByteArray, QSettings

from app.settings.app_settings import settings_path


@dataclass(frozen=True)
class WindowMemory:
    geometry: Optional[bytes] = None
    """`QWidget.saveGeometry()` of the main window (size, position, maximized)."""
    splitter: Optional[bytes] = None
    """`QSplitter.saveState()` of the list / chat splitter."""
    last_conversation: Optional[int] = None
    """The conversation open when the app last quit (or the last one open before a blank page)."""


def _qsettings(home: Path) -> QSettings:
    return QSettings(str(settings_path(home)), QSettings.Format.IniFormat)


def load_window_memory(home: Path) -> WindowMemory:
    """What was saved, or the defaults (a missing or garbled value is left out, never an error)."""
    try:
        qs = _qsettings(home)
        geometry, splitter, last = (qs.value(f"window/{k}") for k in ("geometry", "splitter", "last_conversation"))
    except Exception:  # an unreadable file must not keep the app from starting
        return WindowMemory()
    return WindowMemory(_bytes(geometry), _bytes(splitter), _int(last))


def save_window_memory(home: Path, memory: WindowMemory) -> None:
    Path(home).mkdir(parents=True, exist_ok=True)
    qs = _qsettings(home)
    for key, value in (("geometry", memory.geometry), ("splitter", memory.splitter)):
        if value is None:
            qs.remove(f"window/{key}")
        else:
            qs.setValue(f"window/{key}", QByteArray(value))
    if memory.last_conversation is None:
        qs.remove("window/last_conversation")
    else:
        qs.setValue("window/last_conversation", memory.last_conversation)
    qs.sync()


def _bytes(raw) -> Optional[bytes]:
    if isinstance(raw, QByteArray) and not raw.isEmpty():
        return bytes(raw.data())
    return None


def _int(raw) -> Optional[int]:
    try:
        value = int(str(raw))
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None
