"""How many tokens a draft model should guess this round, by what its forwards cost here.

A draft model's guess costs one of its forwards per token (all sessions' guesses of one depth share
a forward), paid whether or not the guess is taken. On a machine where the draft is not many times
faster than the model (measured: the bundled 135M Q4_1 drafting for its own float32 weights on 2
cores, 8 conversations at once went from 62 to 16 tok/s when always asked), guessing is a loss; so
each round compares the expected tokens per second with and without guesses, from the measured
cost of the model's rounds and of the draft's forwards, and asks for the depth that does best: none
where guessing would slow the round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .speculative import RowCost


def worth_asking(accepts: list[float], wanted: list[int], rows: int, decoding: int,
                 model: "RowCost", draft: "RowCost") -> int:
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
