"""Prompt prefixes held once in llama.cpp's shared K/V pool: a session whose prompt starts with tokens
another live session holds takes those cells (`llama_memory_seq_cp` adds its sequence id to them)
instead of computing them again.

Why: agents send the same 3-20k-token system prompt and tools on every call and from every
sub-agent; each session prefilled and held its own copy (8 agent sessions: 8 copies, 8 prefills).

What keeps logits exact (llamacpp_cells.py explains why cell order matters): a sharer's shared
positions [0, n) are the donor's cells, which lie in position order below `top`; everything the
sharer computes later goes above `top`. So its cells stay in position order, and it reads the same
keys in the same order as if it had computed them itself. Sharing is only ever of a whole prefix
from position 0, into a sequence that holds nothing.

What is tracked here (llama.cpp says which sequences a cell has, but not to Python): for each
sharer, its donor and how many tokens it shares, and the position they end at (the same number
except after an M-RoPE image: llamacpp_positions.py). A donor that gives up positions below that
shortens the share (those cells become the sharer's own, kept by the retired id too); a donor that
ends leaves its sharer owning everything. A relayout keeps the sharing: donors are written back
before their sharers, a sharer writes back only its own cells and then takes its donor's again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import llama_cpp as lc


@dataclass
class Share:
    donor: int
    """The sequence id whose cells this sequence's first `n` tokens are."""
    n: int
    end: int
    """llama.cpp's position after those `n` tokens: the shared cells are positions [0, end)."""


class SharedPrefixes:
    """Which sequences share whose prefix, kept true as sequences shrink, end and are laid out again."""

    def __init__(self, mem) -> None:
        self.mem = mem
        self.shares: dict[int, Share] = {}
        """sharer sequence id -> its share."""

    def share(self, donor: int, sharer: int, n: int, end: int) -> None:
        """Give the empty sequence `sharer` the donor's first `n` tokens, positions [0, end)."""
        lc.llama_memory_seq_cp(self.mem, donor, sharer, 0, end)
        self.shares[sharer] = Share(donor, n, end)

    def shared(self, seq_id: int) -> int:
        """How many of `seq_id`'s tokens are another sequence's cells."""
        share = self.shares.get(seq_id)
        return share.n if share is not None else 0

    def given_up(self, seq_id: int, keep: int, p0: int) -> None:
        """`seq_id` no longer holds its tokens from `keep` on, positions `p0` onward (0: it ended).
        A sharer's first tokens are its donor's, so `p0` is the same position in both."""
        share = self.shares.get(seq_id)
        if share is not None:
            if keep <= 0:
                del self.shares[seq_id]
            elif keep < share.n:
                share.n, share.end = keep, p0
        for sharer, share in list(self.shares.items()):
            if share.donor == seq_id and keep < share.n:
                if keep <= 0:  # the donor is gone: the cells it shared are the sharer's own now
                    del self.shares[sharer]
                else:
                    share.n, share.end = keep, p0

    def order(self, seq_ids: list[int]) -> list[int]:
        """`seq_ids` with every donor before its sharers (a relayout writes them back in this order)."""
        placed: list[int] = []
        pending = list(seq_ids)
        while pending:
            for seq_id in pending:
                share = self.shares.get(seq_id)
                if share is None or share.donor not in pending:
                    placed.append(seq_id)
                    pending.remove(seq_id)
                    break
            else:  # cannot happen: a sequence shares only from one that held the cells before it
                placed += pending
                break
        return placed

    def detach(self, seq_id: int) -> int:
        """Before `seq_id` is read out for a relayout: drop its id from its donor's cells, so only its
        own cells are read. Returns the tokens it shared (0 if none)."""
        share = self.shares.get(seq_id)
        if share is None:
            return 0
        lc.llama_memory_seq_rm(self.mem, seq_id, 0, share.end)
        return share.n

    def attach(self, seq_id: int) -> None:
        """After its donor and its own cells are written back: take the donor's cells again."""
        share = self.shares.get(seq_id)
        if share is not None:
            lc.llama_memory_seq_cp(self.mem, share.donor, seq_id, 0, share.end)

    def donor_of(self, seq_id: int) -> Optional[int]:
        share = self.shares.get(seq_id)
        return share.donor if share is not None else None
