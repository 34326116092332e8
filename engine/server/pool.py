"""Which engine session serves a request: the client's named session, or the best idle pooled one.

- A request naming `session_id` always gets that client's own session (created on first use); a
  second request on it while it generates is refused (409), never queued.
- A request without one gets the idle pooled session whose tokens share the longest prefix with its
  prompt (llama.cpp's server picks a slot the same way), so clients that resend the whole
  conversation each turn still prefill only the new suffix.
- The engine's capacity bounds the pool: when opening a session is refused, the least recently used
  idle session (named or pooled) is closed first; when every session is busy, 429.

Bookkeeping is under one lock; engine calls (open, close) run outside it, on the caller's thread
(the HTTP layer calls in from a worker thread, never the event loop).
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from .. import Engine, Session
from ..errors import CapacityError, EngineError
from ..prefix_share import common_prefix
from .errors import APIError, busy_session, capacity_full, not_found
from .wait_estimate import Turn, WaitEstimate

DELETED = "its session was deleted"
"""Why a reply was cut when a client deleted its session (other cuts are the server stopping)."""

POOLED_PREFIX = "pool-"
"""Ids of pooled sessions start with this; a client may not name its own session so."""

SIMILARITY = 0.5
"""Share of a pooled session's tokens a prompt must keep for that session to be reused while there
is room for a new one (llama.cpp's server uses a similar threshold when it picks a slot)."""
SHARING_SIMILARITY = 0.9
"""The same where the engine shares prefixes: a new session then takes the common prefix's cells at
no cost, so an idle session is reused only for what continues it. Otherwise a sub-agent that starts
on its parent's system prompt would take the parent's session and cut its history (`bench
--agent-loop`: the parent's next request then read 1,399 tokens again, 39 s instead of 5)."""


@dataclass(eq=False)
class Lease:
    """One session and who may use it; `leased` while a request is running on it."""

    session: Session
    key: str
    named: bool
    owner: Optional[str] = None
    """The API key (as a digest) that made it; None on a server without keys."""
    leased: bool = True
    last_used: float = field(default_factory=time.monotonic)
    cut: Optional[str] = None
    """Why its running reply was stopped from outside (deleted, server stopping); None if it was not."""
    turn: Optional[Turn] = None
    """Its running turn once the engine admitted it (for the wait a refused client is told)."""

    def describe(self) -> dict:
        """What GET /v1/sessions shows for this session."""
        return {
            "id": self.key,
            "object": "session",
            "named": self.named,
            "tokens": len(self.session.tokens),
            "bytes": self.session.state_nbytes,
            "busy": self.leased or self.session.busy,  # a cancelled reply runs until its next token
            "idle_s": 0.0 if self.leased else round(time.monotonic() - self.last_used, 3),
        }


class SessionPool:
    """Named and pooled sessions of one engine."""

    def __init__(self, engine: Engine, limit: Optional[int] = None) -> None:
        """limit: most sessions this pool holds (None: as many as the engine admits). An app that
        shares its engine keeps room for its own conversations with it."""
        self.engine = engine
        self.limit = limit
        self._lock = threading.Lock()
        self._named: dict[tuple[Optional[str], str], Lease] = {}  # by (owner, name): names are per key
        self._pooled: dict[tuple[Optional[str], str], Lease] = {}
        self._ids = itertools.count(1)
        self._closed = False
        self._waits = WaitEstimate()

    # -- leasing -----------------------------------------------------------------------------------
    def acquire(self, name: Optional[str], prompt: Sequence[int], owner: Optional[str] = None) -> Lease:
        """The session for one request, leased to it until `release`. Raises APIError 409/429.

        owner: the client's key; named and pooled sessions of another key are never used."""
        with self._lock:
            self._check_open()
            if name is not None and (owner, name) in self._named:
                lease = self._named[(owner, name)]
                if lease.leased:
                    raise busy_session(name)
                lease.leased = True
                return lease
            if name is None and (found := self._best_pooled(prompt, owner)) is not None:
                best, shared = found
                # Reuse it if that keeps most of what it holds, or if no other session fits: every
                # chat shares the template's opening, and that alone must not wipe another
                # client's warm conversation while there is room for a new session.
                similar = SHARING_SIMILARITY if getattr(self.engine, "shares_prefixes", False) else SIMILARITY
                if shared >= similar * len(best.session.tokens) or not self._room():
                    best.leased = True
                    return best
            key = name if name is not None else f"{POOLED_PREFIX}{next(self._ids)}"
            lease = Lease(None, key, name is not None, owner)  # type: ignore[arg-type]
            self._table(lease)[_id(lease)] = lease  # reserves the name against a concurrent request
        try:
            lease.session = self._open()
        except BaseException:
            with self._lock:
                self._table(lease).pop(_id(lease), None)
            raise
        return lease

    def release(self, lease: Lease, discard: bool = False) -> None:
        """The request is over (its reply ended or was cancelled): the session is idle again.

        discard: the session failed in a forward; free it (on a thread: closing waits on the engine).
        """
        with self._lock:
            lease.leased = False
            lease.last_used = time.monotonic()
            if lease.turn is not None:
                self._waits.finished(lease.turn, len(lease.session.tokens))
                lease.turn = None
            if self._closed or lease.session.closed or discard:
                if self._table(lease).get(_id(lease)) is lease:
                    del self._table(lease)[_id(lease)]
                discard = True
        if discard and not lease.session.closed:
            threading.Thread(target=_close_quietly, args=(lease.session,), daemon=True).start()

    def began(self, lease: Lease, prompt_len: int, max_tokens: int) -> None:
        """The engine admitted `lease`'s turn: a prompt of `prompt_len` tokens, at most `max_tokens` more."""
        with self._lock:
            lease.turn = Turn(prompt_len + max_tokens, len(lease.session.tokens))

    def retry_after(self) -> tuple[int, str]:
        """(seconds, in words) until a running turn should end: a refused client's Retry-After."""
        with self._lock:
            running = [(l.turn, len(l.session.tokens)) for l in (*self._named.values(), *self._pooled.values())
                       if l.leased and l.turn is not None]
        return self._waits.wait(running)

    def _room(self) -> bool:
        """Whether another session may open without closing one (called under the lock)."""
        if self.limit is not None and len(self._named) + len(self._pooled) >= self.limit:
            return False
        capacity = self.engine.capacity()
        return capacity.live_sessions < capacity.max_sessions

    def _best_pooled(self, prompt: Sequence[int], owner: Optional[str]) -> Optional[tuple[Lease, int]]:
        """The idle pooled session of `owner` sharing the longest token prefix with `prompt`, and
        that length (None if none shares any)."""
        best, best_len = None, 0
        for lease in self._pooled.values():
            if lease.owner != owner or lease.leased or lease.session is None or lease.session.closed:
                continue
            shared = common_prefix(lease.session.tokens, prompt)
            if shared > best_len or (shared == best_len and best is not None and lease.last_used > best.last_used):
                best, best_len = lease, shared
        return (best, best_len) if best is not None and best_len > 0 else None

    def _open(self) -> Session:
        """A new engine session, closing idle sessions least recently used first while capacity is full."""
        while True:
            if self.limit is not None and self._live() > self.limit:
                victim = self._evict_one()
                if victim is None:
                    raise capacity_full(f"all {self.limit} server sessions are busy", self.retry_after())
                _close_quietly(victim.session)
                continue
            try:
                return self.engine.open_session()
            except CapacityError as e:
                victim = self._evict_one()
                if victim is None:
                    raise capacity_full(str(e), self.retry_after()) from None
                _close_quietly(victim.session)

    def _live(self) -> int:
        """Sessions held, the one being opened included."""
        with self._lock:
            return len(self._named) + len(self._pooled)

    def _evict_one(self) -> Optional[Lease]:
        with self._lock:
            idle = [l for l in (*self._named.values(), *self._pooled.values()) if not l.leased and l.session]
            if not idle:
                return None
            victim = min(idle, key=lambda l: l.last_used)
            self._table(victim).pop(_id(victim), None)
            return victim

    # -- listing and freeing -----------------------------------------------------------------------
    def describe(self, owner: Optional[str] = None) -> list[dict]:
        """The sessions of `owner` (the client's key), for GET /v1/sessions."""
        with self._lock:
            leases = [l for l in (*self._named.values(), *self._pooled.values())
                      if l.session is not None and l.owner == owner]
        return [lease.describe() for lease in leases]

    def delete(self, key: str, owner: Optional[str] = None) -> None:
        """Cancel the session's reply, if any, and free its state. 404 for an id `owner` does not have."""
        with self._lock:
            lease = self._named.pop((owner, key), None) or self._pooled.pop((owner, key), None)
        if lease is None or lease.session is None:
            raise not_found(f"no session {key!r}", "session_not_found")
        lease.cut = DELETED
        _close_quietly(lease.session)

    def cancel_all(self, why: str = "the server is stopping") -> None:
        """Stop every running reply at its next token (server shutdown); each reply says `why`."""
        with self._lock:
            leases = [l for l in (*self._named.values(), *self._pooled.values()) if l.session]
            for lease in leases:
                lease.cut = lease.cut or why
        for lease in leases:
            lease.session.cancel()

    def close(self) -> None:
        """Cancel every reply and free every session; later requests are refused. Idempotent."""
        with self._lock:
            self._closed = True
            leases = [*self._named.values(), *self._pooled.values()]
            for lease in leases:
                lease.cut = lease.cut or "the server switched models or is stopping"
            self._named.clear()
            self._pooled.clear()
        for lease in leases:
            if lease.session is not None:
                _close_quietly(lease.session)

    def __len__(self) -> int:
        with self._lock:
            return len(self._named) + len(self._pooled)

    def _table(self, lease: Lease) -> dict[str, Lease]:
        return self._named if lease.named else self._pooled

    def _check_open(self) -> None:
        if self._closed:
            raise APIError(503, "the server is switching models; retry shortly", "model_not_loaded",
                           "server_error", headers={"Retry-After": "2"})


def _id(lease: Lease) -> tuple[Optional[str], str]:
    return (lease.owner, lease.key)


def _close_quietly(session: Session) -> None:
    """Close a session; an engine already closed (a model switch) has freed it anyway."""
    try:
        session.close()
    except EngineError:
        pass
