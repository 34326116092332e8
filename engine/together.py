"""Rounds for a backend that decodes any mix of sessions in one call (llama.cpp's `step`).

Each round is one call: every decoding session's next token plus a chunk of pending prompt, the
chunks sharing `prefill_chunk` tokens in arrival order, as llama.cpp's server fills its batch. So a
long paste in one conversation costs the others one chunk's time per token, never its whole length,
and each prefill chunk still reports progress (`Chunk.prefill`) and cancel is seen at the next round.
If the joint call fails, each session steps alone, so a fault poisons only its own session.
A round on a shared K/V pool steps only what fits it (`engine.kv_room.Room.fit`; admission is there too).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .sampling import steps_alone

if TYPE_CHECKING:
    from .steps import Job, RoundOwner, Slot

log = logging.getLogger(__name__)


class Together:
    """Steps a worker's round in one backend call."""

    def __init__(self, worker: "RoundOwner") -> None:
        self.worker = worker
        self.calls = 0
        """Backend calls made (tests and the bench read it)."""
        self.joint = 0
        """Of those, calls that stepped several sessions together."""

    def round(self) -> None:
        w = self.worker
        items: list[tuple["Job", "Slot", list[int]]] = []
        alone: list[tuple["Job", "Slot", list[int]]] = []  # seeded sampling: its own call (steps_alone)
        budget = w.config.prefill_chunk
        for job, slot in w.live_jobs():
            if not job.pending:
                (alone if steps_alone(job.params) else items).append((job, slot, [job.generated[-1]]))
            elif budget > 0:  # else this prompt waits for the next round's share
                feed = job.pending[:budget]
                budget -= len(feed)
                items.append((job, slot, feed))
        if w.room is not None:  # a shared K/V pool: the turns that fit it now, oldest first
            items, alone = w.room.fit(items, alone)
        if w.batching and len(items) > 1:
            try:
                rows = self._call(items)
                self.joint += 1
            except Exception:
                log.exception("joint step failed; stepping its %d sessions one at a time", len(items))
            else:
                for (job, slot, feed), logits in zip(items, rows):
                    w._guarded(job, slot, lambda: self._done(job, slot, feed, logits))
                items = []
        for item in items + alone:
            job, slot, feed = item
            w._guarded(job, slot, lambda: self._done(job, slot, feed, self._call([item])[0]))

    def _call(self, items: list[tuple["Job", "Slot", list[int]]]) -> list[Any]:
        backend = self.worker.backend
        for _, slot, _ in items:
            if slot.state is None:
                slot.state = backend.new_state()
        self.calls += 1
        with backend.compute():
            return backend.step([(slot.state, feed) for _, slot, feed in items])

    def _done(self, job: "Job", slot: "Slot", feed: list[int], logits: Any) -> None:
        if job.pending:
            job.pending = job.pending[len(feed):]
            job.prefilled += len(feed)
        self.worker._after_forward(job, slot, feed, logits, self.worker.backend.state_nbytes(slot.state))
