"""How many of a GGUF model's layers go on the GPU, and how large a K/V pool fits beside them.

    shape = ModelShape.of(read_header(path))
    plan = plan_offload(shape, kv_bytes_per_token, gpu_free, want_tokens=16384, min_tokens=4096)
    params.n_gpu_layers = plan.layers            # 31 of 31 layers: every block and the output layer

llama.cpp (0.3.16) offloads what it is told (`n_gpu_layers`) and fails to load when that does not
fit; `-1` ("all") on a card too small for the model is a failed load, not a slower one. LM Studio and
Ollama count what fits; so does this, from the file's own tensor sizes and the card's free memory:

- llama.cpp's count: the last `layers` blocks go on the GPU, and the output layer too once `layers`
  exceeds the block count (so a 30-block model is "31/31 layers" when whole); the token embeddings
  stay in RAM (llama.cpp reads rows of them on the CPU).
- A block on the GPU holds its weights and its K/V for every token of the pool; the pool's size in
  tokens is one for the whole context, so the GPU's share is (blocks on it) x (pool tokens).
- The GPU also needs llama.cpp's compute buffer (a step's activations and its logits) and room for
  the CUDA libraries' own workspaces (RESERVE).

Layers come first: the most blocks that fit with a pool of one session at full context, then the
largest pool (up to what was wanted) that those blocks leave room for. Pure arithmetic: tested on
made-up cards here, and checked on a real one by the GPU proof (README).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..errors import CapacityError

RESERVE = 512 << 20
"""GPU bytes left free for what llama.cpp does not count up front: cuBLAS's workspace, CUDA graphs,
the driver's own allocations during the first steps."""
HEADROOM = 0.05
"""And this share of the free memory, for allocations that round up."""


@dataclass(frozen=True)
class ModelShape:
    """What the plan needs of a model, read from its GGUF header."""

    block_bytes: tuple[int, ...]
    """Weight bytes of each repeating block, in order."""
    output_bytes: int
    """The output layer (with its norm); the token embeddings' size when the output is tied to them
    (llama.cpp then places a copy with the output layer)."""
    n_embd: int
    n_ff: int
    n_vocab: int
    kv_per_token_block: int = 0
    """K and V bytes of one token in one block, float16 (llama.cpp's default cache type)."""

    @property
    def blocks(self) -> int:
        return len(self.block_bytes)

    @classmethod
    def of(cls, header) -> "ModelShape":
        """From an engine.models.gguf_header.GgufHeader."""
        meta, tensors = header.meta, header.tensor_bytes
        arch = meta.get("general.architecture", "llama")
        n_blocks = int(meta.get(f"{arch}.block_count") or 0)
        blocks = [0] * n_blocks
        output = 0
        for name, nbytes in tensors.items():
            if name.startswith("blk."):
                index = int(name.split(".")[1])
                if index < n_blocks:
                    blocks[index] += nbytes
            elif name.startswith("output"):
                output += nbytes
        if "output.weight" not in tensors:  # tied to the token embeddings
            output += tensors.get("token_embd.weight", 0)
        ff = _most(meta.get(f"{arch}.feed_forward_length"))
        vocab = meta.get(f"{arch}.vocab_size") or header.array_lengths.get("tokenizer.ggml.tokens", 0)
        n_embd = int(meta.get(f"{arch}.embedding_length") or 0)
        heads = _most(meta.get(f"{arch}.attention.head_count")) or 1
        kv_heads = _most(meta.get(f"{arch}.attention.head_count_kv")) or heads
        k = meta.get(f"{arch}.attention.key_length") or n_embd // heads
        v = meta.get(f"{arch}.attention.value_length") or n_embd // heads
        return cls(tuple(blocks), output, n_embd, int(ff), int(vocab), int(kv_heads * (k + v) * 2))


def _most(value) -> int:
    """A per-layer count (a tuple in some models' GGUF) as its largest value."""
    return int(max(value) if isinstance(value, tuple) else value or 0)


@dataclass(frozen=True)
class Offload:
    """What goes on the GPU."""

    layers: int
    """llama.cpp's n_gpu_layers: blocks from the last one back, and the output layer when > blocks."""
    total: int
    """Blocks + 1 (the output layer): "layers/total layers" as llama.cpp logs it."""
    pool_tokens: Optional[int]
    """The most K/V pool tokens the GPU holds beside those layers (None: no block is on the GPU, the
    pool is in RAM alone)."""
    why: str

    @property
    def whole(self) -> bool:
        return self.layers >= self.total


def compute_bytes(shape: ModelShape, n_ubatch: int) -> int:
    """llama.cpp's compute buffer on the GPU, roughly: a micro-batch's activations (hidden states,
    the feed-forward's intermediate) and its logits (flash attention keeps no attention matrix)."""
    return n_ubatch * 4 * (shape.n_vocab + 3 * shape.n_ff + 8 * shape.n_embd)


