"""Every sequence's cells in position order in llama.cpp's shared K/V pool, so a session's logits do
not depend on who shared the pool before it.

Why: llama.cpp's CPU flash attention walks the pool's cells in cell order, skipping the cells of
other sequences, and accumulates in float16. A sequence whose later tokens land in cells *below* its
earlier ones (in a hole another sequence left) sums the same terms in another order and gets other
logits: up to 0.93 apart on the bundled model, enough to tip a greedy token (measured: a session
continued after a neighbour was freed below it, against the same session alone; 0.0 when no hole
was left). The server's "same text alone and beside others" failed on exactly that.

llama.cpp puts a new token in the first free cell at or after its head, and moves the head back to
any cell a removal frees; its own defragmentation fills holes from the end, reordering cells. It
has no call to choose a cell. So holes are never left below the head:

- the pool's used cells are always one run from cell 0 (`top` cells), so a step's tokens take the
  next cells in batch order, above every cell in use: each sequence's stay in position order;
- cells a sequence gives up (a closed or parked session, rejected drafts, a shortened reply) are
  *retired*: handed to a sequence id no session uses (`llama_memory_seq_cp`) before they leave
  their own (`llama_memory_seq_rm`). They stay occupied and masked for everyone. Only the last
  item of the latest step lies at the top, so its cells are freed outright (the usual case of
  rejected drafts, which go last in a round);
- when the retired cells would crowd out a step (or pass an eighth of the live ones, at least
  RELAYOUT_MIN_RETIRED), the pool is laid out again: every live sequence's cells are read out
  (`llama_state_seq_get_data`, in cell order, which is position order), the pool is cleared and they
  are written back one sequence after another, each in one run. That copies what the pool holds
  (about 0.4 s for 8,192 tokens of the bundled model on two cores): a pause in that step.

Models whose memory is not only attention cells (recurrent or hybrid state, a sliding window that
llama.cpp prunes by itself) keep plain removal: their removal rules differ, and llama.cpp frees
sliding-window cells on its own.
"""

from __future__ import annotations

import ctypes
import logging
import time
from typing import Callable

import llama_cpp as lc

from .llamacpp_shared import SharedPrefixes

log = logging.getLogger(__name__)

RELAYOUT_MIN_RETIRED = 256
"""Retired cells tolerated before they are cleared out even when the pool has room (or an eighth of
the live cells, if more). Attention still walks past dead cells: on the bundled model, 8 sessions
decoded 90 tok/s with none and 56-70 with 1,000-10,000 (2 cores, AVX2, llama.cpp as published; with
Confab's patch, packaging/llama_source.py, 6,400 cost 0-2 %); laying out 8,192 live tokens again took
about 0.4 s. Near an eighth, both cost about 1% of a decode step."""
RELAYOUT_LIVE_SHARE = 8


