"""Rounds for a backend with no joint step (torch, MLX): a forward per session, decoders batched.

Prefill chunks, and sessions whose state cannot be batched, step one session per forward; every
other decoding session steps together in one batched forward (engine/batch.py). If the batched
forward fails, its sessions step alone, so a fault poisons only its own session. A backend that
decodes any mix of sessions in one call (llama.cpp) steps its rounds in engine/together.py instead.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .reply.sampling import steps_alone

if TYPE_CHECKING:
    from .steps import Job, RoundOwner, Slot

log = logging.getLogger(__name__)


class BatchedRounds:
    """Steps a worker's round in separate forwards, the decoders in one batched forward."""

    def __init__(self, worker: "RoundOwner") -> None:
        self.worker = worker

    def round(self) -> None:
        """Advance every active job by one forward's worth: a prefill chunk or one token."""
        w = self.worker
        decoders: list[tuple["Job", "Slot"]] = []
        for job, slot in w.live_jobs():
            if self._batchable(job, slot):
                decoders.append((job, slot))
            else:
                w._guarded(job, slot, lambda: self._step(job, slot))
        # A lone decoder steps alone, except where the backend's captured batch step is faster (CUDA graphs).
        lone = len(decoders) == 1 and getattr(w.backend, "steps_one_in_batch", False)
        together = decoders[: w.config.max_batch] if len(decoders) > 1 or lone else []
        if together:
            self._step_batch(together)
        for job, slot in decoders[len(together):]:
            w._guarded(job, slot, lambda: self._step(job, slot))
        if not together or not w.scheduler:
            w._settle()  # sessions not decoding together hold their own, unpadded state

    def _batchable(self, job: "Job", slot: "Slot") -> bool:
        w = self.worker
        if not w.batching or job.pending or not job.generated or steps_alone(job.params):
            return False
        return slot in w.batch or (slot.state is not None and w.backend.batchable(slot.state))

    def _step(self, job: "Job", slot: "Slot") -> None:
        """One forward of this session alone."""
        w = self.worker
        if slot.job is not job:  # poisoned since the round began (a failed split)
            return
        if slot in w.batch:
            w._settle()
            if slot.job is not job:
                return
        if slot.state is None:
            slot.state = w.backend.new_state()
        if job.pending:
            feed = job.pending[: w.config.prefill_chunk]
            job.pending = job.pending[len(feed):]
            job.prefilled += len(feed)
        else:
            feed = [job.generated[-1]]
        with w.backend.compute():
            logits = w.backend.forward(slot.state, feed)
        w._after_forward(job, slot, feed, logits, w.backend.state_nbytes(slot.state))

    def _step_batch(self, pairs: list[tuple["Job", "Slot"]]) -> None:
        """One forward for all `pairs`; if it fails, step each alone so a fault poisons only its own."""
        w = self.worker
        feeds = [job.generated[-1] for job, _ in pairs]
        try:
            w.batch.sync([slot for _, slot in pairs])
            logits = w.batch.forward(feeds)
        except Exception:
            log.exception("batched forward failed; stepping its %d sessions one at a time", len(pairs))
            try:
                w.batch.settle()
            except Exception as e:  # the members' states are gone with the batch
                for job, slot in pairs:
                    w._poison(slot, job, e)
                return
            for job, slot in pairs:
                w._guarded(job, slot, lambda: self._step(job, slot))
            return
        for row, (job, slot) in enumerate(pairs):
            nbytes = w.batch.row_nbytes(row)
            w._guarded(job, slot, lambda: w._after_forward(job, slot, [feeds[row]], logits[row], nbytes))
