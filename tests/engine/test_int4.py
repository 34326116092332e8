"""4-bit weights: GGUF Q4 tensors load into torch's int4 matmul as they are, and fall back to dense
(with the reason logged) where the kernel is missing or slow."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from engine import Engine, EngineConfig, SamplingParams, estimate_memory
from engine.backends import torch_int4
from engine.errors import InvalidRequestError
from engine.models.gguf_int4 import read_int4

from tests.engine.gguf_tiny import LINEAR_ELEMENTS


class _Tensor:
    """The parts of a GGUFReader tensor that read_int4 uses."""

    def __init__(self, kind: str, rows: int, cols: int, data: np.ndarray) -> None:
        import gguf

        self.name, self.tensor_type = "t", gguf.GGMLQuantizationType[kind]
        self.shape, self.data = np.array([cols, rows]), data


def _blocks(kind: str, rows: int, cols: int, rng) -> np.ndarray:
    import gguf

    if kind == "Q4_K":  # the gguf package cannot quantize Q4_K: random valid blocks instead
        block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q4_K]
        data = rng.integers(0, 256, (rows, cols // block, size), dtype=np.uint8)
        data[..., :4] = np.frombuffer(rng.uniform(0.001, 0.05, (rows, cols // block, 2)).astype(np.float16).tobytes(),
                                      np.uint8).reshape(rows, cols // block, 4)
        return data.reshape(rows, -1)
    return gguf.quants.quantize(rng.standard_normal((rows, cols)).astype(np.float32), gguf.GGMLQuantizationType[kind])


@pytest.mark.parametrize("kind", ["Q4_0", "Q4_1", "Q4_K"])
def test_q4_blocks_map_exactly_onto_scale_and_zero_groups(kind):
    from gguf.quants import dequantize

    rng = np.random.default_rng(1)
    rows, cols = 8, 512
    data = _blocks(kind, rows, cols, rng)
    tensor = _Tensor(kind, rows, cols, data)
    reference = dequantize(data, tensor.tensor_type).reshape(rows, cols)
    w = read_int4(tensor)
    assert w.codes.max() <= 15 and w.scale.shape == (rows, cols // 32)
    np.testing.assert_allclose(w.dequantize(), reference, rtol=1e-5, atol=1e-6)


def _prefill_matches_dense(codes, scale, zero) -> None:
    """A prefill-sized input (>= DENSE_ROWS rows) through a CPU layer equals the dense reference."""
    layer = torch_int4.from_arrays(codes, scale, zero, None, "cpu")
    x = torch.randn(2, torch_int4.DENSE_ROWS, codes.shape[1], generator=torch.Generator().manual_seed(4))
    with torch.inference_mode():
        got, want = layer(x), x @ torch.from_numpy(torch_int4.dequantize(codes, scale, zero)).t()
    assert float((got - want).abs().max() / want.abs().max()) < 0.02


def _layer_arrays(rows: int = 96, cols: int = 512):
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 16, (rows, cols), dtype=np.uint8)
    scale = rng.random((rows, cols // 32), dtype=np.float32) * 0.01
    zero = rng.standard_normal((rows, cols // 32), dtype=np.float32) * 0.01
    return codes, scale, zero


@pytest.fixture
def unpack_verdict():
    """The probe's process-wide verdict, put back after the test (UNPACK_OK is a one-item list)."""
    saved = torch_int4.UNPACK_OK[0]
    yield torch_int4.UNPACK_OK
    torch_int4.UNPACK_OK[0] = saved


def test_prefill_expands_codes_only_where_the_probe_read_them_back(unpack_verdict):
    # torch packs int4 differently per CPU (AVX2 and AVX-512 differ): what the product relies on is the
    # load-time probe's verdict on the running build, and a right answer whichever way it went.
    unpack_verdict[0] = False
    codes, scale, zero = _layer_arrays()
    assert torch_int4.probe(codes, scale, zero, "cpu")[0] is None
    other = np.random.default_rng(5).integers(0, 16, (64, 256), dtype=np.uint8)  # another shape, same build
    reads_back = torch.equal(torch_int4.unpack_cpu(torch_int4.pack(torch.from_numpy(other), "cpu"), 64, 256),
                             torch.from_numpy(other))
    assert torch_int4.UNPACK_OK[0] == reads_back
    if reads_back:  # prefill expands the weight: exactly the codes' dense weight
        layer = torch_int4.from_arrays(codes, scale, zero, None, "cpu")
        expanded = layer.dense_weight(torch.float32)
        sz = layer.scales_and_zeros.float()  # scale and zero as the layer holds them (bfloat16)
        want = torch_int4.dequantize(codes, sz[..., 0].t().numpy(), sz[..., 1].t().numpy())
        np.testing.assert_allclose(expanded.numpy(), want, rtol=1e-6, atol=1e-7)
    _prefill_matches_dense(codes, scale, zero)


