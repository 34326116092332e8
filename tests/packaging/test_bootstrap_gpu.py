"""bootstrap.py on a machine with an NVIDIA GPU: which llama.cpp build it tries, in what order, and
what it keeps when one fails; pip and the GPU replaced by stand-ins (tests/packaging/bootstrap_stand_ins.py)."""

from __future__ import annotations

import json
from pathlib import Path

import bootstrap
import gpu_detect  # bootstrap put packaging/ on sys.path
import llama_source
from tests.packaging.bootstrap_stand_ins import BUILT, LLAMA, PIP_FAILURE

CUDA_ARGS = f"{bootstrap.LLAMA_CPU_CMAKE_ARGS} -DGGML_CUDA=on -DGGML_CUDA_NO_VMM=ON -DCMAKE_CUDA_ARCHITECTURES=89-real"


def test_a_gpu_machine_gets_the_cuda_build_for_its_card_with_the_compiler_found(gpu_machine, capsys):
    root, pip = gpu_machine
    bootstrap.ensure_venv("")
    assert pip.llama_calls() == [([BUILT, "--no-cache-dir"], CUDA_ARGS)]
    env = pip.envs[-1]
    assert env["CUDACXX"] == "/usr/local/cuda-12.4/bin/nvcc" and env["CUDAToolkit_ROOT"] == "/usr/local/cuda-12.4"
    assert "CUDA for sm_89 with nvcc 12.4" in capsys.readouterr().out
    assert json.loads((root / ".venv" / "confab-llama").read_text()) == {
        "requirement": LLAMA, "cmake_args": CUDA_ARGS, "patches": llama_source.PATCH_ID, "ok": True}
    bootstrap.ensure_venv("")
    assert len(pip.llama_calls()) == 1, "built once"


def test_a_failed_cuda_build_falls_back_to_the_cpu_build_and_keeps_its_reason(gpu_machine, capsys):
    root, pip = gpu_machine
    pip.fails_with = "-DGGML_CUDA=on"
    bootstrap.ensure_venv("")
    assert [c for _, c in pip.llama_calls()] == [CUDA_ARGS, bootstrap.LLAMA_CPU_CMAKE_ARGS]
    err = capsys.readouterr().err
    assert "CMAKE_CXX_COMPILER not set" in err and "Trying the next build instead: this CPU's own" in err
    assert PIP_FAILURE in bootstrap.llama_log("cuda").read_text(), "the CUDA build's reason stays in its log"
    stamp = json.loads((root / ".venv" / "confab-llama").read_text())
    assert stamp["ok"] and stamp["cmake_args"] == bootstrap.LLAMA_CPU_CMAKE_ARGS
    bootstrap.ensure_venv("")  # `run` again: no new attempt at the failed CUDA build
    assert len(pip.llama_calls()) == 2
    pip.fails_with = ""
    bootstrap.main(["setup"])  # `setup` tries CUDA again; it builds now and replaces the CPU build
    assert pip.llama_calls()[-1] == ([BUILT, "--force-reinstall", "--no-deps", "--no-cache-dir"], CUDA_ARGS)
    assert json.loads((root / ".venv" / "confab-llama").read_text()) == {
        "requirement": LLAMA, "cmake_args": CUDA_ARGS, "patches": llama_source.PATCH_ID, "ok": True}


def test_a_cuda_build_that_finds_no_gpu_is_replaced_by_the_cpu_build(gpu_machine, capsys):
    root, pip = gpu_machine
    pip.gpu_seen = False  # e.g. a driver older than the toolkit: the library loads, the card does not answer
    bootstrap.ensure_venv("")
    assert [c for _, c in pip.llama_calls()] == [CUDA_ARGS, bootstrap.LLAMA_CPU_CMAKE_ARGS]
    assert pip.llama_calls()[1][0] == [BUILT, "--force-reinstall", "--no-deps", "--no-cache-dir"]
    assert "llama.cpp found no GPU with it" in capsys.readouterr().err
    assert json.loads((root / ".venv" / "confab-llama").read_text())["cmake_args"] == bootstrap.LLAMA_CPU_CMAKE_ARGS


