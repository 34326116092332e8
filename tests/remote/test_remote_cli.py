"""`python -m engine chat --server URL`: the terminal chat against a model served elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.remote.serving import ROOT, free_port


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "engine", *args], input=stdin, capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=env)


def test_chat_with_a_server_streams_replies_and_keeps_context(bundled_server):
    out = run("chat", "--server", bundled_server.url, "--temperature", "0", "--max-tokens", "30",
              stdin="What is the capital of France?\nAnd of Italy?\n/quit\n")
    assert out.returncode == 0, out.stderr
    assert "Paris" in out.stdout and "Rome" in out.stdout
    assert "remote" in out.stderr and "tok/s" in out.stderr


def test_chat_with_no_server_there_says_so():
    out = run("chat", "--server", f"http://127.0.0.1:{free_port()}/v1")
    assert out.returncode == 1
    assert "error: connection refused" in out.stderr


def test_chat_with_an_unknown_model_lists_the_served_ones(bundled_server):
    out = run("chat", "--server", bundled_server.url, "--model", "gpt-9")
    assert out.returncode == 1
    assert "no model 'gpt-9'" in out.stderr and "smollm2" in out.stderr
