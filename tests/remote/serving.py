"""Run `python -m engine serve` in a subprocess on a loopback port, as a user would on another
machine, and stop it (or kill it mid-reply) from a test."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServeProcess:
    """One `engine serve` subprocess. `start()` waits until it prints its URL."""

    def __init__(self, model: str, *, port: Optional[int] = None, api_key: Optional[str] = None,
                 max_context: int = 1024, backend: str = "torch") -> None:
        self.model = model
        self.backend = backend
        self.port = port or free_port()
        self.api_key = api_key
        self.max_context = max_context
        self.process: Optional[subprocess.Popen] = None
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "ServeProcess":
        command = [sys.executable, "-m", "engine", "serve", "--model", self.model, "--backend", self.backend,
                   "--max-context", str(self.max_context), "--port", str(self.port)]
        command += ["--dtype", "float32"] if self.backend == "torch" else []
        if self.api_key:
            command += ["--api-key", self.api_key]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        if "serving" not in line:
            self.kill()
            raise RuntimeError(f"engine serve did not start: {line!r}")
        return self

    def kill(self) -> None:
        """SIGKILL: the server vanishes mid-whatever, as when a machine or network goes away."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
