"""Confab's inference engine: one loaded model, many isolated sessions, its own thread and stream.

    from engine import Engine, EngineConfig, SamplingParams

    with Engine.load("bundled:smollm2-135m-instruct") as engine, engine.open_session() as s:
        for chunk in s.chat([{"role": "user", "content": "Hi"}], SamplingParams(temperature=0)):
            print(chunk.text, end="")

A model served elsewhere over the OpenAI API is a `RemoteEngine` with the same interface:
`open_engine("server:http://host:8317/v1#model")` gives one.

The engine imports neither Qt nor SQLite; the app sees it only through these names.
"""

from .engine import Engine
from .estimate import MemoryEstimate, estimate_memory
from .models import DEFAULT_MODEL
from .open import AnyEngine, open_engine
from .remote import RemoteEngine, RemoteError, RemoteSession, list_models, remote_source
from .session import Session, Stream
from .types import Capacity, Chunk, EngineConfig, GenerationStats, SamplingParams

__all__ = [
    "AnyEngine",
    "RemoteEngine",
    "RemoteError",
    "RemoteSession",
    "list_models",
    "open_engine",
    "remote_source",
    "DEFAULT_MODEL",
    "Capacity",
    "Chunk",
    "Engine",
    "EngineConfig",
    "GenerationStats",
    "MemoryEstimate",
    "SamplingParams",
    "Session",
    "Stream",
    "estimate_memory",
]
