"""The engine the server serves right now, swappable while it runs (the app switches models).

The server never owns a second copy of the weights: it is handed the `Engine` the app (or the
headless command) loaded. While a model loads there is none, and requests get 503.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Optional, Union

from .. import Engine
from ..embeddings import Embedder
from .errors import no_model, not_found
from .model_names import ModelNames
from .pool import SessionPool

log = logging.getLogger(__name__)


class EngineHost:
    """Holds the current engine and its session pool; thread-safe."""

    def __init__(self, engine: Optional[Engine] = None, session_limit: Optional[int] = None,
                 embedder: Union[Embedder, Callable[[], Embedder], None] = None) -> None:
        """session_limit: most sessions the server holds on an engine (None: what the engine admits).
        embedder: the embedding model /v1/embeddings serves (None: that route answers 404), or a
        function that gives it when a request first needs it (the app's shared one, made on first
        use); like the engine, it stays the caller's to close."""
        self._lock = threading.Lock()
        self._embedder = embedder
        self.session_limit = session_limit
        self.names = ModelNames()
        """Which names beyond the model's own a request may use; the server's settings set it."""
        self._pool: Optional[SessionPool] = None
        self._status = "no model is loaded"
        if engine is not None:
            self.set_engine(engine)

    @property
    def embedder(self) -> Optional[Embedder]:
        """The embedding model, made now if it was given as a function (None when that fails: the
        route then answers 404, and the log says why)."""
        given = self._embedder
        if given is None or isinstance(given, Embedder):
            return given
        try:
            made = given()
        except Exception as e:  # the bundled model not installed, say: no embeddings, the chat goes on
            log.warning("no embedding model to serve: %s", e)
            return None
        self._embedder = made
        return made

    def set_engine(self, engine: Optional[Engine], status: str = "no model is loaded") -> Optional[threading.Thread]:
        """Serve `engine` from now on (None: answer 503 with `status`, e.g. "loading X").

        The previous engine's server sessions are freed on a background thread, so a GUI thread
        that calls this never waits on an engine. Returns that thread (tests join it).
        """
        with self._lock:
            old, self._pool = self._pool, SessionPool(engine, self.session_limit) if engine is not None else None
            self._status = status
        if old is None:
            return None
        thread = threading.Thread(target=old.close, name="confab-server-free", daemon=True)
        thread.start()
        return thread

    def pool(self) -> SessionPool:
        """The current pool; APIError 503 while no model is loaded."""
        pool = self._pool
        if pool is None:
            raise no_model(self._status)
        return pool

    @property
    def engine(self) -> Optional[Engine]:
        pool = self._pool
        return pool.engine if pool is not None else None

    def model_id(self) -> str:
        return self.pool().engine.source

    def check_model(self, requested: Optional[str]) -> SessionPool:
        """The pool, if `requested` names the loaded model, an alias of it (or is omitted); 404 otherwise."""
        pool = self.pool()
        if requested is None or self.names.accepts(requested, pool.engine):
            return pool
        raise not_found(f"model {requested!r} is not loaded; this server serves {pool.engine.source!r}",
                        "model_not_found")

    def close(self) -> None:
        """Cancel every reply and free every server session (the engine itself stays the caller's)."""
        with self._lock:
            pool, self._pool = self._pool, None
            self._status = "the server is shutting down"
        if pool is not None:
            pool.close()

    def cancel_all(self) -> None:
        pool = self._pool
        if pool is not None:
            pool.cancel_all()

