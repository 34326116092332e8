"""App-wide settings: one frozen dataclass, kept in `<home>/settings.ini` through QSettings.

    settings = load_settings(data_dir())
    save_settings(data_dir(), dataclasses.replace(settings, theme="dark"))
    params = sampling_params(conversation.sampling, settings)

A missing, garbled or out-of-range value falls back to that field's default: a bad settings file
never stops the app from starting.
"""

from __future__ import annotations

import ipaddress
import math
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal, Optional

from PySide6.QtCore import QSettings

from engine import SamplingParams

Theme = Literal["system", "light", "dark"]
THEMES: tuple[str, ...] = ("system", "light", "dark")
SETTINGS_FILE = "settings.ini"

# Allowed ranges, shared by the dialogs' spin boxes so a bad value cannot be typed in.
FONT_SIZE_RANGE = (8, 24)
TEMPERATURE_RANGE = (0.0, 2.0)
TOP_P_RANGE = (0.01, 1.0)
MAX_TOKENS_RANGE = (1, 32768)
TOP_K_RANGE = (0, 1000)
MIN_P_RANGE = (0.0, 0.99)
REPEAT_PENALTY_RANGE = (1.0, 2.0)
REPEAT_LAST_N_RANGE = (-1, 32768)
PENALTY_RANGE = (-2.0, 2.0)
STATE_BUDGET_MB_RANGE = (64, 1 << 20)
PREFIX_CACHE_MB_RANGE = (0, 1 << 20)
API_PORT_RANGE = (1024, 65535)


@dataclass(frozen=True)
class AppSettings:
    """What the user chose in Settings; every field has a safe default."""

    theme: Theme = "system"
    """"system" follows the desktop's light/dark choice; "light" or "dark" force one."""
    font_size: int = 11
    """Point size of the app's font (8..24)."""
    temperature: float = 0.7
    """Default sampling temperature for conversations that do not set their own (0..2)."""
    top_p: float = 1.0
    """Default nucleus sampling share (0.01..1)."""
    max_tokens: int = 512
    """Default most tokens per reply (1..32768)."""
    top_k: int = 0
    """Default: sample only from the k likeliest tokens (0: no limit)."""
    min_p: float = 0.0
    """Default: drop tokens less likely than this share of the likeliest one (0: off)."""
    repetition_penalty: float = 1.1
    """Default repeat penalty on tokens among the last `repeat_last_n` (1: off). These defaults were
    chosen by `python -m engine bench --repetition` on the bundled model (README, "Sampling
    defaults"): at temperature 0.7, a repeat penalty of 1.1 over 64 tokens took the share of replies
    that loop from 42 % to 0 %; top-k 40 with min-p 0.05 made it worse (50 %; 8 % with the penalty)."""
    repeat_last_n: int = 64
    """Default window of the penalties: the conversation's last N tokens (-1: all of it, 0: off)."""
    presence_penalty: float = 0.0
    """Default penalty on every token already in that window (-2..2; 0: off)."""
    frequency_penalty: float = 0.0
    """Default penalty per occurrence of a token in that window (-2..2; 0: off)."""
    speculative: bool = True
    """Draft tokens from the conversation and check them in one step (llama.cpp; the same replies)."""
    draft_model: str = ""
    """A small .gguf of the loaded model's vocabulary that also guesses tokens ("" for none; llama.cpp)."""
    state_budget_mb: int = 2048
    """MiB of disk that saved session states may use before the oldest are deleted."""
    prefix_cache_mb: int = 4096
    """MiB of disk for prompts' K/V (llama.cpp), so a long prompt seen before is read back rather than
    computed, after a restart too; least recently used first, 0 turns it off. Applies at the next load."""
    close_to_tray: bool = False
    """Closing the window hides it to the tray icon instead of quitting (needs a tray)."""
    menubar_only: bool = False
    """macOS: run as a menubar-only app, with no Dock icon."""
    confirm_quit: bool = True
    """Ask before quitting while replies are still being written."""
    last_model: str = ""
    """Source of the model loaded last ("" means the bundled default)."""
    quick_chat_shortcut: str = "Alt+Space" if sys.platform == "darwin" else "Ctrl+Alt+Space"
    """Global shortcut that opens the quick chat from any program, in Qt's portable text ("" for none)."""
    api_server: bool = False
    """Serve the loaded model on an OpenAI-compatible local API."""
    api_port: int = 8317
    """Port of the local API server (1024..65535)."""
    api_host: str = "127.0.0.1"
    """Where the local API listens: "127.0.0.1" (this computer only), "0.0.0.0" (every network this
    computer is on) or one of its addresses (that network only). Anything but loopback needs `api_key`."""
    api_key: str = ""
    """Bearer token the local API server requires ("" requires none; the network needs one)."""
    server_api_key: str = ""
    """API key of the remote server connected to last (Model ▸ Connect to server…; "" for none). Not the
    local API's key (`api_key`): this one is sent to another server, that one is asked of clients."""
    keep_attachment_files: bool = False
    """Store a copy of each attached file's bytes with its message, besides its text (off: the
    text sent to the model is kept, the file itself is not copied into the database)."""


