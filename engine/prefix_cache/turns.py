"""Where turns meet the prompt cache on disk: a new turn reads back the longest run of its prompt's
blocks the cache holds beyond what its session keeps (or shares); a prompt that has been read saves
the blocks the cache lacks, once its first token is out (so no reply waits for the disk).

The server's pool and live sharing come first (the session's own cells, then another session's:
engine/prefix_share.py), since cells already in the pool cost nothing; the disk serves what neither
holds: a restarted server, a conversation opened again, a prompt whose sessions were closed.
llama.cpp only, for now (the backend reads and writes spans of a sequence: llamacpp_blocks.py); torch
and MLX engines run without it (`Engine.prefix_cache_reason` says so).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..errors import CapacityError
from ..images import span_floor
from .store import BLOCK, PrefixCache

if TYPE_CHECKING:
    from ..steps import Slot

log = logging.getLogger(__name__)

MIN_GAIN = 64
"""Fewer tokens than this over what the session keeps are computed rather than read: reading a
block means dropping the session's own cells from that block's start."""


def open_cache(backend: Any, model: Any, config: Any) -> tuple[Optional[PrefixCache], str]:
    """The engine's prompt cache (EngineConfig.prefix_cache_dir, prefix_cache_bytes) and, in one line,
    where it is or why there is none."""
    folder, cap = config.prefix_cache_dir, config.prefix_cache_bytes
    if not folder or cap <= 0:
        return None, "off: no folder given" if not folder else "off: a cap of 0 bytes"
    layout = getattr(backend, "kv_layout", None)
    if layout is None:
        return None, f"off: prompts are cached on disk on llama.cpp only; this model runs on {backend.name}"
    identity = layout()
    if identity is None:
        return None, "off: this model's memory is not attention cells alone (recurrent or sliding-window)"
    try:
        cache = PrefixCache(Path(folder), cap, {"backend": backend.name, "model": model.fingerprint, **identity})
    except OSError as e:
        log.warning("prompt cache off: %s cannot be used: %s", folder, e)
        return None, f"off: {folder} cannot be used ({e})"
    return cache, f"on: {cache.describe()}"


def take_cached_prefix(worker: Any, slot: "Slot", prompt: list[int], keep: int) -> int:
    """Read back the cache's blocks of `prompt` beyond `keep` (the positions the slot holds) when
    they gain MIN_GAIN or more; the positions of `prompt` the slot holds afterwards. `worker`: the
    engine's Worker (not imported: the worker imports this)."""
    cache: Optional[PrefixCache] = worker.prefix_cache
    if cache is None:
        return keep
    limit = len(prompt) - 1  # one prompt token is always computed: its logits start the reply
    keys = cache.chain(prompt, limit // BLOCK)
    first = keep // BLOCK  # blocks below hold nothing the slot lacks
    end = first
    while end < len(keys) and cache.holds(keys[end]):
        end += 1
    while end > first and span_floor(prompt, end * BLOCK) != end * BLOCK:  # never inside an image
        end -= 1
    if end * BLOCK < keep + MIN_GAIN:
        return keep
    backend, base = worker.backend, first * BLOCK
    if slot.state is not None and len(slot.fed) > base:
        if not backend.trim(slot.state, len(slot.fed) - base):
            return keep
        slot.fed = slot.fed[:base]
    if slot.state is None:
        try:
            slot.state = backend.new_state()
        except CapacityError:
            return keep
    for i in range(first, end):
        start = i * BLOCK
        data = cache.read(keys[i], prompt[start:start + BLOCK], start)
        if data is None or not backend.write_span(slot.state, data, start, start + BLOCK):
            break  # the blocks read so far stay; the rest of the prompt is computed
        slot.fed = list(prompt[:start + BLOCK])
    cache.touch(keys[:end])
    return len(slot.fed)


def save_prompt_blocks(worker: Any, slot: "Slot", prompt: list[int]) -> None:
    """Write the whole blocks of `prompt` (which the slot has just read) that the cache lacks, and
    mark the prompt's chain used. A failure is logged, never the reply's: the cache is only a cache."""
    cache: Optional[PrefixCache] = worker.prefix_cache
    if cache is None or slot.state is None or slot.fed[:len(prompt)] != prompt:
        return
    keys = cache.chain(prompt, len(prompt) // BLOCK)
    try:
        for i, key in enumerate(keys):
            if cache.holds(key):
                continue
            start = i * BLOCK
            data = worker.backend.read_span(slot.state, start, start + BLOCK)
            if data is None:  # llama.cpp cannot cut it out (an M-RoPE image in it): not cached, the next may be
                continue
            if not cache.write(key, prompt[start:start + BLOCK], start, data, set(keys)):
                break  # no room beside this prompt's own blocks (or the disk said no): deeper ones are useless
        cache.touch(keys)
    except Exception:
        log.warning("could not save a prompt's blocks to the prompt cache", exc_info=True)
