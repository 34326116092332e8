"""How many layers go on the GPU and how large a pool fits beside them (engine/backends/llamacpp_offload.py),
on made-up cards and the bundled model's real shape; and what a build without a GPU says of itself."""

from __future__ import annotations

import pytest

from engine.backends.llamacpp_offload import (RESERVE, ModelShape, Offload, compute_bytes, fewer_layers, gpu_bytes,
                                              plan_offload, pool_budget)
from engine.models.gguf_header import read_header

GiB, MiB = 1 << 30, 1 << 20


def llama_8b() -> ModelShape:
    """Llama 3.1 8B in Q4_K_M's sizes: 32 blocks of ~138 MiB, output 0.4 GiB; 128 KiB of K/V per
    token (32 blocks x 8 K/V heads x 128 x 2 x float16)."""
    return ModelShape(tuple([138 * MiB] * 32), 430 * MiB, 4096, 14336, 128256, 8 * 128 * 2 * 2)


def test_a_model_that_fits_goes_on_the_gpu_whole_with_a_pool_of_several_sessions():
    shape = llama_8b()
    plan = plan_offload(shape, shape.kv_per_token_block, 24 * GiB, want_tokens=4 * 8192, min_tokens=8192)
    assert plan == Offload(33, 33, 32768, "the whole model fits the GPU (33/33 layers)")
    assert plan.whole
    used = gpu_bytes(shape, 33, shape.kv_per_token_block, plan.pool_tokens) + compute_bytes(shape, 512) + RESERVE
    assert used < 24 * GiB * 0.95


def test_a_card_too_small_for_the_model_takes_what_fits_and_the_rest_runs_on_the_cpu():
    shape = llama_8b()
    plan = plan_offload(shape, shape.kv_per_token_block, 4 * GiB, want_tokens=4 * 8192, min_tokens=8192)
    assert 0 < plan.layers < 32 and not plan.whole
    assert plan.why.startswith(f"{plan.layers}/33 layers fit the GPU's 4.0 GiB free")
    usable = 4 * GiB * 0.95 - RESERVE - compute_bytes(shape, 512)
    assert gpu_bytes(shape, plan.layers, shape.kv_per_token_block, 8192) <= usable
    assert gpu_bytes(shape, plan.layers + 1, shape.kv_per_token_block, 8192) > usable, "the most that fit"
    assert plan.pool_tokens >= 8192 and plan.pool_tokens % 256 == 0


def test_the_layers_offloaded_are_the_last_blocks_then_the_output_layer():
    shape = ModelShape((1, 10, 100), 1000, 8, 8, 8)
    assert gpu_bytes(shape, 1, 0, 0) == 100
    assert gpu_bytes(shape, 3, 0, 0) == 111
    assert gpu_bytes(shape, 4, 0, 0) == 1111, "the output layer only once every block is on the GPU"
    assert gpu_bytes(shape, 2, 5, 10) == 110 + 2 * 5 * 10, "K/V of the offloaded blocks, for every pool token"


def test_no_room_at_all_means_no_layer_and_a_reason():
    shape = llama_8b()
    plan = plan_offload(shape, shape.kv_per_token_block, 512 * MiB, want_tokens=32768, min_tokens=8192)
    assert plan.layers == 0 and plan.pool_tokens is None
    assert "not one layer fits the GPU's 0.5 GiB free" in plan.why


def test_a_requested_count_is_taken_as_asked_and_clamped():
    shape = llama_8b()
    assert plan_offload(shape, shape.kv_per_token_block, 24 * GiB, 32768, 8192, requested=10).layers == 10
    assert plan_offload(shape, shape.kv_per_token_block, 24 * GiB, 32768, 8192, requested=99).layers == 33
    zero = plan_offload(shape, shape.kv_per_token_block, 24 * GiB, 32768, 8192, requested=0)
    assert zero.layers == 0 and zero.pool_tokens is None


def test_the_pool_shrinks_to_fit_beside_a_whole_model_but_never_below_one_session():
    shape = llama_8b()
    small = plan_offload(shape, shape.kv_per_token_block, 7 * GiB, want_tokens=4 * 8192, min_tokens=8192)
    assert small.whole and 8192 <= small.pool_tokens < 32768


def test_after_a_failed_allocation_fewer_layers_are_tried_down_to_none():
    counts, layers = [], 33
    while layers:
        layers = fewer_layers(layers)
        counts.append(layers)
    assert counts[0] == 25 and counts[-1] == 0 and counts == sorted(counts, reverse=True)


@pytest.mark.parametrize("offload, expected", [
    (None, 100),  # on the CPU: RAM's budget
    (Offload(33, 33, 512, ""), 512 * 2),  # whole on the GPU: the GPU's room alone, RAM does not matter
    (Offload(10, 33, 40, ""), 40 * 2),  # split: the smaller of RAM's, the GPU's and what is wanted
    (Offload(0, 33, None, ""), 100),
])
def test_the_pool_lives_where_the_layers_are(offload, expected):
    assert pool_budget(2, 64, 4, None, ram_budget=100, offload=offload) == expected
    assert pool_budget(2, 64, 4, 7777, ram_budget=100, offload=offload) == 7777, "memory_budget wins"


def test_the_bundled_models_shape_read_from_its_header():
    from engine.models.sources import bundled_gguf

    header = read_header(bundled_gguf("smollm2-135m-instruct"))
    shape = ModelShape.of(header)
    assert shape.blocks == 30 and shape.n_embd == 576 and shape.n_ff == 1536 and shape.n_vocab == 49152
    assert shape.kv_per_token_block == 3 * 64 * 2 * 2  # 3 K/V heads of 64, K and V, float16
    assert shape.output_bytes == header.tensor_bytes["token_embd.weight"] + header.tensor_bytes["output_norm.weight"]
    assert sum(shape.block_bytes) + shape.output_bytes == sum(header.tensor_bytes.values())