_LIMITS: dict[str, tuple[float, float]] = {
    "font_size": FONT_SIZE_RANGE,
    "temperature": TEMPERATURE_RANGE,
    "top_p": TOP_P_RANGE,
    "max_tokens": MAX_TOKENS_RANGE,
    "top_k": TOP_K_RANGE,
    "min_p": MIN_P_RANGE,
    "repetition_penalty": REPEAT_PENALTY_RANGE,
    "repeat_last_n": REPEAT_LAST_N_RANGE,
    "presence_penalty": PENALTY_RANGE,
    "frequency_penalty": PENALTY_RANGE,
    "state_budget_mb": STATE_BUDGET_MB_RANGE,
    "prefix_cache_mb": PREFIX_CACHE_MB_RANGE,
    "api_port": API_PORT_RANGE,
}
_DEFAULTS = AppSettings()


CONVERSATION_SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "repeat_last_n",
                              "presence_penalty", "frequency_penalty", "max_tokens")
"""Sampling settings a conversation may set for itself, over the app's defaults."""


def settings_path(home: Path) -> Path:
    return Path(home) / SETTINGS_FILE


def _qsettings(home: Path) -> QSettings:
    return QSettings(str(settings_path(home)), QSettings.Format.IniFormat)


def load_settings(home: Path) -> AppSettings:
    """Settings stored in `home`, each missing or unreadable value replaced by its default."""
    try:
        qs = _qsettings(home)
        raw = {f.name: qs.value(f.name) for f in fields(AppSettings) if qs.contains(f.name)}
    except Exception:  # an unreadable file must not keep the app from starting
        return AppSettings()
    values = {}
    for f in fields(AppSettings):
        value = _parse(f.name, raw.get(f.name))
        if value is not None:
            values[f.name] = value
    return AppSettings(**values)


def save_settings(home: Path, settings: AppSettings) -> None:
    """Write every field to `<home>/settings.ini` (the folder is created if needed)."""
    Path(home).mkdir(parents=True, exist_ok=True)
    qs = _qsettings(home)
    for f in fields(AppSettings):
        qs.setValue(f.name, getattr(settings, f.name))
    qs.sync()


def _parse(name: str, raw: Any) -> Optional[Any]:
    """`raw` (as QSettings returns it, usually text) as the field's type, or None if unusable."""
    if raw is None:
        return None
    default = getattr(_DEFAULTS, name)
    if isinstance(default, bool):
        return _parse_bool(raw)
    if name == "theme":
        return raw if raw in THEMES else None
    if name == "api_host":
        return _address(raw)
    if isinstance(default, str):
        return raw if isinstance(raw, str) else None
    number = _number(raw, int if isinstance(default, int) else float)
    low, high = _LIMITS[name]
    return number if number is not None and low <= number <= high else None


def _parse_bool(raw: Any) -> Optional[bool]:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    return {"true": True, "1": True, "false": False, "0": False}.get(text)


def _address(raw: Any) -> Optional[str]:
    """An IP address to listen on, as written (a name or a typo falls back to this computer only)."""
    try:
        return str(ipaddress.ip_address(str(raw).strip()))
    except ValueError:
        return None


def _number(raw: Any, kind: type) -> Optional[float]:
    try:
        value = float(str(raw).strip()) if not isinstance(raw, (int, float)) else float(raw)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    if kind is int:
        return int(value) if value.is_integer() else None
    return value


def sampling_params(conversation_sampling: dict, settings: AppSettings) -> SamplingParams:
    """The conversation's own sampling values (CONVERSATION_SAMPLING_KEYS) over the app defaults.

    A key the conversation does not set, or sets to a value out of range, uses the app default.
    """
    defaults = SamplingParams(speculative=settings.speculative,
                              **{key: getattr(settings, key) for key in CONVERSATION_SAMPLING_KEYS})
    return with_overrides(defaults, conversation_sampling)


def with_overrides(base: SamplingParams, conversation_sampling: dict) -> SamplingParams:
    """`base` with the conversation's own sampling values (the keys its settings dialog writes); a
    key it does not set, or sets to a value out of range, keeps `base`'s."""
    chosen: dict[str, Any] = {}
    for name in CONVERSATION_SAMPLING_KEYS:
        own = conversation_sampling.get(name) if isinstance(conversation_sampling, dict) else None
        value = _parse(name, own) if own is not None and not isinstance(own, bool) else None
        if value is not None:
            chosen[name] = value
    return replace(base, **chosen)
