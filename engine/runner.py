"""The engine thread and its request queue.

Kept apart from `Engine` so that the thread holds only what it needs (the queue and the worker),
never the Engine object: a dropped Engine can then be collected, and its finalizer stops the thread
and frees the weights.

Every request ends: `post` and `stop` take one lock, so once `stop` (or the thread's own end) has
marked the runner stopped, nothing more is queued, and everything queued before is run or failed.
"""

from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Callable, Optional

from . import memory_trim
from .errors import EngineError, ModelLoadError

if TYPE_CHECKING:
    from .worker import Worker

log = logging.getLogger(__name__)
_STOP = object()
CLOSED = "the engine is closed"


class Runner:
    """One engine thread: loads the worker, then runs queued requests between step rounds."""

    def __init__(self, name: str, load: Callable[[], "Worker"]) -> None:
        self._requests: "queue.Queue" = queue.Queue()
        # Re-entrant: a finalizer run by the garbage collector may post while this thread holds it.
        self._lock = threading.RLock()
        self._running = True
        self._load: Optional[Callable[[], "Worker"]] = load
        self.worker: Optional["Worker"] = None
        self.failure: Optional[str] = None
        """Why the engine stopped on its own (failed load, internal error); None while serving or once closed."""
        self.loaded: Future = Future()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start loading on the engine thread (apart from __init__, so a caller can own the runner,
        and stop it on Ctrl+C, before the thread exists)."""
        self.thread.start()

    @property
    def running(self) -> bool:
        return self._running

    def error(self) -> EngineError:
        """The error every request gets once the runner has stopped."""
        return EngineError(self.failure or CLOSED)

    def post(self, fn: Callable[["Worker"], object]) -> Future:
        """Queue `fn(worker)`; its result or error lands in the Future. EngineError once stopped."""
        future: Future = Future()
        with self._lock:
            if not self._running:
                raise self.error()
            self._requests.put((fn, future))
        return future

    def post_quietly(self, fn: Callable[["Worker"], object]) -> None:
        """Queue `fn` if the engine still runs; for finalizers, which must neither wait nor raise."""
        try:
            self.post(fn)
        except EngineError:
            pass

    def call(self, fn: Callable[["Worker"], object]):
        """Run `fn(worker)` on the engine thread and wait for its result (re-raising its error)."""
        if threading.current_thread() is self.thread:
            if self.worker is None:
                raise self.error()
            return fn(self.worker)
        return self.post(fn).result()

    def stop(self) -> None:
        """Ask the thread to end after the requests queued so far. Never waits; idempotent."""
        with self._lock:
            if self._running:
                self._running = False
                self._requests.put(_STOP)

    # -- the engine thread -------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            load, self._load = self._load, None
            worker = load()
            del load
        except BaseException as e:  # KeyboardInterrupt and MemoryError too: the thread must end cleanly
            error = e if isinstance(e, EngineError) else ModelLoadError(f"{type(e).__name__}: {e}")
            self.failure = f"the engine failed to load: {error}"
            self._end()
            self.loaded.set_exception(error)
            return
        self.worker = worker
        self.loaded.set_result(None)
        try:
            self._serve(worker)
        except BaseException as e:
            log.exception("the engine thread failed")
            self.failure = f"the engine stopped after an internal error: {type(e).__name__}: {e}"
        finally:
            self._refuse()  # before any stream hears of the end, so its reader sees a closed engine
            try:
                worker.shutdown(self.failure)
            except BaseException:
                log.exception("could not shut the engine down cleanly")
            self.worker = None
            del worker  # the weights go with the last reference, whatever handles callers still hold
            self._end()

    def _serve(self, worker: "Worker") -> None:
        worked = False
        while True:
            idle = not worker.busy
            if idle and worked:  # a busy spell ended: what its replies freed goes back to the system
                memory_trim.give_back_freed_memory()
                worked = False
            if not self._drain(worker, block=idle):
                return
            worked = worked or worker.busy
            try:
                worker.step_round()
            except Exception as e:  # outside any one forward: fail what was running, keep serving
                log.exception("engine step failed")
                worker.fail_all(e)

    def _drain(self, worker: "Worker", block: bool) -> bool:
        """Run queued requests; False once asked to stop."""
        while True:
            try:
                item = self._requests.get(block=block)
            except queue.Empty:
                return True
            if item is _STOP:
                return False
            fn, future = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(worker))
                except BaseException as e:
                    future.set_exception(e)
            del item, fn, future  # hold no request (nor what it captured) while blocked on the queue
            block = False

    def _refuse(self) -> None:
        with self._lock:
            self._running = False

    def _end(self) -> None:
        """Refuse new requests, then fail every one still queued."""
        self._refuse()
        while True:
            try:
                item = self._requests.get_nowait()
            except queue.Empty:
                return
            if item is not _STOP and item[1].set_running_or_notify_cancel():
                item[1].set_exception(self.error())
