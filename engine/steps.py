"""Records of the step loop: a session's slot and the job generating its reply.

Both live on the engine thread. Kept below `worker` (which runs the loop), `batch` (which holds
slots while they decode together), `together` and `batched_rounds` (the two ways a round is
stepped, which name what they need of the worker as `RoundOwner`), so none of them has to import
another for these.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Protocol

from .types import Chunk, SamplingParams

if TYPE_CHECKING:
    from .session import Session


@dataclass
class Slot:
    """Engine-thread side of a session: its state and the tokens fed into it."""

    state: Any = None
    fed: list[int] = field(default_factory=list)
    job: Optional["Job"] = None
    parked: Any = None
    """Path of the file its state waits in while parked out of a shared K/V pool (engine/kv_room.py);
    None while resident (or stateless)."""
    used: int = 0
    """When it last started or stepped a turn (kv_room's clock): least recently used idle slots park first."""


@dataclass
class Job:
    """One reply being generated."""

    session: "Session"
    prompt: list[int]
    params: SamplingParams
    out: queue.Queue
    cancel: threading.Event
    chat_text: Optional[str]
    pending: list[int] = field(default_factory=list)
    generated: list[int] = field(default_factory=list)
    prefilled: int = 0
    started: float = field(default_factory=time.perf_counter)
    first_token_at: Optional[float] = None
    ended: bool = False
    sampler: Callable = None
    decoder: Any = None
    guide: Any = None
    """The constraint's grammar state (engine.reply.constraint.Guide), or None for free text."""
    logprobs: tuple = ()
    """Log probabilities of the token not yet delivered in a chunk."""
    constraint_s: float = 0.0
    splitter: Any = None
    """Splits decoded text into reasoning and answer (engine/reply/reasoning.py); None: all answer."""
    drafter: Any = None
    """Its drafting state (engine.drafts.speculative.DraftState) once it has decoded in a joint round."""
    admitted: int = 0
    """Order of admission into a shared K/V pool (kv_room): the youngest turn pauses first."""
    images: dict = field(default_factory=dict)
    """The prompt's images (engine.images.ImageSpan) by their first id: what an image id in `pending` is."""

    def chunk(self, text: str, token_ids: tuple, *end: Any, final: bool = False, logprobs: tuple = ()) -> Chunk:
        """A chunk of `text` with its reasoning apart; `final` also takes what the splitter held."""
        if self.splitter is None:
            return Chunk(text, token_ids, *end, logprobs=logprobs)
        reasoning, answer = self.splitter.feed(text)
        if final:
            more_reasoning, more_answer = self.splitter.flush()
            reasoning, answer = reasoning + more_reasoning, answer + more_answer
        return Chunk(answer, token_ids, *end, logprobs=logprobs, reasoning=reasoning)


class RoundOwner(Protocol):
    """What `together.Together` and `batched_rounds.BatchedRounds` need of the `worker.Worker` whose
    rounds they step (the worker makes them, so neither can import `worker`)."""

    backend: Any
    config: Any
    pool: Any
    room: Any
    slots: dict[int, Slot]
    scheduler: Any
    batching: bool
    batch: Any

    def live_jobs(self) -> Iterator[tuple[Job, Slot]]: ...

    def _after_forward(self, job: Job, slot: Slot, fed: list[int], logits: Any, nbytes: int) -> None: ...

    def _end_job(self, slot: Slot, reason: str, last_ids: tuple = (), text: str = "") -> None: ...

    def _guarded(self, job: Job, slot: Slot, fn: Callable[[], None]) -> None: ...

    def _settle(self) -> None: ...

    def _poison(self, slot: Slot, job: Job, error: BaseException) -> None: ...
