"""Which jobs step next: every generating session advances once per round, in arrival order.

A long prompt is fed in chunks (EngineConfig.prefill_chunk), one chunk per round, so a new request
never stalls the others' tokens for its whole prompt, and a long reply never stalls a new request.
Within a round the worker runs prefill chunks one session per forward, then every decoding session
together in one batched forward (engine/batch.py): sessions join and leave between rounds.
"""

from __future__ import annotations

from typing import Any


class RoundRobin:
    """Fair order: jobs step in the order they arrived, one forward each per round."""

    def __init__(self) -> None:
        self._jobs: list[Any] = []

    def add(self, job: Any) -> None:
        self._jobs.append(job)

    def remove(self, job: Any) -> None:
        if job in self._jobs:
            self._jobs.remove(job)

    def round(self) -> list[Any]:
        """The jobs to step this round (a copy: jobs may finish while it runs)."""
        return list(self._jobs)

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __len__(self) -> int:
        return len(self._jobs)
