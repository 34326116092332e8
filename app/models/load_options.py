"""How each model is loaded, remembered per model in the app's settings file: its context length,
GPU layers, CPU threads, vision projector and K/V cache type, as the Load-model dialog last set them.

    options = load_options(home, source)            # LoadOptions(), where nothing was chosen yet
    config = options.applied_to(EngineConfig())     # what the engine loads with
    save_load_options(home, source, LoadOptions(max_context=16384))

One key per model in the `models` group: the hex of the model's path (as `same_model_key` finds it),
holding JSON. Saving merges into what the entry held, so keys written by hand (or by a later
version) stay; an entry that is not a JSON object is left as it is, never overwritten.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QSettings

from engine import KV_CACHE_TYPES, EngineConfig

from app.models.names import same_model_key
from app.settings.app_settings import settings_path

GROUP = "models"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadOptions:
    """Load choices for one model; None leaves the choice to the engine (or the command line)."""

    max_context: Optional[int] = None
    """Tokens one conversation may hold (None: the app's default, 4,096)."""
    gpu_layers: Optional[int] = None
    """llama.cpp: layers on the GPU (None: as many as fit; 0: the CPU only)."""
    threads: Optional[int] = None
    """CPU threads (None: the physical cores)."""
    mmproj: Optional[str] = None
    """llama.cpp: the vision projector file that lets the model see images (None: an mmproj*.gguf
    beside the model, when there is one; `EngineConfig.mmproj`)."""
    cache_type_k: Optional[str] = None
    """llama.cpp: the type keys are cached in ("f16", "q8_0", "q4_0"; None: f16)."""
    cache_type_v: Optional[str] = None
    """llama.cpp: the type values are cached in (as cache_type_k)."""

    def applied_to(self, config: EngineConfig) -> EngineConfig:
        """`config` with these choices over it (what is None keeps the config's)."""
        chosen = {k: v for k, v in asdict(self).items() if v is not None}
        return replace(config, **chosen)


def _key(source: str) -> str:
    # QSettings treats "/" and "\\" in keys specially: the key is the path's UTF-8 in hex.
    return f"{GROUP}/{same_model_key(source).encode('utf-8').hex()}"


def _qsettings(home: Path) -> QSettings:
    return QSettings(str(settings_path(home)), QSettings.Format.IniFormat)


def _whole(value: object) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _entry(qs: QSettings, source: str) -> Optional[dict]:
    """The stored entry as a dict ({} when there is none; None when it is not a JSON object)."""
    raw = qs.value(_key(source))
    if raw is None:
        return {}
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        data = None
    return data if isinstance(data, dict) else None


def load_options(home: Path, source: str) -> LoadOptions:
    """What was chosen for `source`; a missing or unreadable value is left to the engine."""
    try:
        data = _entry(_qsettings(home), source) or {}
    except Exception:  # an unreadable settings file: defaults rather than no app
        return LoadOptions()
    context, layers, threads = (_whole(data.get(k)) for k in ("max_context", "gpu_layers", "threads"))
    mmproj = data.get("mmproj")
    k, v = (data.get(key) if data.get(key) in KV_CACHE_TYPES else None for key in ("cache_type_k", "cache_type_v"))
    return LoadOptions(max_context=context if context and context >= 16 else None, gpu_layers=layers,
                       threads=threads or None, mmproj=mmproj if isinstance(mmproj, str) and mmproj else None,
                       cache_type_k=k, cache_type_v=v)


def save_load_options(home: Path, source: str, options: LoadOptions) -> bool:
    """Remember `options` for `source`, merged into its entry; False (and the file untouched) when
    the entry holds something this version cannot read."""
    Path(home).mkdir(parents=True, exist_ok=True)
    qs = _qsettings(home)
    data = _entry(qs, source)
    if data is None:
        log.warning("the load options stored for %s are not a JSON object: left as they are", source)
        return False
    data.update(source=source, **asdict(options))
    qs.setValue(_key(source), json.dumps(data))
    qs.sync()
    return True
