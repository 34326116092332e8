"""NVIDIA's toolkit wheels merged into one toolkit folder (packaging/cuda_wheels.py), checked on the two
layouts the wheels come in: CUDA 13's one shared folder, CUDA 12's folder per component."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import bootstrap  # noqa: F401 - puts packaging/ on sys.path
import cuda_wheels

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the toolkit's Linux layout")


def touch(path: Path, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cuda_13s_shared_folder_becomes_a_toolkit(tmp_path):
    cu13 = tmp_path / "packages" / "nvidia" / "cu13"
    touch(cu13 / "bin" / "nvcc", "nvcc")
    touch(cu13 / "bin" / "nvcc.profile", "TOP = $(_HERE_)/..")
    touch(cu13 / "include" / "cuda_runtime.h")
    touch(cu13 / "include" / "cccl" / "cub" / "cub.cuh")
    touch(cu13 / "lib" / "libcudart.so.13")
    touch(cu13 / "lib" / "libcublas.so.13")
    touch(cu13 / "nvvm" / "bin" / "cicc")
    root = tmp_path / "cuda-toolkit"
    cuda_wheels.merge(tmp_path / "packages" / "nvidia", root)
    nvcc = root / "bin" / "nvcc"
    assert nvcc.is_file() and not nvcc.is_symlink(), "nvcc is copied: it finds its toolkit from where it lies"
    assert (root / "bin" / "nvcc.profile").read_text() == "TOP = $(_HERE_)/.."
    assert (root / "include" / "cccl" / "cub" / "cub.cuh").is_file()
    for name in ("libcudart.so", "libcudart.so.13", "libcublas.so"):
        assert (root / "lib64" / name).is_file(), name  # CMake's find_library wants the unversioned names
    assert (root / "nvvm" / "bin" / "cicc").is_file()


def test_cuda_12s_components_merge_into_one_toolkit(tmp_path):
    nvidia = tmp_path / "packages" / "nvidia"
    touch(nvidia / "cuda_nvcc" / "bin" / "nvcc")
    touch(nvidia / "cuda_nvcc" / "include" / "crt" / "host_config.h")
    touch(nvidia / "cuda_nvcc" / "nvvm" / "bin" / "cicc")
    touch(nvidia / "cuda_runtime" / "include" / "cuda_runtime.h")
    touch(nvidia / "cuda_runtime" / "include" / "crt" / "other.h")
    touch(nvidia / "cuda_runtime" / "lib" / "libcudart.so.12")
    touch(nvidia / "cublas" / "include" / "cublas_v2.h")
    touch(nvidia / "cublas" / "lib" / "libcublas.so.12")
    root = tmp_path / "cuda-toolkit"
    cuda_wheels.merge(nvidia, root)
    for name in ("include/crt/host_config.h", "include/crt/other.h", "include/cuda_runtime.h",
                 "include/cublas_v2.h", "lib64/libcudart.so", "lib64/libcublas.so", "bin/nvcc", "nvvm/bin/cicc"):
        assert (root / name).is_file(), name


def test_merging_again_replaces_the_toolkit_of_before(tmp_path):
    nvidia = tmp_path / "packages" / "nvidia"
    touch(nvidia / "cu13" / "lib" / "libcudart.so.13")
    root = tmp_path / "cuda-toolkit"
    cuda_wheels.merge(nvidia, root)
    (nvidia / "cu13" / "lib" / "libcudart.so.13").unlink()
    touch(nvidia / "cu13" / "lib" / "libcudart.so.14")
    cuda_wheels.merge(nvidia, root)
    assert sorted(p.name for p in (root / "lib64").iterdir()) == ["libcudart.so", "libcudart.so.14"]


def test_the_runtime_is_linked_beside_llama_cpps_libraries(tmp_path):
    toolkit = tmp_path / "cuda-toolkit"
    for name in ("libcudart.so.13", "libcudart.so", "libcublas.so.13", "libcublasLt.so.13", "libnvblas.so.13"):
        touch(toolkit / "lib64" / name, name)
    lib = tmp_path / "llama_cpp" / "lib"
    lib.mkdir(parents=True)
    assert cuda_wheels.link_runtime(toolkit, lib) == ["libcublas.so.13", "libcublasLt.so.13", "libcudart.so.13"]
    assert (lib / "libcublas.so.13").read_text() == "libcublas.so.13"
    assert cuda_wheels.link_runtime(toolkit, lib) == [], "once"
