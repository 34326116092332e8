"""How many threads llama.cpp decodes with, chosen by what the machine gives now.

Why: ggml's threads meet at a barrier after every operation, so one thread that loses its core to
another program stalls all of them: beside one busy core the bundled model kept 0.42× of its quiet
decode speed on two threads, and two engine processes (the app and `engine serve`) kept 0.07× each,
where one thread each would have kept about half. A fixed count cannot be right on both a quiet and
a busy machine, so this watches the time of each decode call and:

- drops a thread when the time per call jumps (median of the last few calls over `jump` × the
  best median of this shape at this count in the last `memory_s` seconds) — a neighbour took a
  core. The best outlives other shapes in between: a neighbour that arrived during a prompt read
  must not become the decode's new normal (two engine processes kept 0.17× each that way). It
  expires, so a reply whose calls slow as its context grows is never taken for a neighbour;
- keeps that drop only if one thread fewer is faster (by `gain`) than the calls that made it drop;
  otherwise it goes back, and those slower calls are the new normal. A drop whose judgement cannot
  finish (the calls change shape, or a prompt is to be read) goes back too: it was never proven. A
  light neighbour (the HTTP clients of `engine serve` on the same two cores) slows calls by 1.4× now
  and then without making one thread fewer any faster: a policy that dropped on every jump see-sawed between one and two
  threads every few seconds and served 8 clients at 93–150 tok/s where two threads kept gave 160–180;
- probes one thread more after `probe_s` seconds, keeps it if calls got faster (by `gain`), and
  otherwise goes back and waits twice as long before the next probe (up to `max_probe_s`).

On a quiet machine the time never jumps, so the count stays at the maximum. `jump` is 1.4, not
more: with two engine processes, the second to notice saw only 1.5× once the first had dropped to
one thread, kept both of its threads, and starved the first (0.33× of quiet against 0.51–0.61×).
Only calls of the same shape (tokens per call) are compared: a batch of 8 is slower than a batch of 1 for no one's fault.
The clock is injected, so the logic is tested without timing anything.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from typing import Callable, Optional

WINDOW = 6
"""Calls measured before a count's speed is known (median, robust to one slow call)."""
MEMORY_S = 10.0
"""How long a best median is compared against: calls slow down as a context grows, by far less
than `jump` within seconds, but by more over a long reply."""

CONTEXT_STEP = 1.5
"""Calls are compared with calls whose rows attend to about as many positions: within one step of
this ratio (`context_band`). Eight clients of the bundled model start at ~35 positions a row, and
their 8-row calls grew from 35 to 49 ms in a few seconds as the replies lengthened (2-core EPYC):
compared across contexts, that read as a neighbour and cost two one-thread windows per reply."""
CONTEXT_FLOOR = 512
"""Positions attended below which one band holds every call: there the weights, not attention, set
the time."""


def context_band(context: int) -> int:
    """The band of a call whose rows attend to `context` positions in all (0 below CONTEXT_FLOOR)."""
    return 0 if context < CONTEXT_FLOOR else 1 + int(math.log(context / CONTEXT_FLOOR, CONTEXT_STEP))


SHARE_FLOOR = 0.6
"""Below this share of its cores (CPU seconds ÷ threads × wall seconds), a decode is starved: under
a load average of 9 on two cores, two threads got 0.09–0.15 each and decoded at 5–6 tok/s where one
thread decoded at 9.5–9.9 (bundled model). A quiet machine gives its threads nearly all of their
cores; one busy neighbour on one of two cores about 0.75, which the time rule sees instead."""


STALL = 3.0
"""A probe's call this many times the count's mean before it ends the probe at once."""


