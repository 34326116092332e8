"""Which llama.cpp build this machine gets, and what to try when it fails: a CUDA build for the NVIDIA
card that is here, else a Vulkan build for another GPU, else (and always as the fallback) the quick
CPU build. Standard library only: bootstrap.py decides before anything is installed.

    plan = choose(os.environ, venv)     # the builds to try, in order, and what was found
    print(describe(plan))               # what `python3 bootstrap.py setup --dry-run` prints

Why by hand: llama-cpp-python builds whatever CMAKE_ARGS says and nothing chooses them for a user;
LM Studio and Ollama ship a GPU runtime chosen by what the machine has, and so does this.
CONFAB_LLAMA_GPU=cpu (or cuda, vulkan) overrides the choice; a user's own CMAKE_ARGS win over all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

import gpu_detect
from gpu_detect import CudaCompiler, Gpu, version_tuple

CPU_FLAGS = "-DGGML_NATIVE=ON -DLLAVA_BUILD=ON -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF"
"""The quick CPU build: this CPU's own instructions, llama.cpp's multimodal library (libmtmd: images
for vision models, engine/backends/llamacpp_vision.py; about 12% more build time, 0.7 MB), no OpenMP (the
engine sets OMP_WAIT_POLICY=PASSIVE for torch, which makes an OpenMP llama.cpp decode 4-5x slower;
without OpenMP ggml uses its own thread pool), and no llamafile matrix kernels (with them a token's
logits depended on what shared its step: tests/engine/test_llamacpp_rows.py). On macOS
llama-cpp-python turns Metal on by itself."""
CUDA_FLAGS = "-DGGML_CUDA=on -DGGML_CUDA_NO_VMM=ON"
"""CUDA on top of the CPU build. GGML_CUDA_NO_VMM: ggml's CUDA library then does not link the
driver's libcuda directly (its memory pool grows by plain allocations instead of virtual memory), so
the build still loads where the driver is missing or broken and llama.cpp runs on the CPU, said
rather than failing to import."""
VULKAN_FLAGS = "-DGGML_VULKAN=on"
WHEEL_EXTRAS = "nvcc,cudart,cublas,cccl,crt,nvvm"
"""What of NVIDIA's PyPI toolkit (the `cuda-toolkit` metapackage) a llama.cpp build needs."""
CORE_MINUTES = {"cpu": 7.0, "cuda": 60.0, "vulkan": 12.0, "metal": 7.0, "user": 10.0}
"""Roughly what each build costs in CPU-core minutes, divided by the cores for the estimate shown
before a build. Measured on a 2-core AMD EPYC: the CPU build 2.1-3.5 min of wall time; the CUDA build
for one architecture (sm_90) 31.7 min beside a test run; the Vulkan build about 6 min beside it."""


@dataclass(frozen=True)
class Build:
    """One way to build llama-cpp-python."""

    kind: str
    """"cuda", "vulkan", "metal", "cpu" or "user" (the user's own CMAKE_ARGS)."""
    cmake_args: str
    what: str
    """In words: "CUDA for compute capability 8.9 (sm_89) with nvcc 12.4"."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Set beside CMAKE_ARGS for the build: CUDACXX (which nvcc) and CUDAToolkit_ROOT."""
    toolkit_wheels: Optional[str] = None
    """A pip requirement for NVIDIA's toolkit wheels to install into .venv first (no nvcc here)."""

    def estimate_minutes(self, cores: Optional[int] = None) -> float:
        cores = max(1, min(cores or os.cpu_count() or 1, 32))
        return CORE_MINUTES[self.kind] / cores * (1.0 if cores <= 2 else 1.25)  # parallel steps do not scale fully


@dataclass(frozen=True)
class Plan:
    """What was found and the builds to try in order; the last one is the fallback."""

    found: tuple[str, ...]
    builds: tuple[Build, ...]
    notes: tuple[str, ...] = ()
    """Why a GPU was not chosen, or a compiler passed over."""


def choose(environ: Mapping[str, str], venv: Path, platform: str = "") -> Plan:
    """The builds for this machine. `environ` is the environment set-up runs in (its PATH is searched
    for nvidia-smi, nvcc, glslc and vulkaninfo)."""
    import sys

    platform = platform or sys.platform
    if environ.get("CMAKE_ARGS", "").strip():
        args = environ["CMAKE_ARGS"]
        return Plan(("CMAKE_ARGS is set: your own flags are used as they are",),
                    (Build("user", args, f"your CMAKE_ARGS ({args})"),))
    cpu = Build("metal" if platform == "darwin" else "cpu", CPU_FLAGS,
                "Metal and this Mac's CPU" if platform == "darwin" else "this CPU's own instructions (no GPU)")
    wanted = environ.get("CONFAB_LLAMA_GPU", "auto").strip().lower() or "auto"
    if wanted in ("cpu", "off", "0", "none", "no"):
        return Plan((f"CONFAB_LLAMA_GPU={wanted}: no GPU build",), (cpu,))
    if platform == "darwin":
        return Plan(("macOS: llama.cpp's Metal backend is built in",), (cpu,))
    found: list[str] = []
    notes: list[str] = []
    builds: list[Build] = []
    if wanted in ("auto", "cuda"):
        gpus = gpu_detect.nvidia_gpus(environ)
        found += [f"GPU: {g.describe()}" for g in gpus] or ["GPU: no NVIDIA GPU answered (nvidia-smi, driver)"]
        if gpus:
            build = cuda_build(gpus, gpu_detect.cuda_compilers(environ, venv), venv, found, notes)
            builds += [build] if build else []
    if not builds and wanted in ("auto", "vulkan"):
        vulkan = gpu_detect.vulkan_toolchain(environ)
        if vulkan is not None:
            found.append(f"Vulkan: {', '.join(vulkan.devices)} (glslc at {vulkan.glslc})")
            builds.append(Build("vulkan", f"{CPU_FLAGS} {VULKAN_FLAGS}", f"Vulkan for {vulkan.devices[0]}"))
        elif wanted == "vulkan":
            notes.append("CONFAB_LLAMA_GPU=vulkan, but glslc, the Vulkan loader and headers, or a GPU it lists is missing")
    if wanted not in ("auto", "cuda", "vulkan"):
        notes.append(f"CONFAB_LLAMA_GPU={wanted!r} is not auto, cpu, cuda or vulkan: chose as for auto")
    return Plan(tuple(found), (*builds, cpu), tuple(notes))


