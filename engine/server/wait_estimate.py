"""How long a client refused for capacity should wait: the running turns' tokens left ÷ the speed
they are measured at, for the turn that should end first.

Why: a fixed `Retry-After: 1` while turns need minutes makes SDKs spend their retries (the openai
and anthropic clients try 2-3 times with backoff) in seconds and then fail the agent's step.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Iterable, Optional

MIN_WAIT_S, MAX_WAIT_S = 1, 600
UNMEASURED_WAIT_S = 5
"""Before any turn has been measured (the server's first minutes): a guess, said to be one."""


@dataclass
class Turn:
    """One running turn: it ends, at the latest, when its session holds `end_tokens` tokens."""

    end_tokens: int
    start_tokens: int
    began: float = field(default_factory=time.monotonic)

    def left(self, tokens_now: int) -> int:
        return max(0, self.end_tokens - tokens_now)

    def speed(self, tokens_now: int, now: float) -> Optional[float]:
        """Tokens/s this turn has gone at so far (its prompt read included); None too early to say."""
        done, took = tokens_now - self.start_tokens, now - self.began
        return done / took if done > 0 and took >= 0.2 else None


class WaitEstimate:
    """Keeps the speed of finished turns (a moving average) and estimates the wait for a new one."""

    def __init__(self) -> None:
        self.speed: Optional[float] = None

    def finished(self, turn: Turn, tokens_now: int) -> None:
        measured = turn.speed(tokens_now, time.monotonic())
        if measured:
            self.speed = measured if self.speed is None else 0.7 * self.speed + 0.3 * measured

    def wait(self, running: Iterable[tuple[Turn, int]]) -> tuple[int, str]:
        """(seconds, the estimate in words) until the first of `running` (turn, its session's
        tokens now) should end."""
        now, best = time.monotonic(), None
        count = 0
        for turn, tokens in running:
            count += 1
            speed = turn.speed(tokens, now) or self.speed
            if speed:
                left = turn.left(tokens)
                eta = left / speed
                if best is None or eta < best[0]:
                    best = (eta, left, speed)
        if best is None:
            return UNMEASURED_WAIT_S, (f"no running turn has been timed yet: retry in about {UNMEASURED_WAIT_S} s"
                                       if count else f"retry in about {UNMEASURED_WAIT_S} s")
        eta, left, speed = best
        seconds = min(MAX_WAIT_S, max(MIN_WAIT_S, math.ceil(eta)))
        return seconds, (f"the first of {count} running {'turn' if count == 1 else 'turns'} should end within "
                         f"about {seconds} s ({left} tokens left at {speed:.1f} tok/s)")
