"""The app's local API server: the OpenAI-compatible server (engine.server) around the app's own
loaded Engine, started and stopped from Settings, its address shown in the status bar.

    server = LocalServer(bridge.route)
    window.statusBar().addPermanentWidget(server.label)
    server.apply(enabled=True, port=8317, api_key="")   # returns at once
    server.set_engine(engine)                            # a model switch reaches the server
    server.loading("bundled:…")                          # requests get 503 until set_engine
    server.pause("http://gpu-box:8000/v1")               # a remote model is in use: paused, said so

Starting and stopping uvicorn (binding, joining its thread) run on one worker thread owned by this
object, in the order asked; results come back to the GUI thread through the route. The GUI thread
never waits on the server or the engine, except once at quit. The server's libraries (FastAPI,
uvicorn) are imported on that thread the first time the server starts, so an app that never turns
it on never pays for them at startup.

A port another program holds is found before uvicorn tries it (`ports`): the failure says so in
words, offers the next free port, and the status bar shows "API off" until the API runs or the user
turns it off.

While the app uses a model on another server, the local API is paused (503 saying why; "API paused"
in the status bar), not a relay to that server: programs pointed at this computer's address would
otherwise send their prompts, under the user's key, to another machine without knowing, and the
sessions, admission and prefix reuse it offers are the local engine's.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Optional

from PySide6.QtCore import QObject, Signal

from engine import Engine

from app.bridge import GuiRoute
from app.models.ports import free_port_after, port_in_use
from app.window.status_parts import PartLabel

if TYPE_CHECKING:
    from engine.server import BackgroundServer, EngineHost

log = logging.getLogger(__name__)
SESSION_SHARE = 2
"""The server holds at most 1/SESSION_SHARE of the engine's sessions: the rest stay the app's."""


class LocalServer(QObject):
    """Runs (or not) the local API server; `address` is its URL while it listens, else ""."""

    changed = Signal(str)
    """The address now served ("" when off)."""
    failed = Signal(str)
    """The server could not start (port in use…): the message to show."""
    request_done = Signal(object)
    """A request to the server ended: its `engine.server.RequestEntry` (the Server view lists them)."""

    def __init__(self, route: GuiRoute, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self._route = route
        self._lock = threading.Lock()
        self.host: Optional["EngineHost"] = None  # created when the server first starts
        self._engine: Optional[Engine] = None
        self._status = "no model is loaded"
        self._jobs = ThreadPoolExecutor(max_workers=1, thread_name_prefix="confab-api")
        self._running: Optional["BackgroundServer"] = None  # touched only by the jobs thread
        self._wanted: Optional[tuple[int, str]] = None
        self._closed = False
        self.paused_for = ""
        """The server whose model the app uses while the local API is paused ("" when not paused)."""
        self.requests = None
        """The server's request log (`engine.server.RequestLog`), made when the server first starts."""
        self.address = ""
        self.problem = ""
        """Why the API is off although the settings ask for it ("" when it is not)."""
        self.free_port: Optional[int] = None
        """A free port to offer instead of the one that was taken (None: none found, or no problem)."""
        self.label = PartLabel()  # a status bar part (`MainWindow.add_status_part`)
        self.label.setAccessibleName("Local API server address")
        self.label.setToolTip("The local API server: point OpenAI-compatible tools at this address")
        self.label.hide()

    # -- what the app tells it ---------------------------------------------------------------------
    def apply(self, enabled: bool, port: int, api_key: str) -> None:
        """Start, restart or stop the server to match the settings; returns at once."""
        wanted = (int(port), api_key) if enabled else None
        if self._closed:
            return
        if wanted is None and self.problem:  # the user turned off what could not start: nothing to say
            self.problem, self.free_port = "", None
            self._show(self.address)
        if wanted == self._wanted:
            return
        self._wanted = wanted
        self._jobs.submit(self._switch, wanted)

    def set_engine(self, engine: Optional[Engine]) -> None:
        """Serve `engine` (the app's own; never a copy). The old model's server sessions are freed."""
        self.paused_for = ""
        self._serve(engine, "no model is loaded")
        self._show(self.address)

    def pause(self, server_url: str) -> None:
        """The app now uses the model at `server_url`: requests get 503 saying so, and the status
        bar says the local API is paused, until a local model is served again (`set_engine`)."""
        self.paused_for = server_url
        self._serve(None, f"the Confab app is using a model on another server ({server_url}); this local "
                          "API serves only a model loaded on this computer, so it is paused")
        self._show(self.address)

    def loading(self, source: str) -> None:
        """A model switch began: requests get 503 until `set_engine`."""
        self._serve(None, f"loading {source}")

    def _serve(self, engine: Optional[Engine], status: str) -> None:
        with self._lock:
            self._engine, self._status = engine, status
            if self.host is not None:
                self._point(self.host)

    def _point(self, host: "EngineHost") -> None:
        """Hand `host` the current engine (under the lock; returns at once)."""
        if self._engine is not None:
            host.session_limit = max(1, self._engine.capacity().max_sessions // SESSION_SHARE)
        host.set_engine(self._engine, self._status)

    def close(self, timeout: float = 15.0) -> None:
        """Stop the server and free its sessions (at quit, before the engine closes)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._jobs.submit(self._switch, None).result(timeout)
        except Exception:  # quitting goes on; the server thread is a daemon
            log.exception("could not stop the local API server")
        self._jobs.shutdown(wait=False)
        if self.host is not None:
            self.host.close()

    # -- the jobs thread ---------------------------------------------------------------------------
    def _switch(self, wanted: Optional[tuple[int, str]]) -> None:
        if self._running is not None:
            self._running.stop()
            self._running = None
        if wanted is None:
            self._route.post(self._show, "")
            return
        port, key = wanted
        if port_in_use(port):
            self._route.post(self._fail, *port_taken(port))
            return
        try:
            from engine.server import LOOPBACK, BackgroundServer, EngineHost, RequestLog, ServerSettings

            with self._lock:
                if self.host is None:
                    self.host = EngineHost()
                    self._point(self.host)
            if self.requests is None:
                self.requests = RequestLog()
                self.requests.listen(lambda entry: self._route.post(self.request_done.emit, entry))
            settings = ServerSettings(api_key=key or None, request_log=self.requests)
            self._running = BackgroundServer(self.host, settings, LOOPBACK, port).start()
        except Exception as e:  # OSError (taken since the check) and anything unexpected: tell the user
            log.warning("the local API server did not start: %s", e)
            self._route.post(self._fail, *not_started(port, e))
            return
        self._route.post(self._show, self._running.url)

    # -- back on the GUI thread --------------------------------------------------------------------
    @property
    def wanted(self) -> bool:
        """The settings ask for the API (it may be starting, running, or off for a reason)."""
        return self._wanted is not None

    def state(self) -> tuple[str, str, Optional[int]]:
        """(address served, "" when none; why it is off although asked for; a free port to offer)."""
        return self.address, self.problem, self.free_port

    def _show(self, address: str) -> None:
        changed = address != self.address
        self.address = address
        if address:
            self.problem, self.free_port = "", None
        if self.problem:
            self.label.setText("API off")  # asked for, not running: why in the tooltip (and the notice)
            self.label.setToolTip(self.problem)
        elif address and self.paused_for:
            self.label.setText("API paused")
            self.label.setToolTip(f"The local API server ({address}) is paused while Confab uses the model on "
                                  f"{self.paused_for}: it serves only a model loaded on this computer. Load "
                                  "one (Model ▸ Load model…) and it answers again.")
        else:
            self.label.setText(f"API: {address}" if address else "")
            self.label.setToolTip("The local API server: point OpenAI-compatible tools at this address")
        self.label.setVisible(bool(address or self.problem))
        if changed:
            self.changed.emit(address)

    def _fail(self, message: str, free_port: Optional[int] = None) -> None:
        self._wanted = None  # so that saving the settings again retries
        self.problem, self.free_port = message, free_port
        self._show("")
        self.failed.emit(message)


def not_started(port: int, error: BaseException) -> tuple[str, Optional[int]]:
    """Why the server did not start, in words (uvicorn gives only an exit code), and a port to offer."""
    if port_in_use(port):
        return port_taken(port)
    return f"The local API server could not start on port {port} ({error}), so it is off.", None


def port_taken(port: int) -> tuple[str, Optional[int]]:
    """The words for a port another program holds, and the next free port, which they offer."""
    free = free_port_after(port)
    offer = (f"Port {free} is free: use it in Settings ▸ Local API server." if free is not None
             else "Choose another port in Settings ▸ Local API server.")
    return f"Port {port} is in use by another program, so the local API is off. {offer}", free
