"""Room in a K/V pool that every session shares (llama.cpp): admit a turn by what it holds as it
grows, and make room when the pool is full, so no admitted turn ever fails for want of cells.

Why: reserving each turn's worst case (prompt + max_tokens, the whole context when a client sends
no `max_tokens`, as most SDKs and agents do) let a 16,384-token pool admit four turns that held a
fraction of it, and idle sessions kept their cells forever. Here, whenever a turn or a round needs
cells that are not free, in this order:

1. Idle sessions park, least recently used first: their cells go to a file (the backend's own state
   bytes) and come back on their next turn, before it runs, so no caller sees the difference.
2. A round that still does not fit serves its turns oldest first: a younger turn is paused (it skips
   the round) and, when an older turn needs its cells, preempted (parked like an idle session; it
   resumes where it was once cells free up). The oldest turn always fits (one context never exceeds
   the pool), so every admitted turn finishes, with the tokens it would have had alone.
3. A new turn whose prompt does not fit after step 1 is refused before any compute, with the
   numbers (CapacityError: the server answers 429).

Idle sessions also park while turns run and they hold more cells than IDLE_SHARE of the running
turns' (keep_span): llama.cpp's attention walks every cell below the pool's top, so cells that idle
sessions hold there slow every step of every running turn, the pool full or not. Not when the running
turns have too few rows left for the park to pay (`_rows_to_go`, the backend's `park_break_even`):
with Confab's patch to llama.cpp's CPU attention (packaging/llama_source.py) a masked cell costs
about a tenth of a nanosecond a row, head and layer, so that takes a thousand rows or more.

A park reads the cells on the engine thread and writes the file on a thread of its own (`_writes`),
so running turns wait for the read alone: parking a 1.7B model's idle 1,571-token session (295 MB)
took 0.94 s on the engine thread when it wrote the file too, and a reply that had just begun decoded
its 64 tokens at 9.8 tok/s instead of 20. Whatever reads a parked file first waits for its write.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from .errors import CapacityError

if TYPE_CHECKING:
    from .steps import Job, RoundOwner, Slot

log = logging.getLogger(__name__)
Item = tuple["Job", "Slot", list[int]]

IDLE_SHARE = 4
IDLE_FLOOR = 512
"""While turns run, idle sessions keep at most max(running tokens / IDLE_SHARE, IDLE_FLOOR) cells
resident; the least recently used park first. Measured (bundled model, 8 clients of `engine serve`,
2 cores): 179 tok/s with only their own cells in the pool, falling run after run to 77 as 50 idle
pooled sessions (14,850 cells) stayed resident beside them: about 4.7 us per cell per step, where
parking one such session costs a few milliseconds once and its next turn a file read."""


MAX_WRITES = 2
"""Parked files written at once before a park waits: each holds its state's bytes in memory."""


