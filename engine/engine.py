"""Engine: one loaded model, one engine thread with its own compute stream, many sessions.

Callers on any thread queue functions for the engine thread (`_post`, `_call`); the thread runs them
between rounds of forward passes. No executor or stream is global: two engines never share either.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Callable, Optional

from . import backends
from .capacity import text_config
from .errors import EngineError, ModelLoadError
from .models import ModelFolder, resolve
from .session import Session
from .text import TextCodec
from .types import Capacity, EngineConfig
from .worker import Worker

log = logging.getLogger(__name__)
Progress = Callable[[float, str], None]
_STOP = object()


class Engine:
    """A loaded model serving isolated sessions. Create it with `Engine.load`."""

    def __init__(self, source: str, config: EngineConfig, progress: Optional[Progress]) -> None:
        self.source = source
        self.config = config
        self._requests: "queue.Queue" = queue.Queue()
        self._ids = itertools.count(1)
        self._running = True
        self._worker: Optional[Worker] = None
        self._loaded: Future = Future()
        self._thread = threading.Thread(
            target=self._run, args=(progress,), name=f"confab-engine-{id(self):x}", daemon=True
        )
        self._thread.start()

    @classmethod
    def load(cls, source: str, config: Optional[EngineConfig] = None, progress: Optional[Progress] = None) -> "Engine":
        """Load `source` on a new engine thread and wait until it is ready.

        source: "bundled:smollm2-135m-instruct", a Hugging Face or MLX folder, or a .gguf file.
        progress(fraction, message) is called from the engine thread while loading.
        Raises ModelLoadError with a readable message when the model cannot be loaded.
        """
        engine = cls(source, config or EngineConfig(), progress)
        try:
            engine._loaded.result()
        except BaseException:
            engine._running = False
            engine._thread.join(timeout=30)
            raise
        return engine

    # -- facts -------------------------------------------------------------------------------------
    @property
    def backend(self) -> str:
        return self._worker.backend.name

    @property
    def device(self) -> str:
        return self._worker.backend.device

    @property
    def dtype(self) -> str:
        return self._worker.backend.dtype

    @property
    def model(self) -> ModelFolder:
        return self._worker.model

    @property
    def model_fingerprint(self) -> str:
        """Identifies the weights; saved states record it and refuse other models."""
        return self._worker.model.fingerprint

    @property
    def template_fingerprint(self) -> str:
        """Identifies the chat template; a change means cached token prefixes may no longer match."""
        return self._codec.template_fingerprint

    @property
    def tokenizer(self):
        """The Hugging Face tokenizer (thread-safe for encode/decode)."""
        return self._codec.tokenizer

    def capacity(self) -> Capacity:
        w = self._worker
        return Capacity(
            weights_bytes=w.backend.weights_nbytes,
            bytes_per_session=w.per_session,
            max_sessions=w.max_sessions,
            live_sessions=len(w.slots),
            budget_bytes=w.budget,
        )

    # -- sessions ----------------------------------------------------------------------------------
    def open_session(self, restore_from: Optional[str | Path] = None) -> Session:
        """A new isolated session; CapacityError past max_sessions, StateFileError for a bad state file."""
        session = Session(self, next(self._ids))
        path = Path(restore_from) if restore_from is not None else None
        self._call(lambda w: w.open_session(session, path))
        return session

    def close(self) -> None:
        """Cancel every reply, free every state and stop the engine thread. Idempotent."""
        if not self._running:
            return
        self._running = False
        self._requests.put(_STOP)
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the route to the engine thread ------------------------------------------------------------
    def _post(self, fn: Callable[[Worker], object]) -> Future:
        """Queue `fn(worker)` for the engine thread; its result or error lands in the Future."""
        if not self._running:
            raise EngineError("the engine is closed")
        future: Future = Future()
        self._requests.put((fn, future))
        return future

    def _call(self, fn: Callable[[Worker], object]):
        """Run `fn(worker)` on the engine thread and wait for its result (re-raising its error)."""
        if threading.current_thread() is self._thread:
            return fn(self._worker)
        return self._post(fn).result()

    # -- the engine thread -------------------------------------------------------------------------
    def _run(self, progress: Optional[Progress]) -> None:
        try:
            self._worker = self._load(progress)
        except BaseException as e:
            self._loaded.set_exception(e if isinstance(e, EngineError) else ModelLoadError(str(e)))
            return
        self._loaded.set_result(None)
        worker = self._worker
        while True:
            if not self._drain(block=not worker.busy):
                break
            try:
                worker.step_round()
            except Exception:  # a bug outside any one forward: keep serving the other sessions
                log.exception("engine step failed")
        worker.shutdown()
        self._fail_pending()

    def _load(self, progress: Optional[Progress]) -> Worker:
        report = progress or (lambda fraction, message: None)
        started = time.perf_counter()
        report(0.0, f"resolving {self.source}")
        model = resolve(self.source, progress=lambda f, m: report(0.5 * f, m))
        backend = backends.create(self.config.backend, self.config.device, self.config.dtype)
        report(0.5, f"loading {model.name} with {backend.name}")
        backend.load(model.path, model.config)
        warm_up = getattr(backend, "warm_up", None)
        if warm_up is not None:  # e.g. CUDA graphs of the decode step, before free memory is measured
            warm_up(self.config.max_context, self.config.max_batch, lambda f, m: report(0.9 + 0.1 * f, m))
        self._codec = TextCodec(model.path)
        self._vocab_size = int(text_config(model.config).get("vocab_size") or len(self._codec.tokenizer))
        worker = Worker(backend, self._codec, model, self.config)
        self.load_seconds = time.perf_counter() - started
        report(1.0, f"loaded {model.name} in {self.load_seconds:.1f} s")
        return worker

    def _drain(self, block: bool) -> bool:
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
                    future.set_result(fn(self._worker))
                except BaseException as e:
                    future.set_exception(e)
            block = False

    def _fail_pending(self) -> None:
        while True:
            try:
                item = self._requests.get_nowait()
            except queue.Empty:
                return
            if item is not _STOP:
                item[1].set_exception(EngineError("the engine is closed"))
