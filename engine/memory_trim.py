"""Freed memory handed back to the system when an engine goes idle (glibc's `malloc_trim`).

Why: a reply allocates and frees large buffers (a session's K/V state read out to park or save it,
logits, prompt batches). glibc keeps freed heap memory for reuse instead of returning it, so the
app's resident memory climbed with ordinary use: 863 -> 956 MiB over 200 messages on the bundled
model (llama.cpp, Linux), flat at 863 MiB when trimmed after each reply: no leak, only memory never
given back (a user saw 908 MiB -> 1.4 GiB in 40 minutes). Trimming costs milliseconds, so it runs
once per busy spell, when the engine has nothing left to do. macOS and Windows return such memory on
their own; musl has no malloc_trim: there it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from typing import Callable, Optional


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Optional[Callable[[int], int]]:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def give_back_freed_memory() -> bool:
    """Return the heap's free pages to the system; False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
