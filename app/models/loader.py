"""Loading a model without freezing the window: `Engine.load` runs on a thread of its own and its
progress, result or error come back to the GUI thread as signals.

    loader = ModelLoader(route)
    loader.progress.connect(show_progress)      # (fraction 0..1, message)
    loader.loaded.connect(use_engine)           # (engine, source)
    loader.failed.connect(show_error)           # (source, message): the previous model stays
    loader.draft_refused.connect(say_why)       # (message): loaded without the draft model, and why
    loader.load("bundled:smollm2-135m-instruct", EngineConfig())
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import Optional

from PySide6.QtCore import QObject, Signal

from engine import AnyEngine, DraftModelError, DraftModelFileError, EngineConfig, open_engine

from app.bridge import GuiRoute

log = logging.getLogger(__name__)


class ModelLoader(QObject):
    """Loads one model at a time off the GUI thread; a newer request makes an older result moot."""

    progress = Signal(float, str)
    loaded = Signal(object, str)
    failed = Signal(str, str)
    draft_refused = Signal(str, bool)
    """(why, whether the draft model's file itself failed: then trying it again is useless)."""

    def __init__(self, route: GuiRoute, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self._route = route
        self._generation = 0

    def load(self, source: str, config: EngineConfig, *, api_key: Optional[str] = None) -> None:
        """Start loading `source` (or connecting to the server a "server:" source names, with
        `api_key`); returns at once. Call on the GUI thread."""
        self._generation += 1
        generation = self._generation
        self.progress.emit(0.0, f"Loading {source}…")

        def report(fraction: float, message: str) -> None:
            self._route.post(self._progress, generation, fraction, message)

        def work() -> None:
            try:
                try:
                    engine = open_engine(source, config, report, api_key=api_key)
                except DraftModelError as e:  # a draft model only speeds up: the model runs without it
                    log.warning("%s loads without its draft model: %s", source, e)
                    self._route.post(self._draft_refused, generation, str(e), isinstance(e, DraftModelFileError))
                    engine = open_engine(source, replace(config, draft_model=None), report, api_key=api_key)
            except Exception as e:  # ModelLoadError, RemoteError and anything unexpected alike: show it
                log.warning("could not load %s: %s", source, e)
                self._route.post(self._failed, generation, source, str(e))
                return
            self._route.post(self._loaded, generation, engine, source)

        threading.Thread(target=work, name="confab-load", daemon=True).start()

    def _progress(self, generation: int, fraction: float, message: str) -> None:
        if generation == self._generation:
            self.progress.emit(fraction, message)

    def _loaded(self, generation: int, engine: AnyEngine, source: str) -> None:
        if generation != self._generation:  # superseded by a newer load: nobody wants this one
            close_in_background(engine)
            return
        self.loaded.emit(engine, source)

    def _draft_refused(self, generation: int, message: str, file_failed: bool) -> None:
        if generation == self._generation:
            self.draft_refused.emit(message, file_failed)

    def _failed(self, generation: int, source: str, message: str) -> None:
        if generation == self._generation:
            self.failed.emit(source, message)


def close_in_background(engine: AnyEngine) -> threading.Thread:
    """Close an engine without blocking the GUI thread (closing joins its thread)."""
    thread = threading.Thread(target=engine.close, name="confab-unload", daemon=True)
    thread.start()
    return thread
