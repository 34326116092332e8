"""Where a session's tokens sit among llama.cpp's positions, for models whose images do not take one
position per token: M-RoPE models (Qwen2-VL, Qwen2.5-VL).

Why: the engine counts a sequence in tokens, one per cell (an image is one id per embedding), and
every other backend places token k at position k. An M-RoPE image chunk of nx × ny embeddings takes
`mtmd_input_chunk_get_n_pos` positions instead: in llama-cpp-python 0.3.16's llama.cpp that is 1, as
all its cells hold the image's first position in their temporal section (its rows and columns are in
the other sections: `mrope_positions`); later llama.cpp counts max(nx, ny). The text after it goes on
from that count, as llama.cpp's server and `mtmd_helper_eval_chunks` do (n_past += n_pos), and a
text batch must start right after the sequence's last cell's position (llama_batch_allocr's check).
llama.cpp's sequence calls (`seq_rm`, `seq_cp`, `pos_max`) speak in positions, the engine's in tokens.

So a sequence keeps, beside its token count, the places of such images (`Place`); token k's position
is k less what the images before it saved. Nothing is kept where every token is one position (text,
and the other vision models): positions are then the token counts, as before.

An image's cells all hold one temporal position, so no position falls inside an image: it is cut
neither by a trim nor a shared prefix (the engine never does), nor by a prompt-cache block
(llamacpp_blocks.py refuses to read such a block).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

MROPE_SECTIONS = 4
"""Position values per embedding in an M-RoPE model's batch (llama.cpp's n_pos_per_embd): temporal,
row, column, unused. A text batch gives one per token and llama.cpp repeats it into the first three."""


@dataclass(frozen=True)
class Place:
    """An image in a sequence whose tokens take other positions than one each."""

    start: int
    """Its first token's index in the sequence."""
    tokens: int
    """Its tokens (cells, embeddings)."""
    positions: int
    """The positions it takes: text after it goes on from its first position plus this."""

    @property
    def end(self) -> int:
        return self.start + self.tokens


def position(places: Sequence[Place], k: int) -> int:
    """llama.cpp's position of token `k` (of a sequence's next token with k = its length); ValueError
    inside an image, where no position parts its tokens."""
    saved = 0
    for place in places:
        if place.end <= k:
            saved += place.tokens - place.positions
        elif place.start < k:
            raise ValueError(f"token {k} lies inside an image of tokens {place.start}-{place.end - 1}")
    return k - saved


def cell_end(places: Sequence[Place], n: int) -> int:
    """One past the position of the last cell of a sequence holding `n` tokens (llama.cpp's
    `seq_pos_max` + 1): where it ends with an image, every cell of which holds the image's first position,
    that position + 1."""
    last = places[-1] if places else None
    if last is not None and last.end == n:
        return position(places, last.start) + 1
    return position(places, n)


def before(places: Sequence[Place], n: int) -> list[Place]:
    """The places that lie wholly in the first `n` tokens (what a sequence keeps or shares of them)."""
    return [place for place in places if place.end <= n]


def touches(places: Sequence[Place], start: int, end: int) -> bool:
    """Whether tokens [start, end) hold any part of a placed image."""
    return any(place.start < end and start < place.end for place in places)


def mrope_positions(first: int, nx: int, ny: int) -> np.ndarray:
    """An image's M-RoPE positions, as mtmd_helper_decode_image_chunk sets them: one row per section
    (temporal: `first`; row: first + y; column: first + x; unused: 0), its embeddings row by row."""
    y, x = np.divmod(np.arange(nx * ny, dtype=np.int32), np.int32(nx))
    out = np.zeros((MROPE_SECTIONS, nx * ny), dtype=np.int32)
    out[0] = first
    out[1] = first + y
    out[2] = first + x
    return out
