"""`python -m engine serve`: safe by default, prints its URL, stops cleanly on Ctrl+C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from engine.__main__ import main
from engine.server import UnsafeBindError, check_bind

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("address", ["0.0.0.0", "192.168.1.5", "::"])
def test_binding_beyond_loopback_without_a_key_is_refused(address, capsys):
    assert main(["serve", "--host", address]) == 2
    err = capsys.readouterr().err
    assert "--api-key" in err and address in err
    with pytest.raises(UnsafeBindError):
        check_bind(address, None)
    check_bind(address, "secret")  # with a key it may


@pytest.mark.parametrize("address", ["127.0.0.1", "localhost", "::1"])
def test_loopback_needs_no_key(address):
    check_bind(address, None)


def test_serve_prints_url_answers_and_stops_on_ctrl_c(tiny_models):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "engine", "serve", "--model", str(tiny_models["llama"]), "--backend", "torch",
         "--dtype", "float32", "--max-context", "256", "--port", "0"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert "serving" in line and "http://127.0.0.1:" in line, process.stderr.read()
        url = line.split(" at ")[-1].strip()
        reply = httpx.post(f"{url}/chat/completions", timeout=120, json={
            "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "temperature": 0})
        assert reply.status_code == 200 and reply.json()["usage"]["completion_tokens"] >= 1
        process.send_signal(signal.SIGINT)
        assert process.wait(60) == 0
        assert "stopped" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
