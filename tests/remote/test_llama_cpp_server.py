"""The remote engine against llama.cpp's own OpenAI server (`python -m llama_cpp.server`, from the
llama-cpp-python package) on the bundled GGUF. Skipped where that package is not installed; see
docs/remote.md for how to run it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("llama_cpp.server")

from engine import RemoteEngine, SamplingParams  # noqa: E402
from engine.models.sources import bundled_gguf  # noqa: E402
from engine.remote import RemoteError  # noqa: E402
from tests.remote.serving import free_port  # noqa: E402


@pytest.fixture(scope="module")
def llama_cpp_url():
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_gguf("smollm2-135m-instruct")),
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "1024"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(240):  # it prints nothing we can wait on reliably; poll /v1/models instead
            try:
                RemoteEngine.connect(url).close()
                break
            except RemoteError:
                if process.poll() is not None:
                    pytest.fail("llama_cpp.server exited at start")
                time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        process.wait(30)


def test_streams_and_stops_through_llama_cpp_server(llama_cpp_url):
    with RemoteEngine.connect(llama_cpp_url) as engine, engine.open_session() as session:
        chunks = list(session.chat([{"role": "user", "content": "What is the capital of France?"}],
                                   SamplingParams(temperature=0, max_tokens=24)))
        assert "".join(c.text for c in chunks).strip() and chunks[-1].finish_reason in ("stop", "length")
        stream = session.chat([{"role": "user", "content": "Tell me a long story."}],
                              SamplingParams(temperature=0, max_tokens=500))
        next(stream)
        session.cancel()
        assert list(stream)[-1].finish_reason == "cancelled"
