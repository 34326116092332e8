"""Which llama.cpp build a machine gets (packaging/llama_build_plan.py, gpu_detect.py), decided from a
stand-in `nvidia-smi` and `nvcc` on PATH, as on a machine with the card: the card, its compute
capability and driver, the compiler chosen or passed over and why, and the exact CMAKE_ARGS."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bootstrap  # noqa: F401 - puts packaging/ on sys.path
import gpu_detect
import llama_build_plan
from llama_build_plan import CPU_FLAGS, CUDA_FLAGS

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the stand-in tools are shell scripts")

H100 = "NVIDIA H100 80GB HBM3, 9.0, 81559, 580.159.04"
RTX4070 = "NVIDIA GeForce RTX 4070, 8.9, 12282, 550.54.14"
RTX3090 = "NVIDIA GeForce RTX 3090, 8.6, 24576, 550.54.14"
GTX1080 = "NVIDIA GeForce GTX 1080, 6.1, 8192, 580.159.04"


def fake_nvidia_smi(folder: Path, rows: list[str], cuda: str, compute_cap: bool = True) -> None:
    """An nvidia-smi that lists `rows` ("name, cc, MiB, driver") for the query and says `cuda` in its
    header; without `compute_cap` it refuses that field, as drivers before 510 do."""
    plain = "\n".join(", ".join(r.split(", ")[i] for i in (0, 2, 3)) for r in rows)
    query = "\n".join(rows) if compute_cap else ""
    refuse = "" if compute_cap else 'echo \'Field "compute_cap" is not a valid field to query.\'; exit 2'
    script = f"""#!/bin/sh
case "$1" in
  --query-gpu=name,compute_cap*) {refuse}
     printf '%s\\n' "{query}";;
  --query-gpu=*) printf '%s\\n' "{plain}";;
  *) echo "| NVIDIA-SMI {rows[0].split(', ')[3]}  Driver Version: {rows[0].split(', ')[3]}  CUDA Version: {cuda} |";;
esac
"""
    _script(folder / "nvidia-smi", script)


def fake_toolkit(root: Path, release: str, cublas: bool = True) -> Path:
    """A toolkit folder whose bin/nvcc answers --version and --dryrun as nvcc does."""
    (root / "bin").mkdir(parents=True)
    for header in ["cuda_runtime.h"] + (["cublas_v2.h"] if cublas else []):
        (root / "include").mkdir(exist_ok=True)
        (root / "include" / header).write_text("")
    (root / "lib64").mkdir()
    for lib in ["libcudart.so"] + (["libcublas.so"] if cublas else []):
        (root / "lib64" / lib).write_text("")
    _script(root / "bin" / "nvcc", f"""#!/bin/sh
case "$1" in
  --version) echo "Cuda compilation tools, release {release}, V{release}.99";;
  --dryrun) echo "#$ _HERE_={root / 'bin'}" >&2;;
esac
""")
    return root / "bin" / "nvcc"


def _script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """PATH holds only tmp/bin (the stand-ins) and the system's basic folders; no toolkit is found
    in the usual install folders and no driver library is asked, whatever this machine has."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setattr(gpu_detect, "_install_folders", lambda: [])
    monkeypatch.setattr(gpu_detect, "_gpus_from_driver_library", lambda: [])
    environ = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    return tmp_path, bin_dir, environ


