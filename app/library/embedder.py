"""The app's one embedding model: shared by the indexing thread (documents) and the store's thread
(each question), made on first use, its weights loaded on first embed on its own thread
(`engine.Embedder`), and its memory reported for the status bar.

    shared = SharedEmbedder()                # nothing read yet
    shared.get().embed(["a question"])       # the tokenizer now, the weights on first embed
    shared.memory()                          # None until loaded; then EmbedderMemory
    shared.close()                           # its thread stops and the weights go
"""

from __future__ import annotations

import threading
from typing import Callable, Optional

from engine import DEFAULT_EMBEDDING_MODEL, Embedder, EmbedderMemory, ModelLoadError


class SharedEmbedder:
    """Thread-safe: `get()` from any thread makes the Embedder once."""

    def __init__(self, source: str = DEFAULT_EMBEDDING_MODEL,
                 make: Optional[Callable[[str], Embedder]] = None) -> None:
        self.source = source
        self._make = make or Embedder
        self._lock = threading.Lock()
        self._embedder: Optional[Embedder] = None
        self._closed = False

    def get(self) -> Embedder:
        """The embedding model (ModelLoadError, in words, when it is not on this computer)."""
        with self._lock:
            if self._closed:  # a reply at quit: said on the reply like any model that is not there
                raise ModelLoadError("the embedding model was closed: Confab is quitting")
            if self._embedder is None:
                self._embedder = self._make(self.source)
            return self._embedder

    def memory(self) -> Optional[EmbedderMemory]:
        """What the model holds once its weights are loaded (None before: it costs nothing yet)."""
        embedder = self._embedder
        return embedder.memory if embedder is not None and embedder.loaded else None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            embedder, self._embedder = self._embedder, None
        if embedder is not None:
            embedder.close()
