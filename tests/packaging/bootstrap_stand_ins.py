"""Stand-ins for bootstrap.py's tests (tests/packaging/test_bootstrap*.py): pip replaced by a recorder
that answers as pip would, so no install or build runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import bootstrap


ROOT = Path(__file__).resolve().parents[2]
REAL_RUN = subprocess.run  # bootstrap's `subprocess` is this module: the fixture patches run on both
PIP_FAILURE = "\n".join([
    "  error: subprocess-exited-with-error",
    "  × Building wheel for llama-cpp-python (pyproject.toml) did not run successfully.",
    "  *** CMake configuration failed",
    "  CMake Error: CMAKE_CXX_COMPILER not set, after EnableLanguage",
    "  ERROR: Failed building wheel for llama-cpp-python",
])


class Pip:
    """Stands in for pip: records each pip command and its CMAKE_ARGS (and the build's other variables);
    the llama.cpp build fails while `llama_fails` is set (or only the builds whose CMAKE_ARGS hold
    `fails_with`), and a GPU build finds its GPU while `gpu_seen` is set. Reading pyproject.toml runs
    for real (on this Python)."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str | None]] = []
        self.envs: list[dict] = []
        self.llama_fails = False
        self.fails_with = ""
        self.gpu_seen = True
        self.missing_runtime = False
        self.sources: list[tuple[str, Path]] = []

    def __call__(self, command, cwd=None, check=False, env=None, capture_output=False, text=False):
        command = [str(c) for c in command]
        if command[1] == "-c" and command[2] == bootstrap._SEES_GPU:
            if self.missing_runtime:
                return subprocess.CompletedProcess(command, 1, "", "RuntimeError: Failed to load shared library "
                                                   "'libllama.so': libcublas.so.13: cannot open shared object file")
            return subprocess.CompletedProcess(command, 0 if self.gpu_seen else 3, "", "" if self.gpu_seen else
                                               "ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device")
        if command[1] == "-c" and command[2] == bootstrap._LIBRARY_FOLDER:
            return subprocess.CompletedProcess(command, 0, "/venv/site-packages/llama_cpp/lib\n", "")
        if command[1] == "-c":
            return REAL_RUN([sys.executable, *command[1:]], check=check, capture_output=capture_output, text=text)
        return self.pip(command, env)

    def pip(self, command: list[str], env) -> subprocess.CompletedProcess:
        assert command[1:5] == ["-m", "pip", "install", "--disable-pip-version-check"]
        args = [a for a in command[5:] if a not in ("-q", "-v")]
        cmake_args = (env or {}).get("CMAKE_ARGS")
        self.calls.append((args, cmake_args))
        self.envs.append(dict(env or {}))
        llama = any("llama-cpp-python" in c for c in command)
        failed = llama and (self.llama_fails or bool(self.fails_with and self.fails_with in (cmake_args or "")))
        return subprocess.CompletedProcess(command, 1 if failed else 0, "", PIP_FAILURE if failed else "")

    def build(self, command, env, log, label, estimate_min, out=None, cwd=None):
        """Stands in for build_progress.run_with_progress (the llama.cpp build); writes the log as it does."""
        done = self.pip([str(c) for c in command], env)
        log.write_text(done.stderr)
        return done.returncode, done.stderr

    def llama_calls(self) -> list[tuple[list[str], str | None]]:
        return [c for c in self.calls if any("llama-cpp-python" in a for a in c[0])]

    def source(self, requirement: str, folder: Path, python: str) -> Path:
        """Stands in for llama_source.patched_source: the folder pip is then asked to build."""
        self.sources.append((requirement, folder))
        assert not folder.exists(), "an earlier source is cleared first"
        return Path(f"patched {requirement}")


LLAMA = "llama-cpp-python==0.3.16"
BUILT = f"patched {LLAMA}"  # the source pip builds: the pinned sdist with Confab's patches
