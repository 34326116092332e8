"""`open_engine`: one call that gives the app an engine for any source, local or remote.

A source "server:URL#MODEL" connects to a server over the OpenAI API; anything else is loaded in
process. The caller gets back an object with the same conversation-level interface either way.
"""

from __future__ import annotations

from typing import Optional, Union

from .engine import Engine, Progress
from .remote import RemoteEngine, parse_remote_source
from .types import EngineConfig

AnyEngine = Union[Engine, RemoteEngine]


def open_engine(source: str, config: Optional[EngineConfig] = None, progress: Optional[Progress] = None,
                *, api_key: Optional[str] = None) -> AnyEngine:
    """Load `source` in process, or connect to the server it names (`api_key` only matters there).
    Raises ModelLoadError, or a RemoteError saying why the server cannot be used."""
    remote = parse_remote_source(source)
    if remote is None:
        return Engine.load(source, config, progress)
    base_url, model = remote
    if progress is not None:
        progress(0.0, f"Connecting to {base_url}…")
    engine = RemoteEngine.connect(base_url, api_key, model)
    if progress is not None:
        progress(1.0, f"Connected to {engine.label}")
    return engine