def starting_threads(max_threads: int, load: Optional[float] = None, cores: Optional[int] = None,
                     busy: Optional[float] = None) -> int:
    """Threads to start with: all of them, unless the machine is crowded, then their share (the cores
    over the load average). Crowded takes two signs: a load average over the cores, and the cores
    busy right now (`busy`, a 0.1-s sample taken only then) more than `BUSY_NOW` of them. A load
    average alone is a minute's memory: `engine serve` started just after a benchmark of
    llama-server had ended began on one thread of two and read a 1,500-token prompt in 17 s, not 8.
    Where the load average is not known (Windows), all of them. The probes move up from a start
    that was too low, but only once replies are decoding."""
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            return max_threads
    cores = cores or os.cpu_count() or 1
    if load <= cores:
        return max_threads
    if busy is None:
        busy = busy_cores(cores)
    if busy < BUSY_NOW * cores:
        return max_threads
    return max(1, min(max_threads, int(max_threads * cores / load)))


BUSY_NOW = 0.25
"""Share of the cores busy at start, beside a high load average, from which the engine starts with
fewer threads: only a machine nearly idle now (the work the load average remembers has ended) gets
every thread at once. A neighbour that works in bursts (another test worker, a build) may be caught
between two of them by a 0.1-s sample; the probes add the threads back where that was too careful."""


def busy_cores(cores: int, seconds: float = 0.1) -> float:
    """How many cores the machine keeps busy now (all programs; this one is loading, not computing)."""
    import psutil

    return psutil.cpu_percent(interval=seconds) / 100 * cores


