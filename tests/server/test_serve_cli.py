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


def test_serve_prints_url_and_context_answers_and_stops_on_ctrl_c(tiny_models):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(  # --context max: the tiny model's trained 4,096 tokens
        [sys.executable, "-m", "engine", "serve", "--model", str(tiny_models["llama"]), "--backend", "torch",
         "--dtype", "float32", "--context", "max", "--max-sessions", "2", "--port", "0"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert "serving" in line and "http://127.0.0.1:" in line, process.stderr.read()
        url = line.split(" at ")[-1].strip()
        context = process.stdout.readline()
        assert context.startswith("context 4,096 tokens a session · ") and "MiB each at full length" in context
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


@pytest.mark.parametrize("given, expected", [("8192", 8192), ("32,768", 32768), ("MAX", "max"), ("16", 16)])
def test_context_takes_tokens_or_max(given, expected):
    from engine.server.cli import context_size

    assert context_size(given) == expected


@pytest.mark.parametrize("given, said", [("lots", "neither a number of tokens nor 'max'"), ("8", "too small")])
def test_a_bad_context_is_refused_in_words(given, said, capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--context", given])
    assert said in capsys.readouterr().err


def test_context_max_is_the_models_trained_length_or_a_clear_refusal(tiny_models, tiny_q4_gguf, tmp_path, capsys):
    import json
    import shutil

    from engine.models.estimate import trained_context

    assert trained_context(str(tiny_models["llama"])) == 4096  # max_position_embeddings
    assert trained_context(str(tiny_q4_gguf)) == 2048  # llama.context_length
    silent = tmp_path / "silent"
    shutil.copytree(tiny_models["llama"], silent)
    config = json.loads((silent / "config.json").read_text())
    del config["max_position_embeddings"]
    (silent / "config.json").write_text(json.dumps(config))
    assert main(["serve", "--model", str(silent), "--context", "max", "--port", "0"]) == 1
    assert "does not say how long a context it was trained for: give --context TOKENS" in capsys.readouterr().err
