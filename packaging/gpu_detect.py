"""What GPU this machine has and which compilers could build llama.cpp for it, asked before anything
is installed (standard library only: bootstrap.py runs it from the system Python).

    gpus = nvidia_gpus(environ)                 # nvidia-smi, else the driver's own library
    compilers = cuda_compilers(environ, venv)   # nvcc: CUDACXX, PATH, CUDA_HOME/CUDA_PATH, usual folders, .venv
    vulkan = vulkan_toolchain(environ)          # glslc, the loader and a GPU it lists

Every probe answers "not here" rather than raising: a machine without a GPU, a driver without
nvidia-smi or a broken toolkit must still get the CPU build. A stand-in `nvidia-smi` and `nvcc` on
PATH are enough for the whole choice to be checked on a machine without a GPU (tests do).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

PROBE_TIMEOUT_S = 20
"""A hung driver query must not hang set-up."""
WHEEL_PACKAGE = "cuda-toolkit"
"""NVIDIA's PyPI metapackage of the CUDA toolkit (extras: nvcc, cudart, cublas, cccl…), 11.8 on."""
WHEEL_TOOLKIT = "cuda-toolkit"
"""Where in .venv NVIDIA's PyPI wheels of the toolkit go (their own folder: torch's CUDA wheels in
site-packages stay as they are)."""


@dataclass(frozen=True)
class Gpu:
    """One NVIDIA card as its driver describes it."""

    name: str
    compute_capability: Optional[str]
    """"8.9"; None where the driver is too old to say (nvidia-smi without the compute_cap field)."""
    memory_mib: int
    driver: str
    """The driver's version ("550.54.14"), or "" when unknown."""
    driver_cuda: Optional[str]
    """The newest CUDA the driver runs ("12.4"); a toolkit newer than this builds code it refuses."""

    def describe(self) -> str:
        cc = f"compute capability {self.compute_capability}" if self.compute_capability else "compute capability unknown"
        driver = f", driver {self.driver}" if self.driver else ""
        cuda = f" (CUDA {self.driver_cuda})" if self.driver_cuda else ""
        return f"{self.name}, {cc}, {self.memory_mib:,} MiB{driver}{cuda}"


@dataclass(frozen=True)
class CudaCompiler:
    """An nvcc and the toolkit around it."""

    nvcc: Path
    version: str
    """"12.4" (nvcc's release)."""
    found_by: str
    """How it was found: "PATH", "CUDA_HOME", "/usr/local/cuda-12.4", "NVIDIA's wheels in .venv"."""
    root: Path
    """The toolkit's folder (nvcc's bin/ is in it)."""

    def describe(self) -> str:
        return f"nvcc {self.version} at {self.nvcc} ({self.found_by})"


@dataclass(frozen=True)
class VulkanToolchain:
    """What a Vulkan build of llama.cpp needs, and the GPUs the loader lists."""

    glslc: Path
    devices: tuple[str, ...]
    """Discrete GPU names from `vulkaninfo --summary` (what ggml's Vulkan backend uses by default)."""


def version_tuple(version: Optional[str]) -> tuple[int, ...]:
    """"12.4" -> (12, 4); None or junk -> ()."""
    return tuple(int(p) for p in re.findall(r"\d+", version or "")[:2])


def _run(command: list[str], environ: Mapping[str, str]) -> Optional[str]:
    """stdout of `command` (found on environ's PATH), or None when it is missing, fails or hangs."""
    exe = shutil.which(command[0], path=environ.get("PATH", ""))
    if exe is None:
        return None
    try:
        done = subprocess.run([exe, *command[1:]], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                              env=dict(environ))
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


# -- NVIDIA GPUs -------------------------------------------------------------------------------------
_QUERY = "name,compute_cap,memory.total,driver_version"


def nvidia_gpus(environ: Mapping[str, str]) -> list[Gpu]:
    """The NVIDIA cards here: from nvidia-smi on PATH, else from the driver's library (libcuda) where
    nvidia-smi is missing (some containers and Windows installs). [] without a working driver."""
    listed = _run(["nvidia-smi", f"--query-gpu={_QUERY}", "--format=csv,noheader,nounits"], environ)
    if listed is None:  # an older driver has no compute_cap field: ask without it
        listed = _run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits"],
                      environ)
        rows = [[r[0], "", *r[1:]] for r in _csv(listed)]
    else:
        rows = _csv(listed)
    if listed is None:
        return _gpus_from_driver_library()
    header = _run(["nvidia-smi"], environ) or ""
    match = re.search(r"CUDA Version:\s*([\d.]+)", header)
    cuda = match.group(1) if match else None
    gpus = []
    for name, cc, memory, driver in (r[:4] for r in rows if len(r) >= 4):
        cc = cc if re.fullmatch(r"\d+\.\d+", cc) else None
        gpus.append(Gpu(name, cc, int(float(memory)) if re.fullmatch(r"[\d.]+", memory) else 0, driver, cuda))
    return gpus


