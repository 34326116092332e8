"""A llama.cpp session's state saved to a file and read back: the sequence's bytes
(`llama_state_seq_get_data` / `set_data`) as one uint8 tensor in the engine's safetensors state file,
whose metadata is checked before any byte is used. Where the sequence holds M-RoPE images, their
places (llamacpp_positions.py) go into the metadata too: the bytes keep each cell's position, but
which tokens an image took is the sequence's own count, needed to go on from the right position."""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

import numpy as np

import llama_cpp as lc

from ..errors import CapacityError, StateFileError
from .llamacpp_cells import read_sequence
from .llamacpp_library import Seq
from .llamacpp_positions import Place


def save_sequence(backend, seq: Seq, path: Path, metadata: dict[str, str]) -> None:
    """Write `seq`'s cells (and `metadata`) to `path`."""
    from safetensors.numpy import save_file

    data = np.zeros(0, dtype=np.uint8)
    if seq.n_past:
        data = np.frombuffer(read_sequence(backend.ctx, seq.id), dtype=np.uint8).copy()
    places = {"llama_places": json.dumps([[p.start, p.tokens, p.positions] for p in seq.places])} if seq.places else {}
    save_file({"llama_seq": data}, str(path), metadata={**metadata, "llama_tokens": str(seq.n_past), **places})


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
