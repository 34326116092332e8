"""A llama.cpp session's state saved to a file and read back: the sequence's bytes
(`llama_state_seq_get_data` / `set_data`) as one uint8 tensor in the engine's safetensors state file,
whose metadata is checked before any byte is used. Where the sequence holds M-RoPE images, their
places (llamacpp_positions.py) go into the metadata too: the bytes keep each cell's position, but
which tokens an image took is the sequence's own count, needed to go on from the right position."""

from __future__ import annotations

import ctypes
import json
from pathlib import Path
from typing import Callable

import numpy as np

import llama_cpp as lc

from ..errors import CapacityError, StateFileError
from .llamacpp_cells import read_sequence
from .llamacpp_library import Seq
from .llamacpp_positions import Place


def sequence_writer(backend, seq: Seq, metadata: dict[str, str]) -> Callable[[Path], None]:
    """Read `seq`'s cells now (the engine thread: it touches the context); the call returned writes
    them and `metadata` to a file, on any thread (it holds the bytes, not the context)."""
    from safetensors.numpy import save_file

    data = np.zeros(0, dtype=np.uint8)
    if seq.n_past:
        # A view of the bytes llama.cpp wrote, not a copy (safetensors writes from the pointer while
        # `data` keeps them alive): a copy of a 1.7B model's 1,571 tokens (295 MB) took 0.8 s, most of
        # a park that stalled every running reply (engine/kv_room.py).
        data = np.frombuffer(read_sequence(backend.ctx, seq.id), dtype=np.uint8)
    places = {"llama_places": json.dumps([[p.start, p.tokens, p.positions] for p in seq.places])} if seq.places else {}
    meta = {**metadata, "llama_tokens": str(seq.n_past), **places}
    return lambda path: save_file({"llama_seq": data}, str(path), metadata=meta)


def save_sequence(backend, seq: Seq, path: Path, metadata: dict[str, str]) -> None:
    """Write `seq`'s cells (and `metadata`) to `path`."""
    sequence_writer(backend, seq, metadata)(path)


def load_sequence(backend, path: Path) -> tuple[Seq, dict[str, str]]:
    """A new sequence holding what `path` saved, and the file's metadata; StateFileError for a file
    that is not such a state or does not fit this model, CapacityError when the pool has no room."""
    from safetensors import safe_open

    path = Path(path)
    try:
        with safe_open(str(path), framework="numpy") as f:
            meta = dict(f.metadata() or {})
            data = f.get_tensor("llama_seq")
        held = int(meta["llama_tokens"])
        places = [Place(int(a), int(b), int(c)) for a, b, c in json.loads(meta.get("llama_places", "[]"))]
    except Exception as e:
        raise StateFileError(f"{path.name} is not a readable llama.cpp session state: {e}") from e
    free = backend.pool.tokens - backend.held_tokens()
    if held > free:
        raise CapacityError(f"{path.name} holds {held} tokens; the KV pool has {free} of {backend.pool.tokens} free")
    seq = backend.new_state()
    if held:
        backend.cells.make_room(held, backend._live)
        data = np.ascontiguousarray(data, dtype=np.uint8)
        read = lc.llama_state_seq_set_data(
            backend.ctx, data.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8)), data.size, seq.id)
        seq.n_past, seq.places = held, places
        if read:
            backend.cells.placed(held)
        if not read or int(lc.llama_memory_seq_pos_max(backend._mem, seq.id)) + 1 != _cell_end(seq):
            backend.free_state(seq)
            raise StateFileError(f"{path.name}: llama.cpp could not restore its {held} tokens into this model")
    return seq, meta


def _cell_end(seq: Seq) -> int:
    """Where the restored cells must end; -1 (never) where the places do not fit the token count."""
    if any(place.end > seq.n_past for place in seq.places):
        return -1
    return seq.cell_end()