def gpu_bytes(shape: ModelShape, layers: int, kv_per_token_block: int, tokens: int) -> int:
    """Weights and K/V the GPU holds with `layers` offloaded and a pool of `tokens`."""
    blocks = min(layers, shape.blocks)
    weights = sum(shape.block_bytes[shape.blocks - blocks:]) + (shape.output_bytes if layers > shape.blocks else 0)
    return weights + blocks * kv_per_token_block * tokens


def plan_offload(shape: ModelShape, kv_per_token_block: int, gpu_free: int, want_tokens: int, min_tokens: int,
                 n_ubatch: int = 512, requested: Optional[int] = None, step: int = 256) -> Offload:
    """The layers to offload and the pool the GPU holds beside them.

    kv_per_token_block: K and V bytes one token takes in one block. gpu_free: the card's free bytes
    (every GPU's, summed, where llama.cpp splits layers across several). want_tokens: the pool wanted
    (as on the CPU); min_tokens: one session at full context. requested: the user's count (None:
    auto). Pool tokens are rounded down to `step` (llama.cpp sizes its cache in such steps)."""
    total = shape.blocks + 1
    usable = int(gpu_free * (1 - HEADROOM)) - RESERVE - compute_bytes(shape, n_ubatch)
    if requested is not None:
        layers = max(0, min(requested, total))
        why = f"{layers}/{total} layers on the GPU, as asked"
    else:
        layers = next((n for n in range(total, 0, -1)
                       if gpu_bytes(shape, n, kv_per_token_block, min_tokens) <= usable), 0)
        if layers == total:
            why = f"the whole model fits the GPU ({total}/{total} layers)"
        elif layers:
            why = (f"{layers}/{total} layers fit the GPU's {gpu_free / 2**30:.1f} GiB free; the rest run on the CPU")
        else:
            why = f"not one layer fits the GPU's {gpu_free / 2**30:.1f} GiB free beside a {min_tokens}-token session"
    if layers == 0:
        return Offload(0, total, None, why)
    per_token = min(layers, shape.blocks) * kv_per_token_block
    room = usable - gpu_bytes(shape, layers, kv_per_token_block, 0)
    fits = room // per_token // step * step if per_token else want_tokens
    return Offload(layers, total, max(min_tokens, min(want_tokens, fits)), why)


def fewer_layers(layers: int) -> int:
    """The next count to try after llama.cpp could not allocate `layers` (other programs took the
    memory between the plan and the load): a quarter fewer, down to none."""
    return max(0, layers - max(1, layers // 4))


@dataclass(frozen=True)
class Placement:
    """Where a loaded model runs, for the status bar, /v1/models and the engine's reason."""

    backend: str
    """The GPU backend ("CUDA", "Vulkan", "Metal"); "" when no layer is on a GPU."""
    card: str
    """The card's name ("NVIDIA GeForce RTX 4070"); "" on the CPU."""
    layers: int
    total: int
    why: str
    """Why this many layers, in a sentence (or why none: "this llama.cpp build has no GPU backend")."""

    @property
    def device(self) -> str:
        """The engine's device name: "cuda", "vulkan", "metal", or "cpu" when no layer is offloaded."""
        return self.backend.lower() if self.layers and self.backend else "cpu"

    def describe(self) -> str:
        """"RTX 4070 · 31/31 layers"; "" on the CPU."""
        if not self.layers:
            return ""
        from .llamacpp_devices import short_card_name

        return f"{short_card_name(self.card)} · {self.layers}/{self.total} layers"


def pool_budget(per_token: int, max_context: int, sessions: int, memory_budget: Optional[int], ram_budget: int,
                offload: Optional[Offload]) -> int:
    """Bytes the K/V pool may take: the user's memory_budget when given; else `sessions` sessions at
    max_context, within what the memory that holds the pool has room for: the GPU's alone when every
    layer is on it, both the GPU's and RAM's when the model is split, RAM's on the CPU."""
    if memory_budget is not None:
        return memory_budget
    wanted = sessions * max_context * per_token
    if offload is not None and offload.layers and offload.pool_tokens is not None:
        gpu = offload.pool_tokens * per_token
        return gpu if offload.whole else min(wanted, ram_budget, gpu)
    return min(ram_budget, wanted)


def pool_tokens(per_token: int, max_context: int, sessions: int, memory_budget: Optional[int], ram_budget: int,
                offload: Optional[Offload], step: int) -> int:
    """The pool's size in tokens: memory_budget's worth when given, else `sessions` sessions at
    max_context lowered to what the memory holding the pool has room for (`pool_budget`), in whole
    `step`s of cells (llama.cpp's padding), never less than one session; CapacityError when the
    budget cannot hold one session."""
    budget = pool_budget(per_token, max_context, sessions, memory_budget, ram_budget, offload)
    tokens = budget // per_token
    if tokens < max_context:
        raise CapacityError(
            f"the memory budget ({budget / 2**20:.1f} MiB) cannot hold one session "
            f"({max_context * per_token / 2**20:.1f} MiB at max_context); raise memory_budget or lower max_context"
        )
    # round down, so the budget holds, but never below one session at max_context
    whole = -(-max_context // step) * step
    return max(whole, tokens // step * step)
