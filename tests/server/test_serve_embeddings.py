"""`python -m engine serve` serves the bundled embedding model beside the chat model by default,
loaded on first use; `--embedding-model none` serves none; a wrong one is refused before anything loads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from engine.__main__ import main
from engine.embeddings import DEFAULT_EMBEDDING_MODEL
from engine.server.cli import embedding_model

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_embedding_model_is_refused_before_the_chat_model_loads(tmp_path, capsys):
    assert main(["serve", "--model", str(tmp_path / "no-chat-model"), "--embedding-model",
                 str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert "--embedding-model" in err and "does not exist" in err and "loading" not in err


def test_none_serves_no_embeddings():
    assert embedding_model("none") is None
    embedder = embedding_model(DEFAULT_EMBEDDING_MODEL)
    assert embedder is not None and not embedder.loaded  # located, not loaded
    embedder.close()


def test_serve_answers_embeddings_by_default(tiny_models):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "engine", "serve", "--model", str(tiny_models["llama"]), "--backend", "torch",
         "--dtype", "float32", "--max-context", "256", "--port", "0"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert "serving" in line, process.stderr.read()
        url = line.split(" at ")[-1].strip()
        assert process.stdout.readline().startswith("context ")  # what the context costs
        assert process.stdout.readline().startswith("prompt cache ")  # where prompts are cached (or why not)
        assert DEFAULT_EMBEDDING_MODEL in process.stdout.readline()  # then embeddings
        models = httpx.get(f"{url}/models", timeout=60).json()["data"]
        assert [m["id"] for m in models] == [str(tiny_models["llama"]), DEFAULT_EMBEDDING_MODEL]
        assert models[1]["embedding"]["loaded"] is False
        reply = httpx.post(f"{url}/embeddings", timeout=120, json={"model": DEFAULT_EMBEDDING_MODEL, "input": "hi"})
        assert reply.status_code == 200 and len(reply.json()["data"][0]["embedding"]) == 384
        assert httpx.get(f"{url}/models", timeout=60).json()["data"][1]["embedding"]["loaded"] is True
        process.send_signal(signal.SIGINT)
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