def test_without_a_usable_nvcc_nvidias_toolkit_wheels_go_into_the_venv_first(gpu_machine, monkeypatch):
    root, pip = gpu_machine
    monkeypatch.setattr(gpu_detect, "cuda_compilers", lambda environ, venv: [])
    merged = []
    monkeypatch.setattr(bootstrap.cuda_wheels, "merge", lambda nvidia, into: merged.append((nvidia, into)))
    bootstrap.ensure_venv("")
    toolkit = root / ".venv" / "cuda-toolkit"
    wheels = [c for c, _ in pip.calls if "--target" in c]
    assert wheels == [["--upgrade", "--target", str(toolkit / "packages"),
                       "cuda-toolkit[nvcc,cudart,cublas,cccl,crt,nvvm]>=12.0,<12.5"]], "no newer than the driver runs"
    assert merged == [(toolkit / "packages" / "nvidia", toolkit)]
    assert pip.envs[-1]["CUDACXX"] == str(toolkit / "bin" / "nvcc")
    assert pip.llama_calls() == [([BUILT, "--no-cache-dir"], CUDA_ARGS)]


def test_the_users_own_cmake_args_win_on_a_gpu_machine(gpu_machine, monkeypatch):
    _, pip = gpu_machine
    monkeypatch.setenv("CMAKE_ARGS", "-DGGML_VULKAN=on")
    bootstrap.ensure_venv("")
    assert pip.llama_calls() == [([BUILT, "--no-cache-dir"], "-DGGML_VULKAN=on")]


def test_confab_llama_gpu_cpu_keeps_the_cpu_build(gpu_machine, monkeypatch):
    _, pip = gpu_machine
    monkeypatch.setenv("CONFAB_LLAMA_GPU", "cpu")
    bootstrap.ensure_venv("")
    assert pip.llama_calls() == [([BUILT, "--no-cache-dir"], bootstrap.LLAMA_CPU_CMAKE_ARGS)]


def test_ci_fails_only_when_no_build_at_all_succeeds(gpu_machine, monkeypatch):
    _, pip = gpu_machine
    monkeypatch.setenv("CONFAB_REQUIRE_LLAMA", "1")
    pip.fails_with = "-DGGML_CUDA=on"
    assert bootstrap.ensure_venv("")  # the CPU build is llama.cpp too: no SystemExit
    pip.llama_fails = True
    assert bootstrap.main(["setup"]) == 0  # CUDA retried (CI retries), failed; the CPU build stays and counts
    assert [c for _, c in pip.llama_calls()] == [CUDA_ARGS, bootstrap.LLAMA_CPU_CMAKE_ARGS, CUDA_ARGS]


def test_a_cuda_runtime_the_loader_cannot_find_is_linked_beside_the_library(gpu_machine, monkeypatch, capsys):
    root, pip = gpu_machine
    pip.missing_runtime = True  # e.g. NVIDIA's wheels in .venv: not where the system's loader looks
    linked = []

    def link(toolkit, folder):
        linked.append((toolkit, folder))
        pip.missing_runtime = False
        return ["libcublas.so.13", "libcudart.so.13"]

    monkeypatch.setattr(bootstrap.cuda_wheels, "link_runtime", link)
    bootstrap.ensure_venv("")
    assert linked == [(Path("/usr/local/cuda-12.4"), Path("/venv/site-packages/llama_cpp/lib"))]
    assert "linked libcublas.so.13, libcudart.so.13 from /usr/local/cuda-12.4 beside llama.cpp" in capsys.readouterr().out
    assert [c for _, c in pip.llama_calls()] == [CUDA_ARGS], "the CUDA build stays"


def test_a_cuda_build_that_does_not_load_says_so_and_the_cpu_build_follows(gpu_machine, monkeypatch, capsys):
    root, pip = gpu_machine
    pip.missing_runtime = True
    monkeypatch.setattr(bootstrap.cuda_wheels, "link_runtime", lambda toolkit, folder: [])  # nothing to link
    bootstrap.ensure_venv("")
    err = capsys.readouterr().err
    assert "libcublas.so.13: cannot open shared object file" in err
    assert "CUDA for sm_89 with nvcc 12.4: built, but it does not load" in err
    assert "Trying the next build instead: this CPU's own instructions" in err and "C/C++ compiler" not in err
    assert "built, but it does not load" in bootstrap.llama_log("cuda").read_text()
    assert [c for _, c in pip.llama_calls()] == [CUDA_ARGS, bootstrap.LLAMA_CPU_CMAKE_ARGS]
