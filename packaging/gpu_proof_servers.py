"""llama.cpp's own `llama-server -np 8` (the same CUDA build) beside Confab's server, measured by
`python -m engine bench --vs-server` (engine/bench/vs_server.py): the same client for both, one and
eight clients, agent-shaped prompts cold and with their prefix known."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CONTEXT = 4608
"""Per slot: the 4,000-token prompt and its reply."""


def compare(llama_server: Path, model: Path, env: dict, proof, name: str) -> dict:
    """Start llama-server on `model` with every layer on the GPU, run the bench step against it, stop it."""
    from engine.bench.vs_server import free_port, stop, wait_ready  # importable once the proof's environment is set

    port = free_port()
    log = open(proof.results / f"llama-server-{name}.log", "w")
    server = subprocess.Popen([str(llama_server), "-m", str(model), "-np", "8", "-c", str(8 * CONTEXT), "-ngl", "999",
                               "-fa", "--no-webui", "--host", "127.0.0.1", "--port", str(port)],
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_ready(f"{url}/v1", server, limit_s=180):
            return {"error": "llama-server did not start (see its log)"}
        _, out = proof.step(f"vs-server-{name}", [sys.executable, "-m", "engine", "bench", "--vs-server", f"{url}/v1",
                                                  "--model", model, "--sessions", "1,8", "--tokens", "128",
                                                  "--prompt-tokens", "1500,4000", "--json"], env, 300)
        return proof.last_json(out)
    finally:
        stop(server)
        log.close()
