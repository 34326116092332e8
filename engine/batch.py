"""The sessions that decode together in one forward, and the backend's merged state for them.

While a session is a member, its state lives in the batch (its slot's own state is None); any
request that touches a session's state first settles the batch, which hands every member its own
state back. Membership is re-checked each round, so sessions join and leave between steps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:
    from .steps import Slot


class Batch:
    """A resident batch: re-merged only when its members change, not on every step."""

    def __init__(self, backend: Any, on_lost: Optional[Callable[[list["Slot"], BaseException], None]] = None) -> None:
        self.backend = backend
        self.on_lost = on_lost
        """Told which members lost their state when a split fails, before the error propagates."""
        self.members: list["Slot"] = []
        self.handle: Optional[Any] = None
        self.merges = 0
        """How many times members were merged (tests and the bench read it)."""

    def sync(self, slots: list["Slot"]) -> None:
        """Make `slots`, in this order, the members; merge their states when that changes anything."""
        if self.handle is not None and len(slots) == len(self.members) and all(
            a is b for a, b in zip(slots, self.members)
        ):
            return
        self.settle()
        with self.backend.compute():
            self.handle = self.backend.merge([slot.state for slot in slots])
        self.members = list(slots)
        self.merges += 1
        for slot in slots:
            slot.state = None

    def forward(self, token_ids: list[int]):
        """One token per member, in member order; returns a row of logits per member."""
        with self.backend.compute():
            return self.backend.forward_batch(self.handle, token_ids)

    def row_nbytes(self, row: int) -> int:
        return self.backend.row_nbytes(self.handle, row)

    def settle(self) -> None:
        """Hand every member its own state back and drop the merged one."""
        if self.handle is None:
            return
        members, handle = self.members, self.handle
        self.handle, self.members = None, []  # even if the split fails: never use a half-split batch
        try:
            with self.backend.compute():
                states = self.backend.split(handle)
        except BaseException as e:
            if self.on_lost is not None:
                self.on_lost(members, e)
            raise
        for slot, state in zip(members, states):
            slot.state = state

    def __contains__(self, slot: "Slot") -> bool:
        return any(slot is m for m in self.members)
