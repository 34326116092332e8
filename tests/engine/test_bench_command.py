"""`python -m engine bench` prints what each bench measured, as a table or JSON, and says an error in
one line with exit status 1, whichever bench ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from engine import ModelLoadError
from engine.__main__ import main
from engine.bench import command


@pytest.fixture
def torch_bench(monkeypatch):
    """bench on torch alone, its figures made up: the printing is what is under test."""
    printed: list[dict] = []
    monkeypatch.setattr(command, "_backend_names", lambda asked, model: ["torch"])
    monkeypatch.setattr(command, "bench_backend", lambda *a, **k: {"backend": "torch", "decode_tok_s": 1.0})
    monkeypatch.setattr(command, "print_table", printed.append)
    return printed


def test_a_torch_bench_prints_its_table(torch_bench):
    # the table printer was shadowed by the repetition bench's import inside run_bench: UnboundLocalError
    assert main(["bench", "--backend", "torch"]) == 0
    assert torch_bench == [{"backend": "torch", "decode_tok_s": 1.0}]


def test_a_torch_bench_prints_one_json_line(torch_bench, capsys):
    assert main(["bench", "--backend", "torch", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"backend": "torch", "decode_tok_s": 1.0}


def test_a_bench_that_fails_says_why_in_one_line(monkeypatch, capsys):
    from engine.bench import agents

    def fails(*a, **k):
        raise ModelLoadError("no such model: nowhere.gguf")

    monkeypatch.setattr(agents, "agents_figures", fails)
    assert main(["bench", "--agents", "--json"]) == 1
    out = capsys.readouterr()
    assert (out.out, out.err.strip()) == ("", "error: no such model: nowhere.gguf")


def test_the_agents_bench_runs_the_eight_sessions_its_help_names(monkeypatch):
    from engine.bench import agents

    asked = []
    monkeypatch.setattr(agents, "agents_figures", lambda model, say, sessions, *a: asked.append(sessions) or {})
    assert main(["bench", "--agents", "--json"]) == 0
    assert main(["bench", "--agents", "--json", "--sessions", "4"]) == 0
    assert asked == [8, 4]  # it ran 16, the largest of the decode bench's default counts



def test_the_busy_neighbour_ends_when_the_bench_that_started_it_is_killed():
    root = Path(__file__).resolve().parents[2]
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, time\n"
                               "from engine.bench.contended import busy_loop_command\n"
                               "p = subprocess.Popen(busy_loop_command())\n"
                               "print(p.pid, flush=True)\ntime.sleep(60)"], stdout=subprocess.PIPE, text=True,
                              cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    busy = int(parent.stdout.readline())
    parent.kill()  # no `finally` runs in the bench: the loop must notice on its own
    parent.wait()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _running(busy):
            time.sleep(0.1)
        assert not _running(busy), "the busy loop outlived the bench that started it"
    finally:
        if _running(busy):
            psutil.Process(busy).kill()


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
