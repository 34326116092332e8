"""What a llama.cpp load asks for, read from the engine's config and this build: how many layers go
on the GPU, with the pool they leave room for (the sums are llamacpp_offload.py's), and the pool's
tokens and sequences once the model is open. Kept apart from the backend (llamacpp.py), which opens
the model and context with these sizes and steps them.
"""

from __future__ import annotations

import math

import llama_cpp as lc

from .. import capacity
from ..kv_cache_type import kv_element_bytes
from ..models.gguf_header import read_header
from . import llamacpp_offload as offload_plan
from .llamacpp_library import GPU_INIT_ERRORS, POOL_SESSIONS, POOL_STEP
from .native import backends_in


def offload_for(backend, devices: list) -> "offload_plan.Offload":
    """How many layers go on the GPU (none without one) and the pool they leave room for."""
    if not devices:
        built = [b for b in backends_in(lc.llama_print_system_info().decode(errors="replace")) if b != "CPU"]
        said = f" (it said: {GPU_INIT_ERRORS[-1]})" if GPU_INIT_ERRORS else ""
        why = (backend._cpu_why if backend._cpu_why else "asked to run on the CPU" if backend.device_asked == "cpu" else
               f"this llama.cpp is built for {', '.join(built)} but found no GPU{said}: is the driver installed "
               "and working?" if built else "this llama.cpp build has no GPU backend (bootstrap.py setup builds one)")
        return offload_plan.Offload(0, 0, None, why)
    shape = offload_plan.ModelShape.of(read_header(backend._path))
    cfg = backend.config
    # the header's figure is float16's; a quantized cache type takes its share of it
    kv_block = math.ceil(shape.kv_per_token_block * (kv_element_bytes(cfg.cache_type_k)
                                                      + kv_element_bytes(cfg.cache_type_v)) / 4)
    per_token = kv_block * max(shape.blocks, 1)
    whole = -(-cfg.max_context // POOL_STEP) * POOL_STEP
    if cfg.memory_budget is not None:
        want = least = max(whole, cfg.memory_budget // max(per_token, 1))
    else:
        want, least = POOL_SESSIONS * whole, whole
    return offload_plan.plan_offload(shape, kv_block, sum(d.free for d in devices), want, least,
                                     n_ubatch=min(512, backend.kernel_path.max_ubatch or 512),
                                     requested=cfg.gpu_layers, step=POOL_STEP)


def pool_size(backend, per_token: int, offload: "offload_plan.Offload") -> tuple[int, int]:
    """(pool tokens, sequences): llamacpp_offload.pool_tokens, and as many sequences as asked for
    that llama.cpp has ids for (two ids are kept: the retired cells', a scratch one)."""
    cfg = backend.config
    most = lc.llama_max_parallel_sequences() - 2
    tokens = offload_plan.pool_tokens(per_token, cfg.max_context, POOL_SESSIONS, cfg.memory_budget,
                                      capacity.default_budget(backend.available_memory()), offload, POOL_STEP)
    return tokens, int(min(cfg.max_sessions or most, most))
