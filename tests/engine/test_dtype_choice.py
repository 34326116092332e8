"""dtype="auto" on torch: bfloat16 only where the hardware computes in it, with the reason reported."""

from __future__ import annotations

import pytest
import torch

from engine.backends import torch_dtype
from engine.backends.torch_dtype import choose_dtype
from engine.models.estimate import auto_dtype


@pytest.fixture(autouse=True)
def fresh_choice():
    torch_dtype._cpu_choice.cache_clear()
    torch_dtype._cuda_choice.cache_clear()
    yield
    torch_dtype._cpu_choice.cache_clear()
    torch_dtype._cuda_choice.cache_clear()


def _cpu(monkeypatch, amx: bool, avx512_bf16: bool, capability: str = "AVX2") -> None:
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16, raising=False)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)


@pytest.mark.parametrize(
    "amx, bf16, capability, expected, reason",
    [
        (False, False, "AVX2", "float32", "float32: this CPU has no native bfloat16 (AVX2)"),
        (False, False, "AVX512", "float32", "float32: this CPU has no native bfloat16 (AVX512)"),
        (False, True, "AVX512", "bfloat16", "bfloat16: this CPU has AVX512-BF16 (AVX512)"),
        (True, False, "AVX512", "bfloat16", "bfloat16: this CPU has AMX (AVX512)"),
    ],
)
def test_cpu_auto_dtype_follows_the_hardware(monkeypatch, amx, bf16, capability, expected, reason):
    _cpu(monkeypatch, amx, bf16, capability)
    choice = choose_dtype("cpu")
    assert (choice.dtype, choice.reason) == (expected, reason)


def test_a_torch_without_the_probes_means_no_native_bfloat16(monkeypatch):
    monkeypatch.delattr(torch.cpu, "_is_amx_tile_supported", raising=False)
    monkeypatch.delattr(torch.cpu, "_is_avx512_bf16_supported", raising=False)
    assert choose_dtype("cpu").dtype == "float32"


@pytest.mark.parametrize("capability, expected", [((8, 0), "bfloat16"), ((9, 0), "bfloat16"), ((7, 5), "float16")])
def test_cuda_auto_dtype_follows_compute_capability(monkeypatch, capability, expected):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Test GPU")
    choice = choose_dtype("cuda")
    assert choice.dtype == expected
    assert f"compute capability {capability[0]}.{capability[1]}" in choice.reason


def test_an_explicit_dtype_is_kept():
    assert choose_dtype("cpu", "bfloat16").dtype == "bfloat16"
    assert choose_dtype("cpu", "bfloat16").reason == "bfloat16: as configured"


def test_engine_reports_the_choice_and_estimate_agrees(make_engine, tiny_models, monkeypatch):
    _cpu(monkeypatch, amx=False, avx512_bf16=False)
    engine = make_engine(tiny_models["llama"], "torch", dtype="auto", device="cpu")
    assert engine.dtype == "float32"
    assert engine.dtype_reason == "float32: this CPU has no native bfloat16 (AVX2)"
    if not torch.cuda.is_available():
        assert auto_dtype() == engine.dtype
    torch_dtype._cpu_choice.cache_clear()
    _cpu(monkeypatch, amx=True, avx512_bf16=False, capability="AVX512")
    engine = make_engine(tiny_models["llama"], "torch", dtype="auto", device="cpu")
    assert engine.dtype == "bfloat16" and engine.dtype_reason.startswith("bfloat16: this CPU has AMX")
    if not torch.cuda.is_available():
        assert auto_dtype() == "bfloat16"
