"""Rounds for a backend that decodes any mix of sessions in one call (llama.cpp's `step`).

Each round is one call: every decoding session's next token plus a chunk of pending prompt, the
chunks sharing `prefill_chunk` tokens in arrival order, as llama.cpp's server fills its batch. So a
long paste in one conversation costs the others one chunk's time per token, never its whole length,
and each prefill chunk still reports progress (`Chunk.prefill`) and cancel is seen at the next round.
If the joint call fails, each session steps alone, so a fault poisons only its own session.

Decoding sessions may also carry drafted tokens, checked in the same call (engine/drafts/speculative.py).

A round on a shared K/V pool steps only what fits it (`engine.kv_room.Room.fit`; admission is there too).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from .images import is_image_id
from .reply.sampling import steps_alone
from .drafts.speculative import Speculator, drafted

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
        self.speculator = Speculator(worker)

    def round(self) -> None:
        w = self.worker
        items: list[tuple["Job", "Slot", list[int]]] = []
        alone: list[tuple["Job", "Slot", list[int]]] = []  # seeded sampling: its own call (steps_alone)
        budget = w.config.prefill_chunk
        for job, slot in w.live_jobs():
            if not job.pending:
                (alone if steps_alone(job.params) else items).append((job, slot, [job.generated[-1]]))
            elif budget > 0:  # else this prompt waits for the next round's share
                feed = _next_piece(job, budget)
                budget -= len(feed)
                # an image decodes alone: its own calls, never beside another session's rows
                (alone if is_image_id(feed[0]) else items).append((job, slot, feed))
        decoding = [item for item in items if not item[0].pending]
        prompt_rows = sum(len(feed) for job, _, feed in items if job.pending)
        self.speculator.plan(decoding, alone, prompt_rows, budget)
        if w.room is not None:  # a shared K/V pool: the turns that fit it now (drafts counted), oldest first
            items, alone = w.room.fit(items, alone)
        # Drafts last in the batch: their rejected cells then free above every other row's, so a
        # later token (a seeded reply's above all) never lands below its own sequence's earlier cells,
        # which would change the order flash attention sums them in, and with it the logits.
        items.sort(key=lambda item: drafted(item[0], item[2]))
        if w.batching and len(items) > 1:
            try:
                rows = self._call(items)
                self.joint += 1
            except Exception:
                log.exception("joint step failed; stepping its %d sessions one at a time", len(items))
                # without drafts: alone, each call is as small as it can be
                items = [(job, slot, feed[:1] if drafted(job, feed) else feed) for job, slot, feed in items]
            else:
                for (job, slot, feed), logits in zip(items, rows):
                    w._guarded(job, slot, lambda: self._done(job, slot, feed, logits))
                items = []
        for item in items + alone:
            w._guarded(item[0], item[1], lambda: self._solo(item))

    def _solo(self, item: tuple["Job", "Slot", list[int]]) -> None:
        """Step one session in its own call; a call with drafts that fails is tried once without."""
        job, slot, feed = item
        try:
            logits = self._call([item])[0]
        except Exception:
            if not drafted(job, feed):
                raise
            log.exception("a step with drafted tokens failed on session %s; stepping it without", job.session.id)
            feed = feed[:1]
            logits = self._call([(job, slot, feed)])[0]
        self._done(job, slot, feed, logits)

    def _call(self, items: list[tuple["Job", "Slot", list[int]]]) -> list[Any]:
        backend = self.worker.backend
        for _, slot, _ in items:
            if slot.state is None:
                slot.state = backend.new_state()
        self.calls += 1
        feeds = [(slot.state, feed) for _, slot, feed in items]
        rows = [len(feed) if drafted(job, feed) else 1 for job, _, feed in items]
        began = time.perf_counter()
        if len(items) == 1 and is_image_id(feeds[0][1][0]):  # an image: no logits, it never ends a prompt
            job, slot, feed = items[0]
            backend.step_image(slot.state, job.images[feed[0]])
            return [None]
        with backend.compute():
            if max(rows) > 1:  # every item then gets its rows; the undrafted ones only need their last
                out = [o if n > 1 else o[-1] for o, n in zip(backend.step(feeds, rows), rows)]
            else:
                out = backend.step(feeds)
        if not any(job.pending for job, _, _ in items):  # decode calls teach the speculator what a row costs
            self.speculator.observe(sum(len(feed) for _, feed in feeds), time.perf_counter() - began)
        return out

    def _done(self, job: "Job", slot: "Slot", feed: list[int], logits: Any) -> None:
        if drafted(job, feed):
            self.speculator.settle(job, slot, feed, logits)
            return
        if job.pending:
            job.pending = job.pending[len(feed):]
            job.prefilled += len(feed)
        self.worker._after_forward(job, slot, feed, logits, self.worker.backend.state_nbytes(slot.state))


def _next_piece(job: "Job", budget: int) -> list[int]:
    """What of `job`'s pending prompt goes into this round: a whole image span, or text up to
    `budget` tokens that stops before the next image."""
    pending = job.pending
    if is_image_id(pending[0]):
        return list(job.images[pending[0]].ids)
    end = min(budget, len(pending))
    cut = next((i for i in range(end) if is_image_id(pending[i])), end)
    return pending[:cut]
