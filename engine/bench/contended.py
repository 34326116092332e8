"""Decode speed beside a busy neighbour (`python -m engine bench --contended`).

Two figures, each with its neighbour started and stopped here:
- `decode_tok_s_contended`: one session decoding while a CPU-bound process (a Python busy loop)
  runs pinned to one of this process's cores (Linux; elsewhere unpinned);
- `decode_tok_s_two_procs`: two engines in two processes decoding at once; the slower of the two.
Each is to be read against the quiet `decode_tok_s` of the same run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from typing import Iterator

BUSY_LOOP = ("import os, sys\n"
             "while os.getppid() == int(sys.argv[1]):\n"
             "    for _ in range(1_000_000): pass\n")
"""Spins until stopped, or until the bench that started it (its pid the argument) is gone: a bench killed
before its `finally` (SIGTERM, SIGKILL, a crashed test worker) left a `while True: pass` taking a core
for good (one ran for over an hour beside the test suite)."""


def busy_loop_command() -> list[str]:
    """The busy neighbour's command line: it ends by itself once this process is gone."""
    return [sys.executable, "-c", BUSY_LOOP, str(os.getpid())]


@contextmanager
def busy_neighbour() -> Iterator[subprocess.Popen]:
    """A CPU-bound process on this process's last usable core, stopped on exit."""
    proc = subprocess.Popen(busy_loop_command())
    try:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(proc.pid, {max(os.sched_getaffinity(0))})
        time.sleep(0.5)  # let it take its core before measuring
        yield proc
    finally:
        proc.kill()
        proc.wait()


def decode_contended(engine, tokens: int, measure_decode) -> float:
    with busy_neighbour():
        return measure_decode(engine, tokens)


def decode_two_procs(model: str, backend: str, dtype: str, tokens: int) -> float:
    """Slower decode tok/s of two engine processes decoding at the same moment."""
    # The child's own script joins the two modules: engine.bench.command imports this one, not the reverse.
    code = ("from engine.bench.measure import measure_decode; from engine.bench.contended import child; "
            f"child({model!r}, {backend!r}, {dtype!r}, {tokens}, measure_decode)")
    env = dict(os.environ)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env) for _ in range(2)]
    try:
        for p in procs:  # both loaded and warmed up before either starts
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError("a decoding process failed to start")
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        rates = [json.loads(p.stdout.readline())["decode_tok_s"] for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return min(rates)


def child(model: str, backend: str, dtype: str, tokens: int, measure_decode) -> None:
    """One of the two decoding processes: load, warm up, say ready, decode on "go", print the rate."""
    from .. import Engine, EngineConfig

    with Engine.load(model, EngineConfig(backend=backend, dtype=dtype)) as engine:
        measure_decode(engine, 8)
        print("ready", flush=True)
        sys.stdin.readline()
        print(json.dumps({"decode_tok_s": measure_decode(engine, tokens)}), flush=True)
