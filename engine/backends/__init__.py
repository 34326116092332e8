"""The small interface each compute library implements, and the choice between them.

Every method runs on the owning engine's thread, inside `compute()`. A state is an opaque object that
holds one session's mutable tensors; only the backend looks inside it.
"""

from __future__ import annotations

import importlib.util
import platform
import sys
from pathlib import Path
from typing import Any, ContextManager, Optional, Protocol

import numpy as np

from ..errors import ModelLoadError

State = Any


class Backend(Protocol):
    name: str
    """"torch", "mlx" or "llamacpp"."""
    device: str
    """"cuda", "cpu" or "metal"."""
    dtype: str
    """Name of the dtype weights and state are held in, e.g. "bfloat16"."""
    dtype_reason: str
    """Why that dtype, in one line, e.g. "float32: this CPU has no native bfloat16 (AVX2)"."""
    weights_nbytes: int

    def load(self, folder: Path, config: dict) -> None:
        """Load weights non-lazily and create this engine's compute stream (engine thread)."""

    def available_memory(self) -> int:
        """Bytes still free where session state would live, measured after load."""

    def compute(self) -> ContextManager:
        """Context in which every forward runs: this engine's stream, no autograd."""

    def new_state(self) -> State:
        """An empty per-session state; it allocates on first use and grows with content."""

    def forward(self, state: State, token_ids: list[int]) -> np.ndarray:
        """Append `token_ids` to `state`; return float32 logits of the last position."""

    def batchable(self, state: State) -> bool:
        """Whether `state` can join a batch (plain full-attention K/V); others step alone."""

    def merge(self, states: list[State]) -> Any:
        """One batch state holding `states` (not changed), left-padded to the longest."""

    def forward_batch(self, batch: Any, token_ids: list[int]) -> np.ndarray:
        """Append one token per row; float32 logits, one row per member. On error, unchanged."""

    def split(self, batch: Any) -> list[State]:
        """Each member's own state again, padding dropped, in member order."""

    def row_nbytes(self, batch: Any, row: int) -> int:
        """Bytes member `row`'s own state will hold once split out."""

    def trim(self, state: State, n: int) -> bool:
        """Drop the last `n` tokens from `state`; False when this model's state cannot be trimmed."""

    def state_nbytes(self, state: State) -> int:
        """Bytes the state's tensors hold now."""

    def save_state(self, state: State, path: Path, metadata: dict[str, str]) -> None:
        """Write `state` (only its filled part) and `metadata` to `path` as safetensors."""

    def load_state(self, path: Path) -> tuple[State, dict[str, str]]:
        """Read a state written by save_state, in this backend's dtype and device."""

    def close(self) -> None:
        """Drop the model and what the library keeps for this thread (engine thread, last call).

        Called once the engine stops, or after a failed load: thread-local library state must go
        while the interpreter still runs, not in the thread's exit, which may race its shutdown."""


REQUIRES = {"torch": ("torch",), "mlx": ("mlx", "mlx_lm"), "llamacpp": ("llama_cpp",)}
"""The modules each backend needs."""
_llamacpp_error: Optional[str] = None
_llamacpp_checked = False


def is_installed(name: str) -> bool:
    return all(importlib.util.find_spec(module) for module in REQUIRES[name])


def installed() -> list[str]:
    """Every backend this machine can run, the platform's default first."""
    first = default_backend()
    return [name for name in sorted(REQUIRES, key=lambda n: n != first) if is_installed(name)]


def llamacpp_error() -> Optional[str]:
    """None when llama-cpp-python imports (its shared library loads), else why not, in one line.
    Imported, not just found: a wheel built for another CPU or a missing library fails only here."""
    global _llamacpp_error, _llamacpp_checked
    if not _llamacpp_checked:
        try:
            import llama_cpp  # noqa: F401
        except Exception as e:  # ImportError, OSError from the shared library, ...
            _llamacpp_error = f"{type(e).__name__}: {e}"
        _llamacpp_checked = True
    return _llamacpp_error


def choose(name: str, source_kind: str) -> tuple[str, str]:
    """(backend, why) for a source of `source_kind` ("gguf" or "folder") and the configured `name`.

    auto: a .gguf runs on llama.cpp where llama-cpp-python imports (as stored, no conversion), else
    on the platform's backend from a converted folder; folders run on the platform's backend."""
    if name == "llamacpp":
        if source_kind != "gguf":
            raise ModelLoadError("the llamacpp backend loads .gguf files; this model is a folder (use torch or mlx)")
        if (error := llamacpp_error()) is not None:
            raise ModelLoadError(f"the llamacpp backend needs llama-cpp-python, which does not import: {error}")
        return name, "llama.cpp: asked for"
    if name != "auto":
        return name, f"{name}: asked for"
    fallback = default_backend()
    if source_kind != "gguf":
        return fallback, f"{fallback}: a model folder runs on the platform's backend"
    if (error := llamacpp_error()) is None:
        return "llamacpp", "llama.cpp: a GGUF file runs as stored"
    return fallback, f"{fallback}: llama-cpp-python does not import ({error}); the GGUF is converted"


def default_backend() -> str:
    """MLX on Apple Silicon, torch elsewhere."""
    if sys.platform == "darwin" and platform.machine() == "arm64" and is_installed("mlx"):
        return "mlx"
    return "torch"


def create(name: str, device: str, dtype: str, quantize: Optional[str] = None, config: Any = None) -> Backend:
    """Instantiate (without loading) the backend `name` ("auto" picks the platform's).
    `quantize` (EngineConfig.quantize) applies to torch only; llamacpp sizes its pool from `config`."""
    name = default_backend() if name == "auto" else name
    if name == "torch":
        if not is_installed("torch"):
            raise ModelLoadError("the torch backend needs PyTorch, which is not installed")
        from .torch import TorchBackend

        return TorchBackend(device, dtype, quantize, getattr(config, "threads", None))
    if name == "mlx":
        if not is_installed("mlx"):
            raise ModelLoadError("the mlx backend needs mlx and mlx-lm, which are not installed")
        from .mlx import MlxBackend

        return MlxBackend(device, dtype)
    if name == "llamacpp":
        if (error := llamacpp_error()) is not None:
            raise ModelLoadError(f"the llamacpp backend needs llama-cpp-python, which does not import: {error}")
        from .llamacpp import LlamaCppBackend

        return LlamaCppBackend(device, dtype, config)
    raise ModelLoadError(f"unknown backend {name!r}")
