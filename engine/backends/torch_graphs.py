"""Batched decode over static-address buffers, captured once per batch-size bucket as a CUDA graph.

Eager decode of a small model on a GPU is launch-bound: most of a step is the CPU issuing hundreds of
small kernels. A CUDA graph replays the whole step with one launch, but only over tensors that never
move, so the batch lives here in one arena: per layer a (max rows, kv heads, capacity, head dim) K/V
buffer, plus static token, position and mask inputs. A graph is captured per bucket of rows
(1, 2, 4, 8, 16) over the first rows of the same buffers; a batch is padded up to its bucket (pad rows
attend to one zero column; their outputs are dropped). Each step writes at the column held in a device
tensor and attends over the whole capacity under a 4-D mask, so shapes never change. Prefill stays
eager (torch.py). Where no GPU is present the same arena runs eagerly (capture=False), which is how
the tests check it against the ordinary batched path.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import torch
from transformers.cache_utils import CacheLayerMixin, DynamicCache

from . import torch_cache

BUCKETS = (1, 2, 4, 8, 16)


def bucket_for(rows: int) -> Optional[int]:
    """The smallest captured batch size holding `rows`; None above the largest (that batch runs eagerly)."""
    return next((b for b in BUCKETS if b >= rows), None) if rows > 0 else None


def padded(values: list[int], bucket: int, fill: int = 0) -> list[int]:
    """`values` followed by `fill` up to `bucket` entries (the pad rows of a graph's batch)."""
    if len(values) > bucket:
        raise ValueError(f"{len(values)} rows do not fit a bucket of {bucket}")
    return list(values) + [fill] * (bucket - len(values))


class StaticRowsLayer(CacheLayerMixin):
    """A view of the arena's K/V for one layer: writes this step's K/V at column `col`, in place."""

    is_compileable = True
    is_sliding = False

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, col: torch.Tensor) -> None:
        super().__init__()
        self.keys, self.values, self.col = keys, values, col
        self.is_initialized = True

    def lazy_initialization(self, key_states, value_states) -> None:  # the arena allocated everything
        pass

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        self.keys.index_copy_(2, self.col, key_states)
        self.values.index_copy_(2, self.col, value_states)
        return self.keys, self.values

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.keys.shape[2], 0

    def get_seq_length(self) -> int:
        # Never used for positions or the mask: the arena passes both explicitly.
        return self.keys.shape[2]

    def get_max_length(self) -> int:
        return self.keys.shape[2]


class DecodeArena:
    """The resident batch's state at fixed addresses, and the decode step per bucket (a graph on CUDA)."""

    def __init__(self, model, max_rows: int, capacity: int, device: str, dtype: torch.dtype) -> None:
        c = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
        heads = c.num_attention_heads
        kv_heads = getattr(c, "num_key_value_heads", None) or heads
        head_dim = getattr(c, "head_dim", None) or c.hidden_size // heads
        self.model, self.max_rows, self.capacity = model, max_rows, capacity
        shape = (max_rows, kv_heads, capacity, head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(c.num_hidden_layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(c.num_hidden_layers)]
        self.col = torch.zeros(1, dtype=torch.long, device=device)
        self.ids = torch.zeros((max_rows, 1), dtype=torch.long, device=device)
        self.positions = torch.zeros((max_rows, 1), dtype=torch.long, device=device)
        self.mask = torch.zeros((max_rows, 1, 1, capacity), dtype=torch.bool, device=device)
        self.graphs: dict[int, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}
        self.rows = 0
        self.width = 0
        self.lengths: list[int] = []
        self.in_use = False

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.keys + self.values)

    def _forward(self, bucket: int) -> torch.Tensor:
        cache = DynamicCache()
        cache.layers = [StaticRowsLayer(k[:bucket], v[:bucket], self.col) for k, v in zip(self.keys, self.values)]
        out = self.model(
            input_ids=self.ids[:bucket], attention_mask=self.mask[:bucket], position_ids=self.positions[:bucket],
            past_key_values=cache, use_cache=True, logits_to_keep=1,
        )
        return out.logits[:, -1]

    def capture(self, report: Callable[[float, str], None] = lambda f, m: None) -> None:
        """Capture one graph per bucket up to max_rows (CUDA only); warm-up runs first on a side stream."""
        buckets = [b for b in BUCKETS if b <= self.max_rows]
        self.mask.zero_()
        self.mask[:, 0, 0, 0] = True
        self.col.zero_()
        for i, bucket in enumerate(buckets):
            report(i / len(buckets), f"capturing the decode step for {bucket} session(s)")
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):
                    self._forward(bucket)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                logits = self._forward(bucket)
            self.graphs[bucket] = (graph, logits)
        report(1.0, f"decode step captured for {len(buckets)} batch sizes")

    # -- the resident batch ------------------------------------------------------------------------
    def load(self, states: list, lengths: list[int]) -> None:
        """Copy `states` in, right-aligned at the longest (the states are not changed)."""
        if len(states) > self.max_rows or max(lengths) + 1 > self.capacity:
            raise ValueError("the batch does not fit the arena")
        width = max(lengths)
        self.mask.zero_()
        self.mask[:, 0, 0, 0] = True  # pad rows attend to one column: no empty softmax
        for row, (state, n) in enumerate(zip(states, lengths)):
            for i, layer in enumerate(state.layers):
                self.keys[i][row, :, width - n : width] = layer.keys[0]
                self.values[i][row, :, width - n : width] = layer.values[0]
            self.mask[row, 0, 0] = False
            self.mask[row, 0, 0, width - n : width] = True
        self.rows, self.width, self.lengths, self.in_use = len(states), width, list(lengths), True

    def step(self, token_ids: list[int]) -> np.ndarray:
        """One token per row; float32 logits per row. On error the arena is as before (exact)."""
        rows, width = self.rows, self.width
        if width + 1 > self.capacity:
            raise ValueError("the batch is full: no column left in the arena")
        bucket = bucket_for(rows)
        self.ids[:bucket, 0] = torch.tensor(padded(token_ids, bucket), dtype=torch.long)
        self.positions[:bucket, 0] = torch.tensor(padded(self.lengths, bucket), dtype=torch.long)
        self.col.fill_(width)
        self.mask[:rows, 0, 0, width] = True
        try:
            if bucket in self.graphs:
                graph, out = self.graphs[bucket]
                graph.replay()
            else:
                out = self._forward(bucket)
            logits = out[:rows].float().cpu().numpy()
        except BaseException:
            self.mask[:rows, 0, 0, width] = False  # what the step wrote at `width` is never read
            raise
        self.width += 1
        self.lengths = [n + 1 for n in self.lengths]
        return logits

    def split(self) -> list:
        """Each member's own chunked cache again (copies), and the arena free for the next batch."""
        states = []
        for row, n in enumerate(self.lengths):
            cache = DynamicCache()
            cache.layers = [
                torch_cache.ChunkedLayer.holding(
                    k[row : row + 1, :, self.width - n : self.width], v[row : row + 1, :, self.width - n : self.width]
                )
                for k, v in zip(self.keys, self.values)
            ]
            states.append(cache)
        self.in_use = False
        return states
