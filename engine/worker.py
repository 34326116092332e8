"""What runs on the engine thread: session states, generation jobs and the step loop.

Only this thread touches the model, any session's state or the compute stream. Other threads reach
it through `Engine._post` / `Engine._call`, which queue a function to run here between steps.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Optional

from . import capacity, state_file
from .errors import CapacityError, EngineError, SessionClosedError, SessionPoisonedError
from .batch import Batch
from .batched_rounds import BatchedRounds
from .reply.logprobs import token_logprob
from .reply.sampling import make_sampler
from .scheduler import RoundRobin
from .handle import Failed
from .steps import Job, Slot
from .kv_room import Room
from .prefix_share import common_prefix, take_shared_prefix
from .prefix_cache import open_cache, save_prompt_blocks, take_cached_prefix
from .together import Together
from .images import span_floor
from .types import Chunk, GenerationStats

if TYPE_CHECKING:
    from .session import Session

log = logging.getLogger(__name__)


class Worker:
    """Owns the backend and every session slot; runs only on the engine thread."""

    def __init__(self, backend, codec, model, config) -> None:
        self.backend = backend
        self.codec = codec
        self.model = model
        self.config = config
        self.slots: dict[int, Slot] = {}
        self.scheduler = RoundRobin()
        self.batch = Batch(backend, on_lost=self._lost)
        # deterministic: every session alone in its forward, so bf16 rounding matches a solo run
        self.batching = config.max_batch > 1 and not config.deterministic
        self.pool = getattr(backend, "pool", None)
        """llama.cpp: one K/V pool all sessions share, sized at load (tokens, bytes, sequences)."""
        if self.pool is not None:
            self.per_session, self.budget, self.max_sessions = self.pool.per_session, self.pool.budget, self.pool.max_sessions
        else:
            self.per_session = capacity.bytes_per_session(model.config, backend.dtype, config.max_context)
            self.budget = config.memory_budget or capacity.default_budget(backend.available_memory())
            self.max_sessions = capacity.max_sessions(
                self.per_session, self.budget, config.max_sessions, budget_given=config.memory_budget is not None
            )
        # Backends that decode any mix of sessions and prompt chunks in one call (llama.cpp) step a
        # whole round at once; the others step prefill alone and decode through `self.batch`.
        self.together = Together(self) if hasattr(backend, "step") else None
        self.rounds = self.together if self.together is not None else BatchedRounds(self)
        """What steps a round: `together`, or a forward per session with the decoders batched."""
        self.room = Room(self) if self.pool is not None else None
        """Admission into the shared pool, and parking of idle or younger turns when it is full."""
        self.backend_reason = ""
        self.draft_model = None
        """A small model of the same vocabulary that guesses tokens (engine/drafts/draft_model.py), if loaded."""
        self.vocab_size = 0
        self.load_seconds = 0.0
        self.prefix_cache, self.prefix_cache_reason = open_cache(backend, model, config)
        """Prompts' K/V in blocks on disk (engine/prefix_cache/), or None, and in words where or why not."""

    # -- sessions ----------------------------------------------------------------------------------
    def open_session(self, session: "Session", restore_from: Optional[Path]) -> None:
        capacity.admit(len(self.slots), self.max_sessions, self.per_session, self.budget)
        slot = Slot()
        if restore_from is not None:
            slot.state, tokens, fed, chat_key = self._read_state(restore_from)
            slot.fed = tokens[:fed]
            session._tokens = tuple(tokens)
            session._chat_key = chat_key
            session._state_nbytes = self.backend.state_nbytes(slot.state)
        self.slots[session.id] = slot

    def close_session(self, session: "Session") -> None:
        self.close_slot(session.id)
        session._state_nbytes = 0

    def close_slot(self, session_id: int) -> None:
        """Free a session's slot by id (also what a dropped handle's finalizer asks for)."""
        slot = self.slots.get(session_id)
        self._release(slot)
        self.slots.pop(session_id, None)
        if self.draft_model is not None:
            self.draft_model.forget(session_id)
        if slot is not None:
            self._end_job(slot, "cancelled")
            self.drop_state(slot)

    def _slot(self, session: "Session") -> Slot:
        """The session's slot, or SessionClosedError when it was closed while this request waited."""
        slot = self.slots.get(session.id)
        if slot is None:
            raise SessionClosedError(f"session {session.id} is closed")
        return slot

    def reset(self, session: "Session") -> None:
        slot = self._slot(session)
        self._release(slot)
        self._end_job(slot, "cancelled")
        self.drop_state(slot)
        session._tokens, session._chat_key, session._state_nbytes = (), ("", ()), 0
        session._poisoned = None

    def save_state(self, session: "Session", path: Path) -> None:
        slot = self._slot(session)
        self._release(slot)
        meta = state_file.metadata(self.backend.name, self.model.fingerprint, self.codec.template_fingerprint,
                                   session._tokens, len(slot.fed), session._chat_key[0],
                                   getattr(self.backend, "kv_cache", ""))
        if slot.parked is not None:  # parked out of the pool: written from its file, left parked
            self.room.save_parked(slot, path, meta)
            return
        if slot.state is None:
            slot.state = self.backend.new_state()
        state_file.write(self.backend, slot.state, path, meta)

    def drop_state(self, slot: Slot) -> None:
        """Forget the slot's state; a backend whose states live in a shared context (llama.cpp's
        sequences) frees it there too."""
        if slot.state is not None and (free := getattr(self.backend, "free_state", None)) is not None:
            free(slot.state)
        if self.room is not None:
            self.room.discard(slot)
        slot.state, slot.fed = None, []

    def held_tokens(self) -> int:
        """Tokens every open session holds in its state now (a parked one holds none of the pool; a
        prefix several share in llama.cpp's pool counts once)."""
        if self.pool is not None:
            return self.backend.held_tokens()
        return sum(len(slot.fed) for slot in list(self.slots.values()) if slot.parked is None)

    def _release(self, slot: Optional[Slot]) -> None:
        """Give `slot` its own state back if the batch holds it (the batch re-merges next round)."""
        if slot is not None and slot in self.batch:
            self._settle()

    def _settle(self) -> None:
        """Hand batch members their states back; a failed split is handled by `_lost`, not raised."""
        try:
            self.batch.settle()
        except Exception:
            log.exception("splitting the batch failed")

    def _lost(self, members: list[Slot], error: BaseException) -> None:
        """A split failed (e.g. out of memory) and took the members' states with it: a running reply
        is poisoned (its stream gets the error), an idle session starts over from its text next turn."""
        for slot in members:
            self.drop_state(slot)
            if slot.job is not None:
                self._poison(slot, slot.job, error)

    def _read_state(self, path: Path):
        """Check everything the metadata says (format, backend, model, size) before reading tensors."""
        tokens, fed, chat_text = state_file.check(path, self.backend.name, self.model, self.config.max_context,
                                                  getattr(self.backend, "kv_cache", ""))
        if self.room is not None:  # a shared pool: idle sessions park to make room for it
            self.room.make_room(fed)
        state, _ = self.backend.load_state(path)
        return state, tokens, fed, (chat_text, tuple(tokens) if chat_text else ())

    # -- jobs --------------------------------------------------------------------------------------
    def start_job(self, session, prompt, params, out, cancel, chat_text, requested: float,
                  guide=None, splitter=None, images=None) -> Optional[CapacityError]:
        """Start a reply; the refusal when the engine cannot admit it (also put on its stream),
        which `Stream.admitted` raises. `images`: the prompt's image spans by first id (engine/images.py)."""
        job = Job(session, prompt, params, out, cancel, chat_text, started=requested, guide=guide,
                  splitter=splitter, images=images or {})
        try:
            self._start(job)
        except CapacityError as e:  # refused before any compute: the session stays as it was
            job.ended = True
            session._mark_idle()
            out.put(Failed(e))
            return e
        except Exception as e:  # nobody waits on this request: the error must reach the stream
            log.exception("could not start a reply on session %s", session.id)
            self._poison(self.slots.get(session.id) or Slot(), job, e)

    def _start(self, job: Job) -> None:
        session, prompt = job.session, job.prompt
        slot = self.slots.get(session.id)
        self._release(slot)  # its state may still be in the batch from its last reply
        if slot is None:  # closed between the caller's check and now
            self._deliver_end(job, None, "cancelled")
            return
        if self.room is not None:
            keep = span_floor(prompt, min(common_prefix(list(session._tokens), prompt), len(prompt) - 1, len(slot.fed)))
            self.room.admit(slot, job, keep)
        job.sampler = make_sampler(job.params, self.codec.stop_ids)
        job.decoder = self.codec.stream_decoder()
        history = list(session._tokens)
        common = common_prefix(history, prompt)
        # Reuse the longest resident prefix; always leave at least one prompt token to compute logits.
        # An image is one unit: a prefix that ends inside one keeps none of it (engine/images.py).
        keep = span_floor(prompt, min(common, len(prompt) - 1, len(slot.fed)))
        if keep < len(slot.fed):
            if keep > 0 and slot.state is not None and self.backend.trim(slot.state, len(slot.fed) - keep):
                slot.fed = slot.fed[:keep]
            else:
                self.drop_state(slot)
                keep = 0
        keep = take_shared_prefix(self, slot, prompt, keep)
        keep = take_cached_prefix(self, slot, prompt, keep)  # what neither the pool nor the slot holds
        job.pending = prompt[keep:]
        session._tokens = tuple(prompt[:keep])
        slot.job = job
        self.scheduler.add(job)

    def step_round(self) -> None:
        """Advance every active job by one forward's worth: a prefill chunk or one token, all in one
        backend call (engine/together.py) or a forward per session with the decoders batched
        (engine/batched_rounds.py)."""
        self.rounds.round()

    def live_jobs(self) -> Iterator[tuple[Job, Slot]]:
        """This round's jobs that still run, with their slots: a job whose session has gone or moved
        on leaves the scheduler, a cancelled one ends here (the rest is the round's to step)."""
        for job in self.scheduler.round():
            slot = self.slots.get(job.session.id)
            if slot is None or slot.job is not job:
                self.scheduler.remove(job)
            elif job.cancel.is_set():
                self._guarded(job, slot, lambda: self._end_job(slot, "cancelled"))
            else:
                yield job, slot

    def _guarded(self, job: Job, slot: Slot, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as e:  # a failed forward poisons only this session
            log.exception("forward failed on session %s", job.session.id)
            self._poison(slot, job, e)

    def _after_forward(self, job: Job, slot: Slot, feed: list[int], logits, nbytes: int) -> None:
        """Record what was fed; once the prompt is in, sample a token and deliver it."""
        slot.fed.extend(feed)
        session = job.session
        session._tokens = tuple(slot.fed)
        session._state_nbytes = nbytes
        if job.pending:  # a long prompt: say how far it has been read, so a UI need not show "…"
            job.out.put(Chunk("", (), prefill=(job.prefilled, job.prefilled + len(job.pending))))
            return
        if job.guide is not None:  # this session's own mask: batched rows each have theirs
            began = time.perf_counter()
            logits = job.guide.mask(logits)
            job.constraint_s += time.perf_counter() - began
        token = job.sampler(logits, slot.fed)
        if job.params.logprobs is not None:
            job.logprobs = (token_logprob(logits, slot.fed, job.params, token, self.codec.stop_ids),)
        if job.guide is not None:
            began = time.perf_counter()
            job.guide.advance(token)
            job.constraint_s += time.perf_counter() - began
        job.generated.append(token)
        session._tokens = tuple(slot.fed) + (token,)
        first = job.first_token_at is None
        if first:
            job.first_token_at = time.perf_counter()
        if token in self.codec.stop_ids and not job.params.ignore_stop:
            self._end_job(slot, "stop", (token,))
        elif job.guide is not None and job.guide.done:  # the grammar is complete: nothing may follow
            self._end_job(slot, "stop", (token,), job.decoder.step(token))
        elif len(job.generated) >= job.params.max_tokens or len(session._tokens) >= self.config.max_context:
            self._end_job(slot, "length", (token,), job.decoder.step(token))
        else:
            job.out.put(job.chunk(job.decoder.step(token), (token,), logprobs=job.logprobs))
        if first and self.prefix_cache is not None:  # the prompt is read and its first token is out
            save_prompt_blocks(self, slot, job.prompt)

    def _end_job(self, slot: Slot, reason: str, last_ids: tuple = (), text: str = "") -> None:
        job, slot.job = slot.job, None
        if job is None:
            return
        self.scheduler.remove(job)
        if job.chat_text is not None and job.generated:
            key = job.chat_text + self.codec.decode(job.generated, keep_special=True)
            job.session._chat_key = (key, job.session._tokens)
        else:
            job.session._chat_key = ("", ())
        self._deliver_end(job, self._stats(job), reason, last_ids, text)

    def _deliver_end(self, job: Job, stats, reason: str, last_ids: tuple = (), text: str = "") -> None:
        job.ended = True
        job.session._mark_idle()  # before the last chunk, so its reader may start the next turn
        job.out.put(job.chunk(text, tuple(last_ids), reason, stats, final=True,
                              logprobs=job.logprobs if last_ids else ()))

    def _poison(self, slot: Slot, job: Job, error: BaseException) -> None:
        if job.ended:  # already told (a split failure poisons before its caller's guard does)
            return
        job.ended = True
        if slot.job is job:
            slot.job = None
        self.scheduler.remove(job)
        job.session._poisoned = f"{type(error).__name__}: {error}"
        job.session._mark_idle()
        job.out.put(Failed(SessionPoisonedError(f"session {job.session.id} failed in a forward pass: {error}")))

    def _stats(self, job: Job) -> GenerationStats:
        now = time.perf_counter()
        first = job.first_token_at or now
        decode_tokens = max(len(job.generated) - 1, 0)
        return GenerationStats(
            prompt_tokens=len(job.prompt),
            prefilled_tokens=job.prefilled,
            generated_tokens=len(job.generated),
            ttft_s=first - job.started,
            decode_tok_s=decode_tokens / (now - first) if decode_tokens and now > first else 0.0,
            constraint_s=job.constraint_s,
            drafted_tokens=job.drafter.drafted if job.drafter is not None else 0,
            accepted_tokens=job.drafter.accepted if job.drafter is not None else 0,
        )

    @property
    def busy(self) -> bool:
        return bool(self.scheduler)

    def fail_all(self, error: BaseException) -> None:
        """The step loop failed outside any one forward: every running reply gets the error and its
        session is poisoned, so no stream waits for a token that will never come."""
        jobs = {id(job): job for job in self.scheduler.round()}
        jobs.update((id(slot.job), slot.job) for slot in self.slots.values() if slot.job is not None)
        for job in jobs.values():
            slot = self.slots.get(job.session.id)
            self._poison(slot if slot is not None else Slot(), job, error)

    def shutdown(self, failure: Optional[str] = None) -> None:
        """End every reply ("cancelled" on close, EngineError when the engine failed) and free all states."""
        self._settle()
        for slot in list(self.slots.values()):
            job = slot.job
            if job is None:
                pass
            elif failure is None:
                try:
                    self._end_job(slot, "cancelled")
                except Exception:
                    log.exception("could not end a reply cleanly")
                    failure = "the engine is closed"
            if failure is not None and job is not None and not job.ended:
                job.ended = True
                job.session._mark_idle()
                job.out.put(Failed(EngineError(failure)))
            slot.job, slot.state = None, None
        self.slots.clear()
        if self.draft_model is not None:
            self.draft_model.close()
        self.backend.close()
        if self.room is not None:
            self.room.close()