class CellOrder:
    """Where the next token goes in the pool (`top`), retiring instead of freeing, and re-laying out."""

    def __init__(self, ctx, mem, size: int, retired_id: int, ordered: bool) -> None:
        self.ctx, self.mem, self.size = ctx, mem, size
        self.retired_id = retired_id
        """A sequence id no session gets: it holds the retired cells."""
        self.ordered = ordered
        """False where plain removal stays (recurrent, hybrid or sliding-window memory)."""
        self.top = 0
        """Cells in use from the start of the pool, live or retired: where the next token goes."""
        self._last: tuple[int, int, int] = (-1, 0, 0)
        """(sequence id, first position, end position) of the cells at the very top: the latest
        step's last item, while nothing was placed or retired after it."""
        self.shared = SharedPrefixes(mem)
        """Which sequences hold another's prefix cells (llamacpp_shared.py); only where `ordered`."""
        self.retired = 0
        self.relayouts = 0
        """How many times the pool was laid out again (read by tests and the bench)."""

    def placed(self, n: int, last: tuple[int, int, int] = (-1, 0, 0)) -> None:
        """`n` cells were just taken above `top` (a step, or a restored state); `last`: the step's
        last item as (sequence id, its first position, its last cell's position + 1), whose cells are
        now the topmost."""
        self.top += n
        self._last = last

    def share(self, donor: int, sharer: int, n: int, end: int) -> bool:
        """Give the empty sequence `sharer` the donor's first `n` tokens' cells, positions [0, end) (no
        compute, no new cells); False where the memory is not attention cells alone."""
        if not self.ordered:
            return False
        self.shared.share(donor, sharer, n, end)
        self._last = (-1, 0, 0)  # the donor's topmost cells may be shared now: never freed outright
        return True

    def give_up(self, seq_id: int, keep: int, p0: int, cells: int) -> bool:
        """Take `seq_id`'s tokens from `keep` on (all of it with 0): positions `p0` onward, `cells` cells
        (the same counts but after an M-RoPE image: llamacpp_positions.py); False where llama.cpp refused."""
        if not self.ordered:
            return bool(lc.llama_memory_seq_rm(self.mem, seq_id, p0, -1))
        given = self._give_up(seq_id, p0, cells)
        if given:
            self.shared.given_up(seq_id, keep, p0)
        return given

    def _give_up(self, seq_id: int, p0: int, cells: int) -> bool:
        before = lc.llama_memory_seq_pos_max(self.mem, seq_id) + 1
        if before <= p0:
            return True
        top_id, first, end = self._last
        if top_id == seq_id and end == before and first <= p0:  # the topmost cells: no hole is left
            if not lc.llama_memory_seq_rm(self.mem, seq_id, p0, -1):
                return False
            self.top -= cells
            self._last = (seq_id, first, p0) if p0 > first else (-1, 0, 0)
            return True
        self._last = (-1, 0, 0)
        lc.llama_memory_seq_cp(self.mem, seq_id, self.retired_id, p0, -1)
        if not lc.llama_memory_seq_rm(self.mem, seq_id, p0, -1):  # attention-only memory never refuses
            return False
        self.retired += cells
        return True

    def undo_step(self, seq_id: int, p0: int) -> None:
        """Drop the cells a failed step wrote for `seq_id`: they are the topmost, so removing them
        leaves no hole under anyone (and llama.cpp may already have removed them)."""
        lc.llama_memory_seq_rm(self.mem, seq_id, p0, -1)

    def make_room(self, n: int, live: Callable[[], dict[int, int]]) -> None:
        """Before `n` cells are taken: lay the pool out again when they would not fit above `top`,
        or when the retired cells are too many to walk past. `live()`: sequence id -> positions
        held, asked only when there are retired cells (this runs before every step)."""
        if not self.ordered or not self.retired:
            return
        held = live()
        if self.top + n > self.size or self.retired > max(sum(held.values()) // RELAYOUT_LIVE_SHARE,
                                                           RELAYOUT_MIN_RETIRED):
            self.relayout(held)

    def relayout(self, live: dict[int, int]) -> bool:
        """Read every live sequence out, clear the pool and write them back, each in one run in
        position order, retired cells gone. False when there was nothing retired to clear."""
        if not self.retired:
            return False
        began = time.perf_counter()
        saved = []
        for seq_id in self.shared.order([seq_id for seq_id, held in live.items() if held]):
            own = live[seq_id] - self.shared.detach(seq_id)  # a sharer is read without its donor's cells
            saved.append((seq_id, read_sequence(self.ctx, seq_id) if own else None, own))
        lc.llama_memory_clear(self.mem, False)
        self.top = self.retired = 0
        self._last = (-1, 0, 0)
        for seq_id, data, own in saved:  # donors before their sharers, each sharer's own cells above its donor's
            if data is not None and not lc.llama_state_seq_set_data(self.ctx, data, len(data), seq_id):
                # cannot happen: the pool was just emptied and held these cells
                raise RuntimeError(f"llama.cpp could not write sequence {seq_id} back while re-laying out its pool")
            self.shared.attach(seq_id)
            self.top += own
        self.relayouts += 1
        log.debug("llama.cpp pool laid out again: %d tokens of %d sequences in %.1f ms",
                  self.top, len(saved), (time.perf_counter() - began) * 1e3)
        return True


def read_sequence(ctx, seq_id: int):
    """One sequence's cells as llama.cpp serializes them (a ctypes byte array), for a state file or a relayout."""
    size = lc.llama_state_seq_get_size(ctx, seq_id)
    buf = (ctypes.c_uint8 * size)()
    written = lc.llama_state_seq_get_data(ctx, buf, size, seq_id)
    return (ctypes.c_uint8 * written).from_buffer(buf) if written != size else buf
