"""Errors the conversations manager raises on purpose."""

from __future__ import annotations

from engine import CapacityError


class AllSessionsBusyError(CapacityError):
    """Every live session is generating, so none can be suspended to make room for another.

    A CapacityError, so a caller that handles "the engine is full" handles this too; the message
    carries the numbers. Never a silent overcommit: the caller waits or cancels a reply.
    """

    def __init__(self, wanted: int, live: int, limit: int, busy: int) -> None:
        self.conversation_id = wanted
        self.live = live
        self.limit = limit
        self.busy = busy
        super().__init__(
            f"cannot open a session for conversation {wanted}: {live} of {limit} sessions are open "
            f"and {busy} of them are generating; wait for a reply to finish or stop one")
