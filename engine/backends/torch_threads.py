"""Thread count and OpenMP wait policy for torch on the CPU, chosen so a busy neighbour slows decode
in proportion instead of collapsing it.

Why: torch's CPU kernels run on OpenMP threads that, by libgomp's default, spin for a while at the
end of every parallel region waiting for the next one. A decode step is hundreds of tiny regions, so
beside another CPU-bound program (or a second torch program, whose threads spin too) the spinning
threads steal the very core the straggler needs: bfloat16 decode fell from ~15 to ~0.5 tok/s on two
cores. With the passive policy an idle OpenMP thread sleeps at once, so the cores go to whoever has
work; the price when the machine is quiet is a futex wake per region (a few percent of decode).

The policy is read by libgomp once, when torch loads it, so it can only be set before the first
`import torch` in the process. `prepare_environment()` runs when the engine package is imported
(engine/backends/__init__.py) and only fills in variables the user has not set
(`os.environ.setdefault`): OMP_WAIT_POLICY=PASSIVE. If torch was already imported by the host program,
nothing is changed and the host's choice stands (logged at debug level).

Threads: one intra-op thread per core this process may run on (its CPU affinity), capped at the
physical core count (hyper-threads share one core's vector units and only add contention);
`CONFAB_THREADS=N` overrides it. The count is applied when a torch backend is created.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Optional

log = logging.getLogger(__name__)

WAIT_POLICY = {"OMP_WAIT_POLICY": "PASSIVE"}
"""Environment the engine fills in (setdefault) before torch loads libgomp."""


def prepare_environment() -> bool:
    """Set the OpenMP wait policy if torch is not loaded yet; True when it could still take effect."""
    if "torch" in sys.modules:
        log.debug("torch was imported before the engine: its OpenMP wait policy is left as it is")
        return False
    for key, value in WAIT_POLICY.items():
        os.environ.setdefault(key, value)
    return True


def thread_count(env: Optional[str] = None, asked: Optional[int] = None) -> int:
    """Intra-op threads to use: `asked` (EngineConfig.threads) if given, else CONFAB_THREADS if set,
    else the usable physical cores."""
    if asked is not None:
        return asked
    env = os.environ.get("CONFAB_THREADS") if env is None else env
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"CONFAB_THREADS must be a positive integer, not {env!r}")
        return n
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(usable, _physical_cores() or usable))


def _physical_cores() -> Optional[int]:
    try:
        import psutil

        return psutil.cpu_count(logical=False)
    except Exception:  # psutil missing or unable to tell: trust the affinity count
        return None


def apply_threads(asked: Optional[int] = None) -> int:
    """Set torch's intra-op thread count (process-wide, as torch's setting is); return it."""
    import torch

    n = thread_count(asked=asked)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n