def cuda_build(gpus: list[Gpu], compilers: list[CudaCompiler], venv: Path,
               found: list[str], notes: list[str]) -> Optional[Build]:
    """A CUDA build for `gpus` with the first compiler that builds for every card and that their
    driver runs; else with NVIDIA's toolkit wheels of a version that does; None when neither can."""
    ccs = sorted({g.compute_capability for g in gpus if g.compute_capability}, key=version_tuple)
    driver = gpus[0].driver_cuda
    known = ccs and all(g.compute_capability for g in gpus)  # else CMake asks the cards at build time
    archs = ";".join(f"{cc.replace('.', '')}-real" for cc in ccs) if known else "native"
    sms = ", ".join(f"sm_{cc.replace('.', '')}" for cc in ccs) or "the cards found at build time"
    for compiler in compilers:
        lacks = gpu_detect.toolkit_lacks(compiler.root)
        why_not = _unusable(compiler.version, ccs, driver) or (f"its toolkit has no {' and no '.join(lacks)}" if lacks else "")
        if why_not:
            notes.append(f"{compiler.describe()} is passed over: {why_not}")
            continue
        found.append(f"compiler: {compiler.describe()}")
        return Build("cuda", f"{CPU_FLAGS} {CUDA_FLAGS} -DCMAKE_CUDA_ARCHITECTURES={archs}",
                     f"CUDA for {sms} with nvcc {compiler.version}",
                     {"CUDACXX": str(compiler.nvcc), "CUDAToolkit_ROOT": str(compiler.root)})
    wheels = wheel_requirement(driver, ccs)
    if wheels is None:
        notes.append(f"no CUDA toolkit builds for {sms} and runs on a driver for CUDA {driver}: "
                     "update NVIDIA's driver to use the GPU")
        return None
    requirement, version = wheels
    found.append(f"compiler: none usable here; NVIDIA's CUDA {version} wheels ({requirement}) go into "
                 f"{venv / gpu_detect.WHEEL_TOOLKIT}")
    root = venv / gpu_detect.WHEEL_TOOLKIT
    return Build("cuda", f"{CPU_FLAGS} {CUDA_FLAGS} -DCMAKE_CUDA_ARCHITECTURES={archs}",
                 f"CUDA for {sms} with NVIDIA's nvcc {version} wheels",
                 {"CUDACXX": str(root / "bin" / ("nvcc.exe" if os.name == "nt" else "nvcc")),
                  "CUDAToolkit_ROOT": str(root)}, requirement)


def _unusable(toolkit: str, ccs: list[str], driver_cuda: Optional[str]) -> str:
    if not gpu_detect.driver_runs(toolkit, driver_cuda):
        return f"the driver runs CUDA {driver_cuda} at most, older than this toolkit"
    old = [cc for cc in ccs if not gpu_detect.builds_for(toolkit, cc)]
    return f"CUDA {toolkit} does not build for compute capability {', '.join(old)}" if old else ""


def wheel_requirement(driver_cuda: Optional[str], ccs: list[str]) -> Optional[tuple[str, str]]:
    """(pip requirement, newest version it allows) for NVIDIA's `cuda-toolkit` wheels that build for
    every `ccs` and that the driver runs: the driver's own major version up to its minor, else the
    major before it (wheels exist from 11.8 on). None when no such version exists."""
    driver = version_tuple(driver_cuda)
    for major in (13, 12):
        if driver and major > driver[0]:
            continue
        if driver and major == driver[0]:
            newest, upper = f"{major}.{driver[1]}", f"{major}.{driver[1] + 1}"
        else:
            newest, upper = f"{major}.9", f"{major + 1}"
        if version_tuple(newest) < (12, 0) or not all(gpu_detect.builds_for(newest, cc) for cc in ccs):
            continue
        lowest = "12.8" if major == 12 and any(version_tuple(cc) >= (10, 0) for cc in ccs) else f"{major}.0"
        return f"{gpu_detect.WHEEL_PACKAGE}[{WHEEL_EXTRAS}]>={lowest},<{upper}", newest
    return None


def describe(plan: Plan, cores: Optional[int] = None) -> str:
    """What `setup --dry-run` prints: what was found, the build it would run and its fallback."""
    first, rest = plan.builds[0], plan.builds[1:]
    lines = ["llama.cpp for this machine (dry run: nothing is installed or built)"]
    lines += [f"  {line}" for line in plan.found]
    lines += [f"  note: {note}" for note in plan.notes]
    lines.append(f"  build: {first.what}, about {first.estimate_minutes(cores):.0f} min here")
    if first.toolkit_wheels:
        lines.append(f"    first: pip install --target {gpu_detect.WHEEL_TOOLKIT}/packages '{first.toolkit_wheels}'")
    lines += [f"    {name}={value}" for name, value in first.env.items()]
    lines.append(f"    CMAKE_ARGS={first.cmake_args}")
    for build in rest:
        lines.append(f"  if that fails: {build.what}")
        lines.append(f"    CMAKE_ARGS={build.cmake_args}")
    return "\n".join(lines)
