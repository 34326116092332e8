"""A new turn takes the longest prompt prefix another live session holds, instead of computing it
again (llama.cpp's shared pool: engine/backends/llamacpp_shared.py). Busy or idle, any resident
session can give: its cells are shared, never moved or changed, so it goes on as before.

Only worth it past MIN_SHARED tokens beyond what the session itself keeps; the session must hold
nothing of its own for the shared cells to stay below everything it computes next (so its logits
are exactly those of computing the prefix itself: tests/engine/test_prefix_share.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import CapacityError
from .images import span_floor

if TYPE_CHECKING:
    from .steps import Slot

MIN_SHARED = 32
"""Fewer shared tokens than this are computed again: a few milliseconds, and no bookkeeping."""


def take_shared_prefix(worker: Any, slot: "Slot", prompt: list[int], keep: int) -> int:
    """Share the best donor's prefix into `slot` when it beats `keep` (the positions the slot keeps
    of its own) by MIN_SHARED; the positions of `prompt` the slot holds afterwards. `worker`: the
    engine's Worker (its slots, backend and config; not imported: the worker imports this)."""
    share = getattr(worker.backend, "share_prefix", None)
    if share is None or not worker.config.share_prefixes:
        return keep
    limit = len(prompt) - 1  # one prompt token is always computed: its logits start the reply
    best, donor = keep + MIN_SHARED, None
    for other in worker.slots.values():
        if other is slot or other.state is None or other.parked is not None or len(other.fed) <= best:
            continue
        n = span_floor(prompt, min(common_prefix(other.fed, prompt), limit))  # never inside an image
        if n > best:
            best, donor = n, other
    if donor is None:
        return keep
    if slot.state is not None and slot.fed:
        worker.drop_state(slot)  # its own cells would lie above the shared ones: computed again instead
    if slot.state is None:
        try:
            slot.state = worker.backend.new_state()
        except CapacityError:
            return 0
    if not share(donor.state, slot.state, best):
        return 0 if not slot.fed else keep
    slot.fed = list(prompt[:best])
    return best


def common_prefix(a, b) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