def _csv(text: Optional[str]) -> list[list[str]]:
    return [[c.strip() for c in line.split(",")] for line in (text or "").splitlines() if line.strip()]


def _gpus_from_driver_library() -> list[Gpu]:
    """Ask libcuda (the driver itself) through ctypes; [] where it is absent or finds no device."""
    names = ["nvcuda.dll"] if sys.platform == "win32" else ["libcuda.so.1", ctypes.util.find_library("cuda")]
    lib = None
    for name in filter(None, names):
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        return []
    try:
        if lib.cuInit(0) != 0:
            return []
        version, count = ctypes.c_int(), ctypes.c_int()
        lib.cuDriverGetVersion(ctypes.byref(version))
        lib.cuDeviceGetCount(ctypes.byref(count))
        cuda = f"{version.value // 1000}.{version.value % 1000 // 10}" if version.value else None
        gpus = []
        for i in range(count.value):
            device, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
            name, total = ctypes.create_string_buffer(256), ctypes.c_size_t()
            lib.cuDeviceGet(ctypes.byref(device), i)
            lib.cuDeviceGetName(name, len(name), device)
            lib.cuDeviceGetAttribute(ctypes.byref(major), 75, device)  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
            lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, device)  # ..._MINOR
            lib.cuDeviceTotalMem_v2(ctypes.byref(total), device)
            gpus.append(Gpu(name.value.decode(errors="replace"), f"{major.value}.{minor.value}",
                            total.value >> 20, "", cuda))
        return gpus
    except (AttributeError, OSError):
        return []


# -- CUDA compilers ----------------------------------------------------------------------------------
def cuda_compilers(environ: Mapping[str, str], venv: Path) -> list[CudaCompiler]:
    """Every nvcc found, in the order a user would expect to be honoured: CUDACXX (CMake's own
    variable), PATH, CUDA_HOME / CUDA_PATH, the usual install folders (newest first), then a toolkit
    set-up installed from NVIDIA's wheels into .venv before. Each is asked its version."""
    exe = "nvcc.exe" if sys.platform == "win32" else "nvcc"
    candidates: list[tuple[Path, str]] = []
    if environ.get("CUDACXX"):
        candidates.append((Path(environ["CUDACXX"]), "CUDACXX"))
    if on_path := shutil.which("nvcc", path=environ.get("PATH", "")):
        candidates.append((Path(on_path), "PATH"))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(var):
            candidates.append((Path(environ[var]) / "bin" / exe, var))
    for folder in _install_folders():
        candidates.append((folder / "bin" / exe, str(folder)))
    candidates.append((venv / WHEEL_TOOLKIT / "bin" / exe, "NVIDIA's wheels in .venv"))
    found, seen = [], set()
    for nvcc, how in candidates:
        if not nvcc.is_file():
            continue
        version, here = nvcc_version(nvcc, environ), nvcc_home(nvcc, environ)
        if version and here is not None and here.resolve() not in seen:  # one toolkit, however reached
            seen.add(here.resolve())
            found.append(CudaCompiler(here / nvcc.name, version, how, here.parent))
    return found


def _install_folders() -> list[Path]:
    """Where CUDA toolkits install themselves, newest version first."""
    if sys.platform == "win32":
        base = os.environ.get("ProgramFiles", r"C:\Program Files")
        pattern = os.path.join(base, "NVIDIA GPU Computing Toolkit", "CUDA", "v*")
        folders = [Path(p) for p in glob.glob(pattern)]
    else:
        folders = [Path(p) for p in glob.glob("/usr/local/cuda-*") + ["/usr/local/cuda", "/opt/cuda"]]
    return sorted(folders, key=lambda p: version_tuple(p.name), reverse=True)


def nvcc_version(nvcc: Path, environ: Mapping[str, str]) -> Optional[str]:
    """nvcc's release ("12.4"), or None when it does not run."""
    try:
        out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                             env=dict(environ)).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"release (\d+\.\d+)", out)
    return match.group(1) if match else None