def test_dry_run_prints_the_card_the_compiler_and_the_build_and_builds_nothing(tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "packaging").mkdir(parents=True)
    shutil.copy(ROOT / "bootstrap.py", checkout)
    for module in ("gpu_detect", "llama_build_plan", "cuda_wheels", "build_progress", "llama_source", "llama_patch",
                   "llama_patches", "llama_patches_kquants", "llama_patches_vnni"):
        shutil.copy(ROOT / "packaging" / f"{module}.py", checkout / "packaging")
    bin_dir = tmp_path / "bin"
    fake_nvidia_smi(bin_dir, [H100], "13.0")
    nvcc = fake_toolkit(tmp_path / "cuda-13.0", "13.0")
    shutil.copy(nvcc, bin_dir / "nvcc")  # on PATH, as a wrapper: the toolkit is where nvcc says it is
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("CMAKE_ARGS", None)
    env.pop("CONFAB_LLAMA_GPU", None)
    done = subprocess.run([sys.executable, "bootstrap.py", "setup", "--dry-run"], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "GPU: NVIDIA H100 80GB HBM3, compute capability 9.0, 81,559 MiB, driver 580.159.04 (CUDA 13.0)" in out
    assert f"compiler: nvcc 13.0 at {tmp_path / 'cuda-13.0' / 'bin' / 'nvcc'} (PATH)" in out
    assert f"CMAKE_ARGS={CPU_FLAGS} {CUDA_FLAGS} -DCMAKE_CUDA_ARCHITECTURES=90-real" in out
    assert f"CUDACXX={tmp_path / 'cuda-13.0' / 'bin' / 'nvcc'}" in out
    assert f"if that fails: this CPU's own instructions (no GPU)\n    CMAKE_ARGS={CPU_FLAGS}" in out
    assert not (checkout / ".venv").exists(), "a dry run installs nothing"


def plan(environ, tmp_path) -> llama_build_plan.Plan:
    return llama_build_plan.choose(environ, tmp_path / ".venv", platform="linux")


@pytest.mark.parametrize("rows, driver_cuda, release, expect_args, expect_note", [
    # the card's own architecture only, with the nvcc found
    ([H100], "13.0", "13.0", "-DCMAKE_CUDA_ARCHITECTURES=90-real", None),
    # two cards: both architectures
    ([RTX3090, RTX4070], "12.4", "12.4", "-DCMAKE_CUDA_ARCHITECTURES=86-real;89-real", None),
    # CUDA 13 builds nothing below compute capability 7.5: NVIDIA's CUDA 12 wheels instead
    ([GTX1080], "13.0", "13.0", "-DCMAKE_CUDA_ARCHITECTURES=61-real",
     "CUDA 13.0 does not build for compute capability 6.1"),
    # a toolkit newer than the driver runs: wheels no newer than the driver
    ([RTX4070], "12.4", "13.0", "-DCMAKE_CUDA_ARCHITECTURES=89-real", "the driver runs CUDA 12.4 at most"),
])
def test_the_cuda_build_suits_the_card_and_the_driver(machine, rows, driver_cuda, release, expect_args, expect_note):
    tmp_path, bin_dir, environ = machine
    fake_nvidia_smi(bin_dir, rows, driver_cuda)
    shutil.copy(fake_toolkit(tmp_path / "cuda", release), bin_dir / "nvcc")
    chosen = plan(environ, tmp_path)
    cuda, cpu = chosen.builds
    assert cuda.kind == "cuda" and cpu.kind == "cpu" and cpu.cmake_args == CPU_FLAGS
    assert cuda.cmake_args == f"{CPU_FLAGS} {CUDA_FLAGS} {expect_args}"
    if expect_note is None:
        assert cuda.toolkit_wheels is None and cuda.env["CUDACXX"] == str(tmp_path / "cuda" / "bin" / "nvcc")
    else:
        assert any(expect_note in note for note in chosen.notes), chosen.notes
        assert cuda.toolkit_wheels is not None and cuda.env["CUDACXX"].endswith(os.path.join("cuda-toolkit", "bin", "nvcc"))


def test_a_toolkit_without_cublas_is_passed_over(machine):
    tmp_path, bin_dir, environ = machine
    fake_nvidia_smi(bin_dir, [H100], "13.0")
    shutil.copy(fake_toolkit(tmp_path / "cuda", "13.0", cublas=False), bin_dir / "nvcc")
    chosen = plan(environ, tmp_path)
    assert any("its toolkit has no cuBLAS" in note for note in chosen.notes)
    assert chosen.builds[0].toolkit_wheels == "cuda-toolkit[nvcc,cudart,cublas,cccl,crt,nvvm]>=13.0,<13.1"


def test_a_driver_too_old_for_any_toolkit_gets_the_cpu_build_and_says_so(machine):
    tmp_path, bin_dir, environ = machine
    fake_nvidia_smi(bin_dir, [RTX3090], "11.4")
    shutil.copy(fake_toolkit(tmp_path / "cuda", "13.0"), bin_dir / "nvcc")
    chosen = plan(environ, tmp_path)
    assert [b.kind for b in chosen.builds] == ["cpu"]
    assert any("update NVIDIA's driver" in note for note in chosen.notes)
    assert "update NVIDIA's driver" in llama_build_plan.describe(chosen)


def test_a_driver_without_the_compute_cap_field_builds_for_the_cards_found_at_build_time(machine):
    tmp_path, bin_dir, environ = machine
    fake_nvidia_smi(bin_dir, [RTX3090], "12.2", compute_cap=False)
    shutil.copy(fake_toolkit(tmp_path / "cuda", "12.2"), bin_dir / "nvcc")
    cuda = plan(environ, tmp_path).builds[0]
    assert cuda.cmake_args.endswith("-DCMAKE_CUDA_ARCHITECTURES=native")


def test_no_gpu_means_the_cpu_build(machine):
    tmp_path, _, environ = machine
    chosen = plan(environ, tmp_path)
    assert [b.cmake_args for b in chosen.builds] == [CPU_FLAGS]
    assert "no NVIDIA GPU answered" in chosen.found[0]


def test_cudacxx_names_the_compiler_first(machine):
    tmp_path, bin_dir, environ = machine
    fake_nvidia_smi(bin_dir, [RTX4070], "12.4")
    shutil.copy(fake_toolkit(tmp_path / "on-path", "12.4"), bin_dir / "nvcc")
    chosen_nvcc = fake_toolkit(tmp_path / "chosen", "12.3")
    cuda = plan({**environ, "CUDACXX": str(chosen_nvcc)}, tmp_path).builds[0]
    assert cuda.env["CUDACXX"] == str(chosen_nvcc) and "nvcc 12.3" in cuda.what


@pytest.mark.parametrize("toolkit, cc, builds", [
    ("13.0", "7.5", True), ("13.0", "7.0", False), ("12.4", "5.0", True), ("12.4", "9.0", True),
    ("12.4", "12.0", False), ("12.8", "12.0", True), ("11.7", "8.9", False), ("11.8", "8.9", True),
    ("12.4", None, True),
])
def test_which_toolkit_builds_for_which_card(toolkit, cc, builds):
    assert gpu_detect.builds_for(toolkit, cc) is builds


@pytest.mark.parametrize("driver, ccs, expected", [
    ("12.4", ["8.9"], ("cuda-toolkit[nvcc,cudart,cublas,cccl,crt,nvvm]>=12.0,<12.5", "12.4")),
    ("13.1", ["9.0"], ("cuda-toolkit[nvcc,cudart,cublas,cccl,crt,nvvm]>=13.0,<13.2", "13.1")),
    ("13.0", ["6.1"], ("cuda-toolkit[nvcc,cudart,cublas,cccl,crt,nvvm]>=12.0,<13", "12.9")),
    ("12.9", ["12.0"], ("cuda-toolkit[nvcc,cudart,cublas,cccl,crt,nvvm]>=12.8,<12.10", "12.9")),
    ("12.4", ["12.0"], None),  # Blackwell needs 12.8, newer than this driver runs
    ("11.4", ["8.6"], None),   # no toolkit wheels older than 11.8 that build here
])
def test_the_toolkit_wheels_are_no_newer_than_the_driver_runs(driver, ccs, expected):
    assert llama_build_plan.wheel_requirement(driver, ccs) == expected


def fake_vulkan(folder: Path, devices: list[tuple[str, str]]) -> None:
    """glslc, and a vulkaninfo whose summary lists `devices` as (deviceType, deviceName)."""
    _script(folder / "glslc", "#!/bin/sh\necho 'glslc 2023.2'\n")
    listing = "".join(f"GPU{i}:\n\tdeviceType         = PHYSICAL_DEVICE_TYPE_{kind}\n\tdeviceName         = {name}\n"
                      for i, (kind, name) in enumerate(devices))
    _script(folder / "vulkaninfo", f"#!/bin/sh\ncat <<'END'\nDevices:\n========\n{listing}END\n")


@pytest.mark.parametrize("devices, kinds", [
    ([("DISCRETE_GPU", "AMD Radeon RX 7800 XT (RADV NAVI32)")], ["vulkan", "cpu"]),
    # ggml's Vulkan backend takes discrete GPUs only: no build for a CPU renderer or an integrated GPU
    ([("CPU", "llvmpipe (LLVM 15.0.6, 256 bits)"), ("INTEGRATED_GPU", "Intel(R) UHD Graphics 770")], ["cpu"]),
])
def test_vulkan_for_a_discrete_gpu_that_is_not_nvidias(machine, monkeypatch, devices, kinds):
    tmp_path, bin_dir, environ = machine
    monkeypatch.setattr(gpu_detect, "_vulkan_loader", lambda: True)
    monkeypatch.setattr(gpu_detect, "_vulkan_headers", lambda environ: True)
    fake_vulkan(bin_dir, devices)
    chosen = plan(environ, tmp_path)
    assert [b.kind for b in chosen.builds] == kinds
    if kinds[0] == "vulkan":
        assert chosen.builds[0].cmake_args == f"{CPU_FLAGS} -DGGML_VULKAN=on"
        assert "Vulkan: AMD Radeon RX 7800 XT (RADV NAVI32)" in chosen.found[-1]


def test_an_nvidia_card_gets_cuda_before_vulkan(machine, monkeypatch):
    tmp_path, bin_dir, environ = machine
    monkeypatch.setattr(gpu_detect, "_vulkan_loader", lambda: True)
    monkeypatch.setattr(gpu_detect, "_vulkan_headers", lambda environ: True)
    fake_vulkan(bin_dir, [("DISCRETE_GPU", "NVIDIA GeForce RTX 4070")])
    fake_nvidia_smi(bin_dir, [RTX4070], "12.4")
    shutil.copy(fake_toolkit(tmp_path / "cuda", "12.4"), bin_dir / "nvcc")
    assert [b.kind for b in plan(environ, tmp_path).builds] == ["cuda", "cpu"]