def test_a_layout_unpack_cannot_read_keeps_prefill_on_the_kernel(monkeypatch, unpack_verdict):
    # Whatever this machine's layout is, a build whose packing unpack_cpu misreads must be caught by
    # the probe, and prefill must then neither expand the weight nor give a wrong answer.
    real = torch_int4.unpack_cpu
    monkeypatch.setattr(torch_int4, "unpack_cpu", lambda packed, out, inp: 15 - real(packed, out, inp))
    unpack_verdict[0] = True
    codes, scale, zero = _layer_arrays()
    assert torch_int4.probe(codes, scale, zero, "cpu")[0] is None  # the kernel itself is still usable
    assert torch_int4.UNPACK_OK[0] is False

    def must_not_expand(*args):
        raise AssertionError("prefill expanded a weight the probe could not read back")

    monkeypatch.setattr(torch_int4, "unpack_cpu", must_not_expand)
    _prefill_matches_dense(codes, scale, zero)


@pytest.mark.parametrize("kind", ["Q4_0", "Q4_1", "Q4_K"])
@pytest.mark.parametrize("rows", [5, 64])  # decode through the kernel; prefill through the expanded weight
def test_int4_linear_equals_the_dequantized_reference(kind, rows):
    rng = np.random.default_rng(2)
    w = read_int4(_Tensor(kind, 96, 512, _blocks(kind, 96, 512, rng)))
    bias = torch.nn.Parameter(torch.randn(96), requires_grad=False)
    layer = torch_int4.from_arrays(w.codes, w.scale, w.zero, bias, "cpu")
    assert torch_int4.probe(w.codes, w.scale, w.zero, "cpu")[0] is None
    x = torch.randn(3, rows, 512)
    with torch.inference_mode():
        got = layer(x)
        want = x @ torch.from_numpy(w.dequantize()).t() + bias
    assert got.dtype == x.dtype and got.shape == (3, rows, 96)
    assert float((got - want).abs().max() / want.abs().max()) < 0.02


@pytest.fixture
def cache(tmp_path_factory, monkeypatch):
    # One conversion (config and tokenizer) per test session: it is the slow part.
    monkeypatch.setenv("CONFAB_CACHE", str(tmp_path_factory.getbasetemp() / "int4-cache"))


def _reply(engine: Engine) -> list[int]:
    with engine.open_session() as s:
        chunks = list(s.chat([{"role": "user", "content": "hello"}], SamplingParams(temperature=0, max_tokens=6,
                                                                                    ignore_stop=True)))
    return [t for c in chunks for t in c.token_ids]


def test_a_q4_gguf_loads_4bit_and_answers(tiny_q4_gguf, cache, make_engine):
    engine = make_engine(tiny_q4_gguf, "torch", dtype="float32")
    dense = make_engine(tiny_q4_gguf, "torch", dtype="float32", quantize="none")
    assert engine.quantized.startswith("int4: 14 of 15 linear layers")  # the tied output head is Q8_0
    assert dense.quantized == ""
    assert len(_reply(engine)) == 6
    # Each 4-bit weight costs 5/8 of a byte (a half-byte code, a bfloat16 scale and zero per 32)
    # instead of 4: 0.16x of float32, 0.31x of bfloat16; everything else is as dense.
    saved = dense.capacity().weights_bytes - engine.capacity().weights_bytes
    assert saved == LINEAR_ELEMENTS * 4 - LINEAR_ELEMENTS * 5 // 8
    estimate = estimate_memory(str(tiny_q4_gguf), dtype="float32").weights_bytes
    assert estimate == pytest.approx(engine.capacity().weights_bytes, rel=0.001)  # buffers (rotary) aside


@pytest.mark.parametrize("broken, reason", [
    ("missing", "the int4 kernel is not usable here (RuntimeError: simulated: no such op)"),
    ("slow", "the int4 kernel is slow here"),
])
def test_a_missing_or_slow_kernel_falls_back_to_dense(tiny_q4_gguf, cache, make_engine, monkeypatch, caplog,
                                                       broken, reason):
    if broken == "missing":
        def no_kernel(*args, **kwargs):
            raise RuntimeError("simulated: no such op")

        monkeypatch.setattr(torch_int4, "pack", no_kernel)
    else:
        monkeypatch.setattr(torch_int4, "MAX_SLOWDOWN", 0.0)
    with caplog.at_level(logging.WARNING, logger="engine.backends.torch_gguf"):
        engine = make_engine(tiny_q4_gguf, "torch", dtype="float32")
    dense = make_engine(tiny_q4_gguf, "torch", dtype="float32", quantize="none")
    assert engine.quantized == ""
    assert f"loading the GGUF's 4-bit tensors dense: {reason}" in caplog.text
    assert engine.capacity().weights_bytes == dense.capacity().weights_bytes
    assert _reply(engine) == _reply(dense)


def test_a_dense_folder_can_be_quantized_at_load(make_engine, tiny_models):
    dense = make_engine(tiny_models["llama"], "torch")
    engine = make_engine(tiny_models["llama"], "torch", quantize="int4")
    assert engine.quantized == "int4: 14 decoder linear layers, quantized at load"
    assert engine.capacity().weights_bytes < dense.capacity().weights_bytes
    assert len(_reply(engine)) == 6


@pytest.mark.parametrize("bad", ["int8", "4bit", ""])
def test_quantize_is_validated(bad):
    with pytest.raises(InvalidRequestError, match="quantize must be None, 'int4' or 'none'"):
        EngineConfig(quantize=bad)