class ThreadPolicy:
    """Decides the decode thread count from the time of each decode call."""

    def __init__(self, max_threads: int, clock: Callable[[], float] = time.monotonic, jump: float = 1.4,
                 gain: float = 0.1, probe_s: float = 5.0, max_probe_s: float = 80.0,
                 memory_s: float = MEMORY_S, share_floor: float = SHARE_FLOOR, start: Optional[int] = None) -> None:
        self.max_threads = max(1, max_threads)
        self.threads = min(self.max_threads, max(1, start or self.max_threads))
        self.clock = clock
        self.jump, self.gain = jump, gain
        self.probe_s, self._wait_s, self.max_probe_s = probe_s, probe_s, max_probe_s
        self._shape: Optional[int] = None
        self._recent: list[float] = []
        self._cpu: list[Optional[float]] = []  # CPU seconds of the same calls, where measured
        self.share_floor = share_floor
        self._proven: dict[int, float] = {}  # thread count -> when a probe found it faster than one fewer
        self.memory_s = memory_s
        self._best: dict[tuple[int, int, int], tuple[float, float]] = {}
        """(shape, threads, context band) -> (best median, when)."""
        self._band = 0
        self._changed_at = clock()
        self._probing_from: Optional[tuple[int, float]] = None  # (count, its mean) while a probe runs
        self._dropped_from: Optional[tuple[int, float]] = None
        """(count, the median of the slower half of its calls) while a drop to one fewer is judged."""

    def record(self, seconds: float, tokens: int, cpu_seconds: Optional[float] = None,
               context: int = 0) -> Optional[int]:
        """One decode call took `seconds` for `tokens` tokens (and `cpu_seconds` of this process's
        CPU time, where measured) whose rows attend to `context` positions in all; the new thread
        count if it changes. A new context band does not restart the window (the calls beside it
        differ by one band at most): it only picks the best the window is compared with."""
        self._band = context_band(context)
        if tokens != self._shape:  # another batch shape: its times are not comparable
            self._shape, self._recent, self._cpu = tokens, [], []
            self._probing_from = None
            return self.reading()  # nor can they judge a drop
        if self._probing_from is not None and seconds > STALL * self._probing_from[1]:
            return self._fail_probe()  # one stall settles it: the next could last seconds too
        self._recent = (self._recent + [seconds])[-WINDOW:]
        self._cpu = (self._cpu + [cpu_seconds])[-WINDOW:]
        if len(self._recent) < WINDOW:
            return None
        now = statistics.median(self._recent)
        if self._dropped_from is not None:
            return self._end_drop(now)
        if self._probing_from is not None:
            return self._end_probe(statistics.fmean(self._recent), now)
        best = self._remember(now)
        if self.threads > 1 and (now > self.jump * best or self._starved()):
            # the drop is judged against the slower half of this window: its first calls may be from
            # before the neighbour came
            self._dropped_from = (self.threads, statistics.median(sorted(self._recent)[len(self._recent) // 2:]))
            return self._set(self.threads - 1)
        if self.threads < self.max_threads and self.clock() - self._changed_at >= self._wait_s:
            self._probing_from = (self.threads, statistics.fmean(self._recent))
            return self._set(self.threads + 1)
        return None

    def reading(self) -> Optional[int]:
        """A prompt is about to be read (calls this policy does not compare): the count to read it
        with if it changes. A drop not judged yet goes back first (as when the calls change shape): its calls ended before they could
        show one thread fewer faster, and a prompt read on a count nobody proved right took twice as
        long (a 1,500-token prompt 15.3 s instead of 7.9; a 4,000-token one 66 s instead of 34: the
        drop came from a few slow calls at the end of the reply before, on a quiet machine)."""
        if self._dropped_from is None:
            return None
        before = self._dropped_from[0]
        self._dropped_from = None
        return self._set(before)

    def _starved(self) -> bool:
        """Did the threads get under `share_floor` of their cores over the window? A machine busy
        from the start has no quiet time to compare with, and this needs none. Not after a probe
        proved this count faster than one fewer: then it is the best there is."""
        if None in self._cpu or self.clock() - self._proven.get(self.threads, -math.inf) < self.max_probe_s:
            return False
        return sum(self._cpu) < self.share_floor * self.threads * sum(self._recent)

    def _remember(self, median: float) -> float:
        """What `median` is compared with: the best median of this shape, count and context band
        within `memory_s` (`median` included), or a lower band's times `CONTEXT_STEP` for each band
        between, if less: a neighbour that came as the band changed is seen against the band before."""
        key, at = self._key(), self.clock()
        best = self._best.get(key)
        if best is None or median <= best[0] or at - best[1] > self.memory_s:
            best = self._best[key] = (median, at)
        below = [t * CONTEXT_STEP ** (self._band - band) for (shape, threads, band), (t, when) in self._best.items()
                 if shape == self._shape and threads == self.threads and band < self._band
                 and at - when <= self.memory_s]
        return min([best[0], *below])

    def _key(self, threads: Optional[int] = None) -> tuple[int, int, int]:
        return self._shape, self.threads if threads is None else threads, self._band

    def _end_probe(self, mean: float, median: float) -> Optional[int]:
        """The probe's time and the count's before it are means, not medians: on a crowded machine
        one thread more is slower by its rare calls that stall for seconds (a thread descheduled at
        a barrier), which a median never shows."""
        before = self._probing_from[1]
        if mean <= (1 - self.gain) * before:
            self._probing_from = None  # faster with one more: keep it, probe again soon
            self._wait_s = self.probe_s
            self._proven[self.threads] = self.clock()
            self._best[self._key()] = (median, self.clock())  # the neighbour stays: the new best
            return None
        return self._fail_probe()

    def _end_drop(self, median: float) -> Optional[int]:
        """After a drop: keep it if one thread fewer is faster than the calls that made it drop;
        else go back to them, and take their time as this count's best (the neighbour is light and
        stays: comparing with the quiet time again would drop at once, and again)."""
        before, before_median = self._dropped_from
        self._dropped_from = None
        if median <= (1 - self.gain) * before_median:  # medians: the drop was decided on one
            self._best[self._key()] = (median, self.clock())
            return None
        self._best[self._key(before)] = (before_median, self.clock())
        return self._set(before)

    def _fail_probe(self) -> int:
        count = self._probing_from[0] if self._probing_from else self.threads - 1
        self._probing_from = None
        self._wait_s = min(2 * self._wait_s, self.max_probe_s)
        return self._set(count)

    def _set(self, threads: int) -> int:
        self.threads = threads
        self._recent, self._cpu, self._changed_at = [], [], self.clock()
        return threads
