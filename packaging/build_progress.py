"""Run a long build with one line of progress and an estimate, its whole output kept in a log.

    code, output = run_with_progress(command, env, log, "llama.cpp (CUDA for sm_89)", estimate_min=12)

A CUDA build of llama.cpp takes many minutes; pip shows nothing while it runs unless asked to be
verbose, and then far too much. Here pip runs verbose (`-v`), every line goes to the log, and what
the user sees is the count of CMake's build steps (ninja's "[137/412]" lines) with the time left,
estimated from the steps done so far (before there are enough, from the plan's estimate). On a
terminal the line is redrawn in place; elsewhere (CI logs) a line is printed every tenth of the way.
Standard library only.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Mapping, Optional, TextIO

_STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]")


def step_of(line: str) -> Optional[tuple[int, int]]:
    """(done, total) from a ninja status line ("[137/412] Building CUDA object …"), else None."""
    match = _STEP.match(line)
    return (int(match.group(1)), int(match.group(2))) if match else None


def minutes_left(done: int, total: int, elapsed_s: float, estimate_min: float) -> float:
    """Time left: from the pace so far once a twentieth of the steps is done, else the estimate less
    the time already spent (never below a minute's tenth)."""
    if total and done >= max(3, total // 20):
        return max(0.1, elapsed_s / done * (total - done) / 60)
    return max(0.1, estimate_min - elapsed_s / 60)


def progress_line(label: str, done: int, total: int, elapsed_s: float, estimate_min: float) -> str:
    steps = f"{done}/{total} steps" if total else "configuring"
    return (f"building {label}: {steps}, {elapsed_s / 60:.0f} min in, "
            f"about {minutes_left(done, total, elapsed_s, estimate_min):.0f} min left")


def run_with_progress(command: list[str], env: Mapping[str, str], log: Path, label: str,
                      estimate_min: float, out: Optional[TextIO] = None, cwd: Optional[Path] = None) -> tuple[int, str]:
    """Run `command`; (exit code, its whole output). The output is also written to `log` as it comes."""
    out = out or sys.stdout
    tty = out.isatty()
    began = time.monotonic()
    shown_tenth, last_draw, done, total = -1, 0.0, 0, 0
    lines: list[str] = []
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w", encoding="utf-8", errors="replace", buffering=1) as keep:  # a line at a time: readable as it builds
        process = subprocess.Popen(command, cwd=cwd, env=dict(env), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace")
        assert process.stdout is not None
        print(f"building {label}: about {estimate_min:.0f} min; every line of it in {log}", file=out, flush=True)
        for line in process.stdout:
            keep.write(line)
            lines.append(line)
            if (step := step_of(line)) is not None:
                done, total = step
            now = time.monotonic()
            text = progress_line(label, done, total, now - began, estimate_min)
            if tty and now - last_draw >= 1:
                out.write("\r" + text.ljust(100)[:100])
                out.flush()
                last_draw = now
            elif not tty and total and done * 10 // total > shown_tenth:
                shown_tenth = done * 10 // total
                print(text, file=out, flush=True)
        code = process.wait()
    if tty:
        out.write("\r" + " " * 100 + "\r")
    print(f"{label}: {'built' if code == 0 else 'failed'} in {(time.monotonic() - began) / 60:.1f} min",
          file=out, flush=True)
    return code, "".join(lines)
