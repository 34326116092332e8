"""System-prompt presets: named conversation settings (system prompt + sampling overrides), kept in
the app's settings file (not the database: they belong to the user, not to a conversation).

    save_preset(home, "Terse", Preset("Answer in one line.", {"temperature": 0.2}))
    load_presets(home)        # {"Terse": Preset(...)}, sorted by name
    delete_preset(home, "Terse")

Each preset is one key in the `presets` group holding JSON (its name included). A garbled entry is skipped, never fatal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings

from app.settings.app_settings import CONVERSATION_SAMPLING_KEYS, settings_path

GROUP = "presets"
MAX_NAME = 60


@dataclass(frozen=True)
class Preset:
    """What a conversation's settings dialog sets: a system prompt and the sampling it overrides."""

    system_prompt: str = ""
    sampling: dict[str, Any] = field(default_factory=dict, hash=False)
    """Only the keys the conversation overrides (CONVERSATION_SAMPLING_KEYS: temperature, top-p,
    top-k, min-p, the penalties and their window, max tokens)."""


def clean_name(name: str) -> str:
    """The name as stored; raises ValueError with a reason a user can read."""
    clean = " ".join(name.split())
    if not clean:
        raise ValueError("A preset needs a name.")
    if len(clean) > MAX_NAME:
        raise ValueError(f"A preset name can have at most {MAX_NAME} characters.")
    return clean


def _qsettings(home: Path) -> QSettings:
    return QSettings(str(settings_path(home)), QSettings.Format.IniFormat)


def _key(name: str) -> str:
    # QSettings treats "/" and "\\" in keys specially: the key is the name's UTF-8 in hex, and the
    # name itself is kept inside the value.
    return f"{GROUP}/{name.encode('utf-8').hex()}"


def load_presets(home: Path) -> dict[str, Preset]:
    """Every readable preset, by name, sorted case-insensitively."""
    try:
        qs = _qsettings(home)
        qs.beginGroup(GROUP)
        raw = {k: qs.value(k) for k in qs.childKeys()}
        qs.endGroup()
    except Exception:  # an unreadable settings file: no presets rather than no app
        return {}
    presets: dict[str, Preset] = {}
    for key, value in raw.items():
        try:
            data = json.loads(value)
            name = data["name"]
            sampling = {k: v for k, v in dict(data.get("sampling", {})).items() if k in CONVERSATION_SAMPLING_KEYS}
            presets[str(name)] = Preset(str(data.get("system_prompt", "")), sampling)
        except (TypeError, ValueError, AttributeError, KeyError):
            continue
    return dict(sorted(presets.items(), key=lambda item: item[0].lower()))


def save_preset(home: Path, name: str, preset: Preset) -> str:
    """Store `preset` under `name` (replacing one of that name); returns the name as stored."""
    name = clean_name(name)
    Path(home).mkdir(parents=True, exist_ok=True)
    qs = _qsettings(home)
    data = {"name": name, "system_prompt": preset.system_prompt, "sampling": preset.sampling}
    qs.setValue(_key(name), json.dumps(data))
    qs.sync()
    return name


def delete_preset(home: Path, name: str) -> None:
    qs = _qsettings(home)
    qs.remove(_key(name))
    qs.sync()
