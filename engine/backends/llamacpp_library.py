"""What every llama.cpp engine in the process shares: the library's one-time set-up, its log routed
to Python's logging, and the small records a backend keeps (a session's sequence, the pool's size)."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import threading
from dataclasses import dataclass, field
from typing import Iterator, Optional

import llama_cpp as lc

from . import llamacpp_positions as positions
from .llamacpp_positions import Place

log = logging.getLogger("engine.backends.llamacpp")

POOL_SESSIONS = 4
"""Default pool: this many sessions filled to max_context (within the memory budget). Sessions share
it, so many short conversations fit where only four full ones would."""
POOL_STEP = 256
"""llama.cpp pads a context's cell count to a multiple of this."""
CACHE_GGML_TYPES = {"f16": lc.GGML_TYPE_F16, "q8_0": lc.GGML_TYPE_Q8_0, "q4_0": lc.GGML_TYPE_Q4_0}
"""EngineConfig.cache_type_k/_v -> llama.cpp's element type (engine/kv_cache_type.py has their sizes)."""
DECODE_ERRORS = {1: "no room in the KV pool", 2: "aborted", -1: "invalid batch"}
_init_lock = threading.Lock()
_initialized = False


# ggml's log levels (ggml.h: 1 debug, 2 info, 3 warn, 4 error, 5 continuation). llama-cpp-python's
# own callback maps an older numbering (its "error" is today's warning), so it is replaced: llama.cpp's
# errors reach this module's logger as errors, the rest (e.g. "n_ctx_per_seq < n_ctx_train", which
# does not apply to a unified pool) at info level and below.
_LOG_LEVELS = {1: logging.DEBUG, 2: logging.DEBUG, 3: logging.INFO, 4: logging.ERROR}


GPU_INIT_ERRORS: list[str] = []
"""What a GPU backend said when it could not start (ggml's CUDA: "failed to initialize CUDA: CUDA driver
version is insufficient for CUDA runtime version"): the reason a GPU build runs on the CPU, for the
placement's words. Filled by the log callback, which is set before the backends register."""
_GPU_INIT = ("failed to initialize", "no CUDA-capable device", "driver version is insufficient", "No devices found")


_said = threading.local()


@contextlib.contextmanager
def errors_said() -> Iterator[list[str]]:
    """The error lines llama.cpp logs on this thread meanwhile: a failed load returns only NULL, and
    its reason is in its log ("invalid magic characters", "unknown model architecture")."""
    lines: list[str] = []
    _said.lines = lines
    try:
        yield lines
    finally:
        _said.lines = None


@lc.llama_log_callback
def _log_callback(level: int, text: bytes, user_data) -> None:
    severity = _LOG_LEVELS.get(level, logging.DEBUG)
    line = text.decode(errors="replace").rstrip()
    lines = getattr(_said, "lines", None)
    if lines is not None and severity >= logging.ERROR and line:
        lines.append(line)
    if any(sign in line for sign in _GPU_INIT) and line not in GPU_INIT_ERRORS:
        GPU_INIT_ERRORS.append(line)
    if log.isEnabledFor(severity):
        log.log(severity, "llama.cpp: %s", line)


def init_library() -> None:
    """llama_backend_init once per process (it is process-wide; never freed while engines may run)."""
    global _initialized
    with _init_lock:
        if not _initialized:
            lc.llama_log_set(_log_callback, ctypes.c_void_p(0))
            lc.llama_backend_init()
            _initialized = True


@dataclass
class Seq:
    """One session's state: its sequence id, how many tokens it holds and, where they are not one
    position each, where its images sit (llamacpp_positions.py)."""

    id: int
    n_past: int = 0
    """Tokens held, one cell each (an image's embeddings too); its next position is `position()`."""
    places: list[Place] = field(default_factory=list)
    """Its M-RoPE images, in order; empty where every token takes one position."""

    def position(self, k: Optional[int] = None) -> int:
        """llama.cpp's position of token `k` (default: of the next token); ValueError inside an image."""
        return positions.position(self.places, self.n_past if k is None else k)

    def boundary(self, k: int) -> Optional[int]:
        """The position of token `k`, or None where it lies inside an image."""
        try:
            return self.position(k)
        except ValueError:
            return None

    def cell_end(self) -> int:
        """llama.cpp's `seq_pos_max` + 1 for what it holds."""
        return positions.cell_end(self.places, self.n_past)

    def keep(self, n: int) -> None:
        """Hold only the first `n` tokens (its cells were given up)."""
        self.n_past = n
        self.places = positions.before(self.places, n)


@dataclass(frozen=True)
class Pool:
    """What the context was sized for, in tokens and bytes (read by the worker's capacity)."""

    tokens: int
    bytes_per_token: int
    max_sessions: int
    max_context: int

    @property
    def budget(self) -> int:
        return self.tokens * self.bytes_per_token

    @property
    def per_session(self) -> int:
        return self.max_context * self.bytes_per_token
