"""What a round costs here (`RowCost`, a running fit of seconds against rows), and how many tokens a
draft model should guess this round by what its forwards cost (`worth_asking`).

A draft model's guess costs one of its forwards per token (all sessions' guesses of one depth share
a forward), paid whether or not the guess is taken. On a machine where the draft is not many times
faster than the model (measured: the bundled 135M Q4_1 drafting for its own float32 weights on 2
cores, 8 conversations at once went from 62 to 16 tok/s when always asked), guessing is a loss; so
each round compares the expected tokens per second with and without guesses, from the measured
cost of the model's rounds and of the draft's forwards, and asks for the depth that does best: none
where guessing would slow the round.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

PRIOR_ROW_COST = 1.0
"""One more row's cost as a share of a round's fixed cost, until the engine has measured its own.
Measured with the bundled model on 2 AVX2 cores (every row's logits): 11.5 ms a row against 6 ms
fixed on one thread (1.9), 6 against 5.5 on two (1.1): on a CPU a small model's rows are compute,
not weight reading, so a draft must be likely to pay. A GPU's is far lower, and soon measured."""
PROBE_SPAN = 2.0
"""How far the rounds' own fit may move the probed ratio, either way."""
COST_DECAY = 0.98
"""Weight of past rounds in the row-cost fit."""


@dataclass
class RowCost:
    """A running least-squares fit of a decode round's seconds against its rows (T = a + b·rows)."""

    sums: list[float] = field(default_factory=lambda: [0.0] * 5)  # n, Σx, Σy, Σx², Σxy
    fitted: Optional[float] = None
    """The last ratio the rounds could fit: it holds while the recent rounds are all of one size
    (after a stretch of replies without drafts the fit would otherwise forget what a row costs)."""
    probed: Optional[float] = None
    """The ratio a controlled probe measured (`probe_ratio`); the rounds' fit may move it at most
    PROBE_SPAN either way. Alone, the fit of a mix of rounds swung from 0.08 to 3.2 within one bench
    on one machine (the rounds' sizes cluster, and their times carry the pool's other work)."""

    def observe(self, rows: int, seconds: float) -> None:
        for i, v in enumerate((1.0, rows, seconds, rows * rows, rows * seconds)):
            self.sums[i] = self.sums[i] * COST_DECAY + v

    def seconds(self, rows: float) -> Optional[float]:
        """A round of `rows` rows' predicted seconds (the line through the mean of the rounds seen,
        with the fitted or prior slope); None before any round."""
        n, x, y = self.sums[:3]
        if n <= 0:
            return None
        r = self.ratio()
        return (y / n) / (1.0 + r * x / n) * (1.0 + r * rows)

    def ratio(self) -> float:
        """b / a: one more row's time in units of a round's fixed time; the last fit while recent
        rounds are too alike to fit, the prior until rounds of several sizes have been seen."""
        n, x, y, xx, xy = self.sums
        spread = n * xx - x * x
        known = self.fitted or self.probed or PRIOR_ROW_COST
        if n >= 8 and spread >= 0.25 * n * n:
            b = (n * xy - x * y) / spread
            a = (y - b * x) / n
            if a > 0:
                known = self.fitted = min(max(b / a, 0.01), 4.0)
        if self.probed is not None:
            known = min(max(known, self.probed / PROBE_SPAN), self.probed * PROBE_SPAN)
        return known


def step_seconds(backend, seq, rows: int, repeats: int = 2) -> tuple[float, float]:
    """Fastest seconds of one forward of 1 row and of `rows` rows (every row's logits, as a drafted
    round asks) on a scratch sequence `seq`; each forward's tokens are removed again."""
    best = {1: float("inf"), rows: float("inf")}
    for _ in range(repeats):
        for n in best:
            began = time.perf_counter()
            backend.step([(seq, [0] * n)], [n])
            best[n] = min(best[n], time.perf_counter() - began)
            backend.trim(seq, n)
    return best[1], best[rows]


def probe_ratio(backend, seq, rows: int = 9) -> Optional[float]:
    """b / a from `step_seconds`; None if they cannot say."""
    one, many = step_seconds(backend, seq, rows)
    b = (many - one) / (rows - 1)
    a = one - b
    return min(max(b / a, 0.01), 4.0) if a > 0 and b > 0 else None


def worth_asking(accepts: list[float], wanted: list[int], rows: int, decoding: int,
                 model: RowCost, draft: RowCost) -> int:
    """The number of draft forwards (guess depth) that gives the most expected tokens per second, or
    0 when none beats not asking. `accepts[i]`: session i's running chance a guess is taken;
    `wanted[i]`: most guesses it may use; `rows`: the round's rows without guesses, `decoding` of
    them decoding sessions. Before either cost has been measured, the deepest wanted (so it is)."""
    plain, step = model.seconds(rows), draft.seconds(len(wanted))
    if plain is None or step is None:
        return max(wanted)
    best, best_rate = 0, decoding / plain
    for depth in range(1, max(wanted) + 1):
        used = [min(depth, k) for k in wanted]
        gain = sum(sum(a ** j for j in range(1, n + 1)) for a, n in zip(accepts, used))
        rate = (decoding + gain) / (model.seconds(rows + sum(used)) + depth * step)
        if rate > best_rate:
            best, best_rate = depth, rate
    return best
