"""A span of a sequence's positions read out as bytes and written back, for the prompt cache on disk
(engine/prefix_cache/): blocks of positions rather than whole sequences, so a prompt's blocks are
stored once, and a prompt that starts with them reads back only the blocks it lacks.

llama.cpp reads and writes whole sequences only (`llama_state_seq_get_data` / `set_data`; set_data
empties its sequence first). So a span goes through a scratch sequence id that no session gets:
reading, the span's cells take the scratch id too (`llama_memory_seq_cp`: no K/V is copied) and the
scratch sequence is read; writing, the bytes go into the scratch sequence, whose cells are then handed
to the session's sequence the same way. The written cells land above `top` in one run, in position
order, as a step's do (llamacpp_cells.py), so the session reads the same keys in the same order as if
it had computed them: the same logits, the same tokens (tests/engine/test_prefix_cache.py).

Spans are of tokens; llama.cpp's calls take positions (llamacpp_positions.py). An M-RoPE image's
cells all hold one position, so a span holding any of it cannot be cut out by position: such spans
are not read (None), and the cache keeps the text blocks around them.
"""

from __future__ import annotations

import ctypes
import hashlib
from pathlib import Path
from typing import Optional

import llama_cpp as lc

from .llamacpp_cells import read_sequence
from .llamacpp_library import Seq
from .llamacpp_positions import touches


def kv_layout(backend) -> Optional[dict[str, str]]:
    """What a block's bytes depend on besides the model and its tokens, for the cache's key; None
    where blocks cannot be cached (memory that is not attention cells alone: recurrent or hybrid state,
    a sliding window that llama.cpp prunes by itself)."""
    if backend.cells is None or not backend.cells.ordered or backend._swa:
        return None
    placement = backend.placement
    vision = backend.vision
    return {
        "library": f"llama-cpp-python {getattr(lc, '__version__', '?')}",
        "kv": f"{backend.kv_cache} (keys/values), flash attention, unified",  # a cache type's blocks only for it
        # where and how the cells were computed: another kernel path or device rounds differently
        "kernels": f"{backend.kernel_path.name if backend.kernel_path else '?'}, n_ubatch {backend.n_ubatch}",
        "device": f"{backend.device}, {placement.layers if placement else 0} layers offloaded",
        "vision": _file_identity(vision.path) if vision is not None else "",
    }


def read_span(backend, seq: Seq, start: int, end: int):
    """The bytes of `seq`'s tokens [start, end) as llama.cpp serializes a sequence (a ctypes array);
    None where they hold part of an M-RoPE image."""
    if not 0 <= start < end <= seq.n_past:
        raise ValueError(f"positions {start}-{end} of a sequence holding {seq.n_past}")
    if touches(seq.places, start, end):
        return None
    mem, scratch = backend._mem, backend.scratch_id
    lc.llama_memory_seq_cp(mem, seq.id, scratch, seq.position(start), seq.position(end))
    try:
        return read_sequence(backend.ctx, scratch)
    finally:
        lc.llama_memory_seq_rm(mem, scratch, -1, -1)  # the cells stay: they are still `seq`'s


def write_span(backend, seq: Seq, data: bytearray, start: int, end: int) -> bool:
    """Append the bytes `read_span` gave for tokens [start, end) to `seq`, which holds exactly
    `start` tokens; False (`seq` unchanged) where the bytes do not fit this context or those positions
    (text, one position per token: read_span reads no span with an M-RoPE image in it)."""
    if seq.n_past != start or end <= start:
        return False
    n, at = end - start, seq.position()
    mem, scratch = backend._mem, backend.scratch_id
    backend.cells.make_room(n, backend._live)
    buf = (ctypes.c_uint8 * len(data)).from_buffer(data)
    read = lc.llama_state_seq_set_data(backend.ctx, buf, len(data), scratch)
    if (not read or lc.llama_memory_seq_pos_min(mem, scratch) != at
            or lc.llama_memory_seq_pos_max(mem, scratch) != at + n - 1):
        lc.llama_memory_seq_rm(mem, scratch, -1, -1)  # whatever it placed is at the top: no hole is left
        return False
    lc.llama_memory_seq_cp(mem, scratch, seq.id, -1, -1)
    lc.llama_memory_seq_rm(mem, scratch, -1, -1)
    backend.cells.placed(n, (seq.id, at, at + n))
    seq.n_past = end
    return True


def _file_identity(path: Path) -> str:
    """The vision projector's name, size and a hash of its head: image positions' K/V depend on it."""
    path = Path(path)
    with path.open("rb") as f:
        head = hashlib.sha256(f.read(1 << 20)).hexdigest()[:16]
    return f"{path.name} {path.stat().st_size} {head}"
