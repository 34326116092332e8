"""llama.cpp's compute threads that sleep, rather than spin, while they wait for the next token.

Why: ggml's CPU thread pool polls for new work between graphs by default (`poll` 50). On a machine
where another program wants the same cores, the polling threads steal the time slices the others
need, and decode collapses: the bundled model fell to 0.5-2 tok/s beside a busy neighbour on two
cores, against 7.5 tok/s with `poll` 0 in the same process, the same minute. With `poll` 0 an idle
thread sleeps until the next graph is queued: one wake per graph, nothing per operation (the
barriers inside a graph still spin), so a quiet machine loses nothing measurable. The same lesson as
torch's OMP_WAIT_POLICY=PASSIVE (engine/backends/torch_threads.py).

llama-cpp-python 0.3.16 does not bind `ggml_threadpool_new` / `llama_attach_threadpool`, so they are
called here through ctypes on the libraries it ships; where that fails, llama.cpp's own pool stays.
"""

from __future__ import annotations

import ctypes
import logging
import sys
from typing import Optional

import llama_cpp as lc

log = logging.getLogger(__name__)
GGML_MAX_N_THREADS = 512


class _ThreadpoolParams(ctypes.Structure):
    """ggml.h's struct ggml_threadpool_params."""

    _fields_ = [("cpumask", ctypes.c_bool * GGML_MAX_N_THREADS), ("n_threads", ctypes.c_int),
                ("prio", ctypes.c_int), ("poll", ctypes.c_uint32), ("strict_cpu", ctypes.c_bool),
                ("paused", ctypes.c_bool)]


def _ggml_cpu() -> Optional[ctypes.CDLL]:
    from .llamacpp_devices import library_folder

    names = {"win32": "ggml-cpu.dll", "darwin": "libggml-cpu.dylib"}
    path = library_folder() / names.get(sys.platform, "libggml-cpu.so")
    lib = ctypes.CDLL(str(path)) if path.is_file() else None
    if lib is not None:
        lib.ggml_threadpool_new.restype = ctypes.c_void_p
        lib.ggml_threadpool_new.argtypes = [ctypes.POINTER(_ThreadpoolParams)]
        lib.ggml_threadpool_free.argtypes = [ctypes.c_void_p]
    return lib


def attach_sleeping_pool(ctx, threads: int) -> Optional[tuple[ctypes.CDLL, int]]:
    """Give `ctx` a pool of `threads` threads that do not poll; (library, pool) to free after the
    context, or None where the library's own pool stays (logged)."""
    try:
        cpu = _ggml_cpu()
        if cpu is None:
            log.debug("no ggml-cpu library beside llama-cpp-python: llama.cpp's own thread pool stays")
            return None
        params = _ThreadpoolParams(n_threads=threads, poll=0)
        pool = cpu.ggml_threadpool_new(ctypes.byref(params))
        if not pool:
            return None
        attach = lc.llama_cpp._lib.llama_attach_threadpool
        attach.argtypes, attach.restype = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p], None
        attach(ctx, pool, pool)
        return cpu, pool
    except (OSError, AttributeError) as e:
        log.debug("could not attach a non-polling thread pool (%s): llama.cpp's own stays", e)
        return None


def free_pool(handle: Optional[tuple[ctypes.CDLL, int]]) -> None:
    """Free a pool from attach_sleeping_pool, after the context that used it."""
    if handle is not None:
        cpu, pool = handle
        cpu.ggml_threadpool_free(pool)
