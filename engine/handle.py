"""What every session handle shares, local (`engine.session`) or remote (`engine.remote.session`).

Lives in the caller's threads and below both kinds of session, so neither imports the other and the
engine thread's code (`worker`) needs neither for it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Optional

from .errors import SessionBusyError, SessionClosedError


@dataclass
class Failed:
    """Put on a stream's queue instead of a chunk when the request failed."""

    error: BaseException


class SessionHandle:
    """The caller-side bookkeeping both sessions share: closed, busy, the running reply's cancel
    event and an idle event to wait on. One copy, so the local and remote sessions cannot drift.

    Safe to call from any thread. Whichever thread ends a reply (the engine thread, or a remote
    session's reader thread) calls `_mark_idle` before it delivers the reply's last item.
    """

    def __init__(self, session_id: int) -> None:
        self.id = session_id
        self._lock = threading.Lock()
        self._closed = False
        self._busy = False
        self._cancel: Optional[threading.Event] = None
        self._idle = threading.Event()
        self._idle.set()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def busy(self) -> bool:
        return self._busy

    def wait_idle(self, timeout: Optional[float] = None) -> bool:
        """Block until no reply is running (e.g. after cancel()); False if `timeout` passed first."""
        return self._idle.wait(timeout)

    def cancel(self) -> None:
        """Stop the running reply at the next token boundary (finish reason "cancelled")."""
        event = self._cancel
        if event is not None:
            event.set()

    def _begin(self) -> threading.Event:
        """Mark a reply as running and return its cancel event; SessionClosedError (or what
        `_check_usable` raises) or SessionBusyError instead. A reply already cancelled (or whose
        stream was dropped) ends at its next token, so that one is waited for first."""
        cancelling = self._cancel
        if self._busy and cancelling is not None and cancelling.is_set():
            self._idle.wait(timeout=60)
        with self._lock:
            self._check_usable()
            if self._busy:
                raise SessionBusyError(f"session {self.id} is already generating; cancel it or wait")
            self._busy = True
            self._idle.clear()
            cancel = self._cancel = threading.Event()
        return cancel

    def _mark_idle(self) -> None:
        """The running reply ended (called before its last chunk or error is delivered)."""
        self._busy = False
        self._idle.set()

    def _check_usable(self) -> None:
        if self._closed:
            raise SessionClosedError(f"session {self.id} is closed")

    def _mark_closed(self) -> bool:
        """Mark the handle closed; False when it already was (close() is idempotent)."""
        with self._lock:
            if self._closed:
                return False
            self._closed = True
        return True

    def close(self) -> None:  # each session frees what it holds
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
