"""A reply's chunk queue that can hand its chunks straight to a listener instead (`Stream.listen`).

Why: a server reads each reply on its asyncio loop. With a plain queue it needed a thread per reply
to wait on the queue and pass every chunk on to the loop: per token, one more thread woke, and on
two cores that wake-up preempts one of llama.cpp's compute threads, which the other then waits for
at the next barrier. With a listener, the thread that makes a chunk (the engine thread, or a remote
session's reader) passes it on itself (`loop.call_soon_threadsafe`), and no thread waits.
"""

from __future__ import annotations

import logging
import queue
from typing import Any, Callable, Optional

log = logging.getLogger(__name__)


class ChunkQueue(queue.Queue):
    """An unbounded `queue.Queue` until `listen(fn)`; from then on `put` calls `fn` instead."""

    def __init__(self) -> None:
        super().__init__()
        self._listener: Optional[Callable[[Any], None]] = None

    def put(self, item: Any, block: bool = True, timeout: Optional[float] = None) -> None:
        with self.mutex:  # one lock for queueing and handing on: no chunk is passed on out of order
            if self._listener is not None:
                self._hand_on(item)
                return
            self._put(item)
            self.unfinished_tasks += 1
            self.not_empty.notify()

    def listen(self, fn: Callable[[Any], None]) -> None:
        """Hand on what is queued now, in order, then every later item as it is put. `fn` runs on the
        putting thread, holding this queue's lock: it must return at once and never touch the queue."""
        with self.mutex:
            self._listener = fn
            while self.queue:
                self._hand_on(self.queue.popleft())

    def _hand_on(self, item: Any) -> None:
        try:
            self._listener(item)
        except Exception:  # the engine thread must go on with the other replies
            log.exception("a reply's chunk listener failed")