class Room:
    """The pool's accounting and parking, for one worker (engine thread only)."""

    def __init__(self, worker: "RoundOwner") -> None:
        self.worker = worker
        self._clock = itertools.count(1)
        self._names = itertools.count(1)
        self._dir: Optional[Path] = None
        self._writer: Optional[ThreadPoolExecutor] = None
        self._writes: dict[Path, Future] = {}
        """Parked files still being written, by path."""
        self.parks = 0
        """Idle sessions parked since load (tests and the bench read these counters)."""
        self.preempts = 0
        """Running turns parked to let an older turn grow."""
        self.restores = 0
        """Parked states brought back into the pool."""

    # -- accounting --------------------------------------------------------------------------------
    def free(self) -> int:
        """Cells of the pool no resident sequence holds."""
        return self.worker.pool.tokens - self.worker.backend.held_tokens()

    def tick(self) -> int:
        return next(self._clock)

    # -- a new turn --------------------------------------------------------------------------------
    def admit(self, slot: "Slot", job: "Job", keep: int) -> None:
        """Admit `job` on `slot` (which may keep `keep` of its tokens): park idle sessions until its
        prompt fits, bring the slot's own parked state back, or raise CapacityError with the numbers."""
        prompt = len(job.prompt)
        if slot.parked is not None and keep == 0:  # nothing of it is reused: forget the file
            self.discard(slot)
            slot.fed = []
        resident = len(slot.fed) if slot.parked is None else 0
        peak = len(slot.fed) if slot.parked is not None else 0  # restored whole, then trimmed
        need = max(peak, prompt) - resident + 1  # + 1: room for its first token
        # Prompts that running turns are still reading are held as surely as what they hold already.
        reading = sum(len(s.job.pending) for s in self.worker.slots.values() if s.job is not None and s is not slot)
        self.make_room(need + reading, spare=slot)
        if self.free() - reading < need:
            pool = self.worker.pool
            running = [s for s in self.worker.slots.values() if s.job is not None and s.parked is None]
            held = sum(len(s.fed) for s in running) + reading
            raise CapacityError(
                f"session {job.session.id}'s prompt needs {need} free tokens of the K/V pool (prompt {prompt}, "
                f"{resident} already held), but the pool holds {pool.tokens} tokens ({pool.budget / 2**20:.0f} MiB) "
                f"and running turns ({len(running)}) hold or are reading {held} of them (idle sessions were "
                "parked first): retry when a reply ends, or send a shorter prompt"
            )
        if slot.parked is not None:
            try:
                self.restore(slot)
            except Exception:  # no run of cells for it, or its file is unreadable: read the prompt again
                log.warning("session %s's parked state could not come back; its prompt is read again",
                            job.session.id, exc_info=True)
                self.discard(slot)
                slot.fed = []
        job.admitted = slot.used = self.tick()

    def make_room(self, need: int, spare: Optional["Slot"] = None) -> None:
        """Park idle sessions, least recently used first (never `spare`), until `need` cells are free
        or none is left."""
        while self.free() < need:
            idle = [s for s in self.worker.slots.values()
                    if s is not spare and s.job is None and s.parked is None and s.state is not None and s.fed]
            if not idle:
                return
            self.park(min(idle, key=lambda s: s.used))
            self.parks += 1

    # -- a round -----------------------------------------------------------------------------------
    def keep_span(self) -> None:
        """Park idle sessions, least recently used first, while they hold more than their share of
        the pool's cells beside the running turns (IDLE_SHARE): every step walks past their cells."""
        slots = self.worker.slots.values()
        running = sum(len(s.fed) for s in slots if s.job is not None and s.parked is None)
        if not running:
            return
        idle = [s for s in slots if s.job is None and s.parked is None and s.state is not None and s.fed]
        resident = sum(len(s.fed) for s in idle)
        allowed = max(running // IDLE_SHARE, IDLE_FLOOR)
        if resident <= allowed or self._rows_to_go() < self.worker.backend.park_break_even:
            return
        for slot in sorted(idle, key=lambda s: s.used):
            if resident <= allowed:
                return
            resident -= len(slot.fed)
            self.park(slot)
            self.parks += 1

    def _rows_to_go(self) -> int:
        """Rows the running turns have left to read and decode at most (their prompts' rest, their
        max_tokens): a park for span pays off only over this many (the backend's park_break_even).
        Measured (1.7B model, 2 cores): a 64-token reply after a 1,500-token prompt decoded at 12.6
        tok/s while the prompt's idle session parked (0.42 s of reading 295 MB, then its write beside
        the compute), against 20 undisturbed; walking past its cells would have cost it 0.2 s."""
        max_context = self.worker.config.max_context
        left = 0
        for s in self.worker.slots.values():
            if s.job is not None and s.parked is None:
                room = max_context - len(s.fed)
                left += len(s.job.pending) + max(0, min(s.job.params.max_tokens - len(s.job.generated), room))
        return left

    def fit(self, items: list[Item], alone: list[Item]) -> tuple[list[Item], list[Item]]:
        """The round's items that fit the pool now, oldest turn first; makes room by parking idle
        sessions, then preempting turns younger than the one that needs cells. The others pause."""
        self.keep_span()
        kept: set[int] = set()
        taken = 0  # cells the turns kept so far will take in this round
        for job, slot, feed in sorted(items + alone, key=lambda item: item[0].admitted):
            need = taken + len(feed) + (len(slot.fed) if slot.parked is not None else 0)
            if self.free() < need:
                self.make_room(need)
                self._preempt_younger(job, need)
            if self.free() < need:
                continue  # paused: it waits for a later round
            if slot.parked is not None and not self._resume(job, slot):
                continue
            taken += len(feed)
            slot.used = self.tick()
            kept.add(id(job))
        if not kept and (items or alone):  # cannot happen while one context fits the pool; never spin
            log.error("no running turn fits the K/V pool (%d free)", self.free())
            time.sleep(0.01)
        return [i for i in items if id(i[0]) in kept], [i for i in alone if id(i[0]) in kept]

    def _preempt_younger(self, job: "Job", need: int) -> None:
        while self.free() < need:
            younger = [s for s in self.worker.slots.values() if s.job is not None and s.job.admitted > job.admitted
                       and s.parked is None and s.state is not None and s.fed]
            if not younger:
                return
            victim = max(younger, key=lambda s: s.job.admitted)
            log.info("K/V pool full: pausing session %s's turn to let an older one grow", victim.job.session.id)
            self.park(victim)
            self.preempts += 1

    def _resume(self, job: "Job", slot: "Slot") -> bool:
        try:
            self.restore(slot, job)
            return True
        except Exception as e:  # its state file is gone or unreadable: only this reply fails
            log.exception("could not resume session %s's parked turn", job.session.id)
            self.worker._poison(slot, job, e)
            return False

    # -- parking -----------------------------------------------------------------------------------
    def park(self, slot: "Slot") -> None:
        """Move the slot's cells to a file and free them; its tokens (`fed`) stay as they were. The
        cells are read here; the file is written on the writer thread (the module's docstring)."""
        backend = self.worker.backend
        path = self._folder() / f"{next(self._names)}.safetensors"
        write = backend.state_writer(slot.state, {})
        while sum(not f.done() for f in self._writes.values()) >= MAX_WRITES:  # bytes waiting: bounded
            wait(list(self._writes.values()), return_when=FIRST_COMPLETED)
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="confab-park")
        self._writes[path] = self._writer.submit(write, path)
        backend.free_state(slot.state)
        slot.state, slot.parked = None, path

    def _written(self, path: Path) -> None:
        """Wait for a parked file's write to end; raises what the write raised."""
        future = self._writes.pop(path, None)
        if future is not None:
            future.result()

    def restore(self, slot: "Slot", job: Optional["Job"] = None) -> None:
        """Bring a parked state back into the pool (the caller made room for it).

        A state comes back in one piece of contiguous cells: when the free cells are scattered,
        the backend compacts them; failing that, more idle sessions (then turns younger than `job`)
        park until it fits, which it does once the pool is empty."""
        path = slot.parked
        backend = self.worker.backend
        self._written(path)
        while True:
            try:
                state, _ = backend.load_state(path)
                break
            except Exception:
                if getattr(backend, "compact", None) is not None and backend.compact():
                    continue
                if not self._park_one(slot, job):
                    raise
        slot.state, slot.parked = state, None
        _unlink(path)
        self.restores += 1

    def _park_one(self, spare: "Slot", job: Optional["Job"]) -> bool:
        """Park the least recently used idle session, else the youngest turn younger than `job`."""
        held = [s for s in self.worker.slots.values() if s is not spare and s.parked is None and s.state is not None
                and s.fed]
        idle = [s for s in held if s.job is None]
        younger = [s for s in held if s.job is not None and job is not None and s.job.admitted > job.admitted]
        if idle:
            self.park(min(idle, key=lambda s: s.used))
            self.parks += 1
        elif younger:
            self.park(max(younger, key=lambda s: s.job.admitted))
            self.preempts += 1
        else:
            return False
        return True

    def discard(self, slot: "Slot") -> None:
        """Forget a parked state (its session closed, reset, or starts over)."""
        if slot.parked is not None:
            future = self._writes.pop(slot.parked, None)
            if future is not None:
                wait([future])  # never unlink a file its write would then create again
            _unlink(slot.parked)
            slot.parked = None

    def save_parked(self, slot: "Slot", path: Path, meta: dict[str, str]) -> None:
        """Write a parked state to `path` as a session state file, without bringing it back into the pool."""
        from safetensors import safe_open
        from safetensors.numpy import save_file

        self._written(slot.parked)
        with safe_open(str(slot.parked), framework="numpy") as f:
            raw = dict(f.metadata() or {})
            tensors = {key: f.get_tensor(key) for key in f.keys()}
        tmp = path.with_name(path.name + ".tmp")
        save_file(tensors, str(tmp), metadata={**raw, **meta})
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def close(self) -> None:
        """Remove every parked file (the engine is closing)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
        self._writes.clear()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def _folder(self) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="confab-parked-"))
        return self._dir


def _unlink(path: Any) -> None:
    try:
        Path(path).unlink()
    except OSError:
        pass