def nvcc_home(nvcc: Path, environ: Mapping[str, str]) -> Optional[Path]:
    """The folder of the real nvcc binary, as nvcc reports it (`_HERE_`): a wrapper script on PATH
    (such as /usr/local/bin/nvcc) says nothing of where its toolkit is."""
    try:
        out = subprocess.run([str(nvcc), "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
                             capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env=dict(environ))
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"_HERE_=(.+)", out.stdout + out.stderr)
    return Path(match.group(1).strip()) if match else nvcc.resolve().parent


def toolkit_lacks(root: Path) -> list[str]:
    """What of a toolkit at `root` a llama.cpp build needs and is not there: the CUDA runtime and
    cuBLAS (headers and libraries; some installs carry nvcc without cuBLAS)."""
    roots = [root, *sorted(root.glob("targets/*"))]
    def has(*patterns: str) -> bool:
        return any(glob.glob(str(r / p)) for r in roots for p in patterns)
    lacks = []
    if not (has("include/cuda_runtime.h") and has("lib64/libcudart.so*", "lib/libcudart.so*", "lib/x64/cudart.lib")):
        lacks.append("the CUDA runtime (cudart)")
    if not (has("include/cublas_v2.h") and has("lib64/libcublas.so*", "lib/libcublas.so*", "lib/x64/cublas.lib")):
        lacks.append("cuBLAS")
    return lacks


# Which compute capabilities each toolkit builds for (NVIDIA's release notes): CUDA 13 dropped
# Maxwell, Pascal and Volta (below 7.5); Ada and Hopper need 11.8; Blackwell (10.x, 12.x) needs 12.8.
_LOWEST_CC = {11: (3, 5), 12: (5, 0), 13: (7, 5)}


def builds_for(toolkit: str, cc: Optional[str]) -> bool:
    """Whether CUDA `toolkit` ("12.4") can build for compute capability `cc` ("8.9"; None: unknown,
    assumed yes)."""
    tk, card = version_tuple(toolkit), version_tuple(cc)
    if not tk or not card:
        return bool(tk)
    lowest = _LOWEST_CC.get(tk[0], (7, 5) if tk[0] > 13 else (3, 0))
    if card < lowest:
        return False
    if card >= (10, 0):
        return tk >= (12, 8)
    if card >= (8, 9):
        return tk >= (11, 8)
    if card >= (8, 6):
        return tk >= (11, 1)
    return True


def driver_runs(toolkit: str, driver_cuda: Optional[str]) -> bool:
    """Whether a driver that runs CUDA `driver_cuda` runs what toolkit `toolkit` builds: the same
    major version or newer (CUDA's minor-version compatibility); unknown driver: assumed yes."""
    tk, driver = version_tuple(toolkit), version_tuple(driver_cuda)
    return not driver or (bool(tk) and tk[0] <= driver[0])


# -- Vulkan ------------------------------------------------------------------------------------------
def vulkan_toolchain(environ: Mapping[str, str]) -> Optional[VulkanToolchain]:
    """glslc (the shader compiler ggml's Vulkan build needs), the Vulkan loader and its headers, and at
    least one discrete GPU listed by vulkaninfo; None where any is missing."""
    glslc = shutil.which("glslc", path=environ.get("PATH", ""))
    if glslc is None or not _vulkan_loader() or not _vulkan_headers(environ):
        return None
    summary = _run(["vulkaninfo", "--summary"], environ) or ""
    # ggml's Vulkan backend (llama-cpp-python 0.3.16) uses discrete GPUs unless GGML_VK_VISIBLE_DEVICES
    # names others: a build for an integrated GPU or a CPU renderer (llvmpipe) would find none
    devices = tuple(name for kind, name in _vulkan_devices(summary) if "DISCRETE" in kind)
    return VulkanToolchain(Path(glslc), devices) if devices else None


def _vulkan_devices(summary: str) -> list[tuple[str, str]]:
    """(deviceType, deviceName) pairs from `vulkaninfo --summary`."""
    kinds = re.findall(r"deviceType\s*=\s*(\S+)", summary)
    names = re.findall(r"deviceName\s*=\s*(.+)", summary)
    return list(zip(kinds, (n.strip() for n in names)))


def _vulkan_loader() -> bool:
    name = "vulkan-1" if sys.platform == "win32" else "vulkan"
    return ctypes.util.find_library(name) is not None


def _vulkan_headers(environ: Mapping[str, str]) -> bool:
    roots = [Path(environ["VULKAN_SDK"]) / "include"] if environ.get("VULKAN_SDK") else []
    roots += [Path("/usr/include"), Path("/usr/local/include")]
    return any((root / "vulkan" / "vulkan.h").is_file() for root in roots)
