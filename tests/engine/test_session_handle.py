"""The busy / cancel / idle / close bookkeeping that the local and the remote session share."""

from __future__ import annotations

import threading

import pytest

from engine.errors import SessionBusyError, SessionClosedError
from engine.handle import SessionHandle
from engine.remote.session import RemoteSession
from engine.session import Session

SHARED = ("busy", "closed", "wait_idle", "_begin", "_mark_idle", "_mark_closed", "__enter__", "__exit__")


class Handle(SessionHandle):
    def close(self) -> None:
        if self._mark_closed():
            self.cancel()


@pytest.mark.parametrize("kind", [Session, RemoteSession])
def test_both_sessions_keep_their_books_in_one_place(kind):
    """A fix to the bookkeeping reaches both kinds of session: neither has a copy of its own."""
    assert issubclass(kind, SessionHandle)
    assert not [name for name in SHARED if name in vars(kind)]


def test_a_second_reply_while_one_runs_is_refused_by_name():
    h = Handle(7)
    h._begin()
    assert h.busy and not h.wait_idle(timeout=0)
    with pytest.raises(SessionBusyError, match="session 7 is already generating"):
        h._begin()
    h._mark_idle()
    assert not h.busy and h.wait_idle(timeout=0)
    h._begin()  # the next turn starts


def test_cancel_sets_the_running_replys_event_only():
    h = Handle(1)
    h.cancel()  # nothing running: nothing to do
    first = h._begin()
    h.cancel()
    assert first.is_set()
    h._mark_idle()
    assert not h._begin().is_set()  # a new reply gets a fresh event


def test_a_new_reply_waits_for_a_cancelled_one_to_end():
    """After cancel() the old reply ends at its next token; starting the next one meanwhile waits
    for that instead of failing as busy."""
    h = Handle(1)
    h._begin()
    h.cancel()
    ender = threading.Timer(0.05, h._mark_idle)
    ender.start()
    try:
        assert not h._begin().is_set()
        assert h.busy
    finally:
        ender.join()


def test_close_is_idempotent_and_refuses_later_replies():
    h = Handle(3)
    running = h._begin()
    with h:
        pass
    assert h.closed and running.is_set()  # closing cancels the running reply
    assert not h._mark_closed()  # a second close does nothing
    h._mark_idle()
    with pytest.raises(SessionClosedError, match="session 3 is closed"):
        h._begin()
