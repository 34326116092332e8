"""How likely a lookup draft is to be taken, from the length of the match that proposed it.

Measured on the bundled model (a code edit, a story and an explanation, 400 tokens each, every lookup
drafted): a draft after a 4-token match was taken 98 times in 98 at its first position, one after a
1-token match 14 times in 102; once a draft was taken, the next was taken 0.9–1.0 of the time
whatever the match. So the first draft's chance depends on the match length and each later one's
on the draft before it: two rates per length. They are learned as the engine runs (`MatchOdds`,
one per engine, from priors near those figures), and each reply keeps its own record on top
(`ReplyOdds`), so a reply whose long matches fail (it is writing, not quoting) stops drafting them
without teaching the other conversations that long matches fail.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FIRST_PRIOR = {0: 0.75, 1: 0.15, 2: 0.4, 3: 0.6, 4: 0.85}
"""Chance the first draft is taken, by match length, before anything is measured; 0 stands for a
draft model's guess (a small model of the same family agrees with the large one on most tokens)."""
NEXT_PRIOR = 0.85
"""Chance a draft is taken when the one before it was."""
ENGINE_WEIGHT = 8.0
"""How many drafts' worth of evidence the priors are worth against the engine's own record."""
REPLY_WEIGHT = 4.0
"""How many drafts' worth the engine's rates are worth against one reply's own record."""
DECAY = 0.99
"""Weight of earlier verdicts in the engine's record, per new one: the mix of work changes."""


@dataclass
class Rate:
    """A share with a prior: (taken + weight·prior) / (tried + weight)."""

    taken: float = 0.0
    tried: float = 0.0

    def add(self, hit: bool, decay: float = 1.0) -> None:
        self.taken = self.taken * decay + hit
        self.tried = self.tried * decay + 1.0

    def value(self, prior: float, weight: float) -> float:
        return (self.taken + weight * prior) / (self.tried + weight)


def _verdicts(drafted: int, accepted: int) -> list[tuple[int, bool]]:
    """(position, taken) for each draft the model judged: up to the first rejected one."""
    return [(j, j <= accepted) for j in range(1, min(drafted, accepted + 1) + 1)]


def _length(match: int) -> int:
    """The record a match length is kept under (longer matches than the priors name share the last)."""
    return min(max(match, 0), max(FIRST_PRIOR))


@dataclass
class _Record:
    """Per match length, the first draft's rate and the next drafts' rate."""

    first: dict[int, Rate] = field(default_factory=lambda: {m: Rate() for m in FIRST_PRIOR})
    next: dict[int, Rate] = field(default_factory=lambda: {m: Rate() for m in FIRST_PRIOR})

    def _add(self, m: int, drafted: int, accepted: int, decay: float = 1.0) -> None:
        for j, taken in _verdicts(drafted, accepted):
            (self.first if j == 1 else self.next)[m].add(taken, decay)


class MatchOdds(_Record):
    """The engine's record, drawn toward the priors."""

    def rates(self, match: int) -> tuple[float, float]:
        m = _length(match)
        return (self.first[m].value(FIRST_PRIOR[m], ENGINE_WEIGHT),
                self.next[m].value(NEXT_PRIOR, ENGINE_WEIGHT))

    def learn(self, match: int, drafted: int, accepted: int) -> None:
        self._add(_length(match), drafted, accepted, DECAY)


class ReplyOdds(_Record):
    """One reply's own record, drawn toward the engine's rates until it has drafted enough."""

    def chances(self, engine: MatchOdds, match: int, n: int) -> list[float]:
        """The chance each of the first `n` drafts of a `match`-token match (0: the draft model's
        guess) is used this round."""
        if match < 0 or n <= 0:
            return []
        m = _length(match)
        first, later = engine.rates(m)
        p = self.first[m].value(first, REPLY_WEIGHT)
        q = self.next[m].value(later, REPLY_WEIGHT)
        out = [p]
        while len(out) < n:
            out.append(out[-1] * q)
        return out

    def forget(self, share: float) -> None:
        """A round without drafts: its own record fades by `share`, toward the engine's rates, so a
        reply whose drafts failed tries again now and then (it may start quoting later)."""
        for rate in (*self.first.values(), *self.next.values()):
            rate.taken, rate.tried = rate.taken * (1.0 - share), rate.tried * (1.0 - share)

    def learn(self, engine: MatchOdds, match: int, drafted: int, accepted: int) -> None:
        """A round's verdict on drafts of a `match`-token match: `accepted` leading ones were taken."""
        if match < 0 or drafted <= 0:
            return
        self._add(_length(match), drafted, accepted)
        engine.learn(match, drafted, accepted)
