"""The torch backend's per-session K/V: preallocated buffers grown in chunks, written in place.

transformers' DynamicLayer appends with torch.cat, copying the whole history every token. Here each
full-attention layer owns a (batch, kv heads, capacity, head dim) buffer, grown by `KV_CHUNK` tokens at
a time, and the model sees views of its filled part. The same layer holds a batch (left-padded rows),
so a failed step is undone exactly by restoring the length. Sliding-window and recurrent layers keep
transformers' own classes: those models step one session per forward anyway.

It is a transformers CacheLayer (not a hand-written forward) so every supported architecture's own
attention code keeps working; marking it "compileable" makes transformers build a real decode mask,
which sends attention down SDPA's masked grouped-query path instead of the unmasked `enable_gqa`
one (several times slower on CPU at long context).
"""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer, DynamicSlidingWindowLayer

from ..capacity import KV_CHUNK
from ..errors import StateFileError


def rounded(tokens: int) -> int:
    """Buffer capacity holding `tokens`: the next multiple of KV_CHUNK (at least one chunk)."""
    return max(1, -(-tokens // KV_CHUNK)) * KV_CHUNK


class ChunkedLayer(DynamicLayer):
    """One full-attention layer's K/V in a preallocated buffer; `keys`/`values` view its filled part."""

    is_compileable = True  # only read by masking_utils: build the decode mask (fast masked SDPA path)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.buf_k: torch.Tensor | None = None
        self.buf_v: torch.Tensor | None = None
        self.length = 0

    @classmethod
    def holding(cls, keys: torch.Tensor, values: torch.Tensor, capacity: int = 0) -> "ChunkedLayer":
        """A layer holding copies of `keys`/`values` (batch, heads, tokens, dim), room for `capacity` tokens."""
        layer = cls()
        layer.dtype, layer.device = keys.dtype, keys.device
        layer._allocate(keys, values, rounded(max(capacity, keys.shape[-2])))
        layer.buf_k[:, :, : keys.shape[-2]] = keys
        layer.buf_v[:, :, : values.shape[-2]] = values
        layer.is_initialized = True
        layer.set_length(keys.shape[-2])
        return layer

    def _allocate(self, keys: torch.Tensor, values: torch.Tensor, capacity: int) -> None:
        b, h, _, dk = keys.shape
        self.buf_k = torch.zeros((b, h, capacity, dk), dtype=keys.dtype, device=keys.device)
        self.buf_v = torch.zeros((b, h, capacity, values.shape[-1]), dtype=values.dtype, device=values.device)

    @property
    def capacity(self) -> int:
        return 0 if self.buf_k is None else self.buf_k.shape[-2]

    def set_length(self, n: int) -> None:
        """Make the first `n` positions the filled part (a rollback or trim only moves this mark)."""
        self.length = n
        self.keys = self.buf_k[:, :, :n]
        self.values = self.buf_v[:, :, :n]

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        self._allocate(key_states, value_states, rounded(key_states.shape[-2]))
        self.is_initialized = True
        self.set_length(0)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, q = self.length, key_states.shape[-2]
        if n + q > self.capacity:  # grow by whole chunks: one copy per KV_CHUNK tokens, not per token
            old_k, old_v = self.buf_k, self.buf_v
            self._allocate(old_k, old_v, rounded(n + q))
            self.buf_k[:, :, :n] = old_k[:, :, :n]
            self.buf_v[:, :, :n] = old_v[:, :, :n]
        self.buf_k[:, :, n : n + q] = key_states
        self.buf_v[:, :, n : n + q] = value_states
        self.set_length(n + q)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def get_max_length(self) -> int:
        return -1

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove > 0:
            raise ValueError("crop takes a negative count of tokens to remove")
        if tokens_to_remove and self.is_initialized:
            self.set_length(max(0, self.length + tokens_to_remove))

    def reset(self) -> None:
        self.buf_k = self.buf_v = None
        self.length = 0
        super().reset()

    def nbytes(self) -> int:
        """Bytes the buffers hold (capacity, not only the filled part: that is what memory pays)."""
        if self.buf_k is None:
            return 0
        return self.buf_k.numel() * self.buf_k.element_size() + self.buf_v.numel() * self.buf_v.element_size()

    def batch_repeat_interleave(self, repeats: int) -> None:  # beam search: not used by the engine
        raise NotImplementedError

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        raise NotImplementedError


def new_cache(config) -> DynamicCache:
    """An empty session cache: chunked layers when every layer is full attention, else transformers' own."""
    cache = DynamicCache(config=config)
    if cache.layers and all(type(layer) is DynamicLayer for layer in cache.layers):
        cache.layers = [ChunkedLayer() for _ in cache.layers]
    return cache


def is_chunked(cache) -> bool:
    layers = getattr(cache, "layers", None)
    return bool(layers) and all(type(layer) is ChunkedLayer and layer.is_initialized for layer in layers)


def cache_nbytes(cache) -> int:
    total = 0
    for layer in cache.layers:
        if isinstance(layer, ChunkedLayer):
            total += layer.nbytes()
            continue
        for name in ("keys", "values", "conv_states", "recurrent_states"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor):
                total += t.numel() * t.element_size()
    return total


# -- batches: the same layer type, one left-padded row per member ---------------------------------
def merge(caches: list, lengths: list[int]) -> DynamicCache:
    """One cache whose row i holds cache i right-aligned at the longest length (left padding zeroed)."""
    width = max(lengths)
    layers = []
    for i, first in enumerate(caches[0].layers):
        k0, v0 = first.keys, first.values
        rows = len(caches)
        layer = ChunkedLayer()
        layer.dtype, layer.device = k0.dtype, k0.device
        like_k = k0.new_empty((rows, k0.shape[1], 0, k0.shape[-1]))
        layer._allocate(like_k, v0.new_empty((rows, v0.shape[1], 0, v0.shape[-1])), rounded(width + 1))
        for row, (cache, n) in enumerate(zip(caches, lengths)):
            src = cache.layers[i]
            layer.buf_k[row, :, width - n : width] = src.keys[0]
            layer.buf_v[row, :, width - n : width] = src.values[0]
        layer.is_initialized = True
        layer.set_length(width)
        layers.append(layer)
    cache = DynamicCache()
    cache.layers = layers
    return cache


def rollback(cache, width: int) -> None:
    """Undo a failed step: every layer back to `width` filled positions (what was written past it is ignored)."""
    for layer in cache.layers:
        if layer.is_initialized and layer.length != width:
            layer.set_length(width)


def split_row(cache, row: int, n: int) -> DynamicCache:
    """Member `row`'s own cache (its last `n` positions), copied out of the batch."""
    out = DynamicCache()
    out.layers = [
        ChunkedLayer.holding(layer.keys[row : row + 1, :, -n:], layer.values[row : row + 1, :, -n:])
        for layer in cache.layers
    ]
    return out


# -- save / restore -------------------------------------------------------------------------------
def saved_tensors(cache) -> tuple[dict[str, torch.Tensor], list[int]]:
    """Each layer's filled K/V (CPU, contiguous) and its token count; refuse state that cannot be saved."""
    tensors, lengths = {}, []
    for i, layer in enumerate(cache.layers):
        if not isinstance(layer, (DynamicLayer, ChunkedLayer)) or getattr(layer, "record_past", False):
            raise StateFileError(f"this model's {type(layer).__name__} state cannot be saved (only K/V caches can)")
        lengths.append(layer.get_seq_length() if layer.is_initialized else 0)
        if layer.is_initialized and layer.keys is not None and layer.keys.numel():
            tensors[f"{i}.keys"] = layer.keys.contiguous().cpu()
            tensors[f"{i}.values"] = layer.values.contiguous().cpu()
    return tensors, lengths


def restored(config, data: list, lengths: list[int] | None) -> DynamicCache:
    """A session cache of this model's layer kinds holding `data` [(keys, values) or (None, None)]."""
    cache = new_cache(config)
    if len(cache.layers) != len(data):
        raise StateFileError(f"the state holds {len(data)} layers; this model has {len(cache.layers)}")
    for i, ((k, v), layer) in enumerate(zip(data, cache.layers)):
        if k is None:
            continue
        if isinstance(layer, ChunkedLayer):
            cache.layers[i] = ChunkedLayer.holding(k, v)
            continue
        layer.lazy_initialization(k, v)
        layer.keys, layer.values = k, v
        if isinstance(layer, DynamicSlidingWindowLayer):
            # the layer keeps only its window, so its true length must come from the file
            if lengths is None:
                raise StateFileError("the state does not record its sliding-window layers' lengths")
            layer.cumulative_length = int(lengths[i])
    return cache
