"""The app's local API server: the OpenAI-compatible server (engine.server) around the app's own
loaded Engine, started and stopped from Settings or the Server view, its state in the status bar.

    server = LocalServer(bridge.route)
    window.add_status_part(server.label)                 # "API on :8317"; a click opens the Server view
    server.apply(enabled=True, port=8317, api_key="")   # returns at once
    server.apply(True, 8317, "k3y", host="0.0.0.0")      # the local network too: "… (network)"
    server.set_engine(engine)                            # a model switch reaches the server
    server.loading("bundled:…")                          # requests get 503 until set_engine
    server.pause("http://gpu-box:8000/v1")               # a remote model is in use: paused, said so

Starting and stopping uvicorn (binding, joining its thread) run on one worker thread owned by this
object, in the order asked; results come back to the GUI thread through the route. The GUI thread
never waits on the server or the engine, except once at quit. The server's libraries (FastAPI,
uvicorn) are imported on that thread the first time the server starts, so an app that never turns
it on never pays for them at startup.

On the local network (any `host` but loopback) the server needs an API key: without one it does not
start and says why, rather than hand the model to everyone on the network (the engine refuses too).
Turned off, it stops listening on every address before the status bar says off.

A port another program holds is found before uvicorn tries it (`ports`): the failure says so in
words, offers the next free port, and the status bar shows "API off" until the API runs or the user
turns it off.

While the app uses a model on another server, the local API is paused (503 saying why; "API paused"
in the status bar), not a relay to that server: programs pointed at this computer's address would
otherwise send their prompts, under the user's key, to another machine without knowing, and the
sessions, admission and prefix reuse it offers are the local engine's.
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, Optional

from PySide6.QtCore import QObject, Signal

from engine import Engine

from app.bridge import GuiRoute
from app.models.lan import LOOPBACK, is_loopback, serve_urls
from app.models.ports import free_port_after, port_in_use
from app.window.status_parts import LinkPartLabel

if TYPE_CHECKING:
    from engine import Embedder
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

    def __init__(self, route: GuiRoute, parent: Optional[QObject] = None,
                 embedder: Optional[Callable[[], "Embedder"]] = None) -> None:
        """embedder: gives the app's one embedding model when /v1/embeddings first needs it (the
        library's; None: that route answers 404)."""
        super().__init__(parent)
        self._route = route
        self._embedder = embedder
        self._lock = threading.Lock()
        self.host: Optional["EngineHost"] = None  # created when the server first starts
        self._engine: Optional[Engine] = None
        self._status = "no model is loaded"
        self._jobs = ThreadPoolExecutor(max_workers=1, thread_name_prefix="confab-api")
        self._running: Optional["BackgroundServer"] = None  # touched only by the jobs thread
        self._wanted: Optional[tuple[int, str, str]] = None  # (port, key, host)
        self._closed = False
        self.paused_for = ""
        """The server whose model the app uses while the local API is paused ("" when not paused)."""
        self.requests = None
        """The server's request log (`engine.server.RequestLog`), made when the server first starts."""
        self.address = ""
        """The URL programs on this computer use."""
        self.network_address = ""
        """The URL other computers use ("" while it listens on this computer only, or is off)."""
        self.listening_on = ""
        """The address it listens on ("127.0.0.1", "0.0.0.0"…; "" when off)."""
        self.port = 0
        """The port it listens on (0 when off)."""
        self.problem = ""
        """Why the API is off although the settings ask for it ("" when it is not)."""
        self.free_port: Optional[int] = None
        """A free port to offer instead of the one that was taken (None: none found, or no problem)."""
        self.label = LinkPartLabel()  # a status bar part (`MainWindow.add_status_part`); a click opens the Server view
        self.label.setAccessibleName("Local API server")
        self.label.hide()

    # -- what the app tells it ---------------------------------------------------------------------
    def apply(self, enabled: bool, port: int, api_key: str, host: str = LOOPBACK) -> None:
        """Start, restart or stop the server to match the settings; returns at once. On the network
        (`host` not loopback) without a key it stays off, says why (`failed`) and shows "API off"."""
        wanted = (int(port), api_key, host) if enabled else None
        if self._closed:
            return
        if wanted is not None and not is_loopback(host) and not api_key:
            if self._wanted is not None:  # stop what runs now: the user asked for something else
                self._wanted = None
                self._jobs.submit(self._switch, None)
            self._fail(NEEDS_KEY)
            return
        if wanted is None and self.problem:  # the user turned off what could not start: nothing to say
            self.problem, self.free_port = "", None
            self._show()
        if wanted == self._wanted:
            return
        self._wanted = wanted
        self._jobs.submit(self._switch, wanted)

    def set_engine(self, engine: Optional[Engine]) -> None:
        """Serve `engine` (the app's own; never a copy). The old model's server sessions are freed."""
        self.paused_for = ""
        self._serve(engine, "no model is loaded")
        self._show()

    def pause(self, server_url: str) -> None:
        """The app now uses the model at `server_url`: requests get 503 saying so, and the status
        bar says the local API is paused, until a local model is served again (`set_engine`)."""
        self.paused_for = server_url
        self._serve(None, f"the Confab app is using a model on another server ({server_url}); this local "
                          "API serves only a model loaded on this computer, so it is paused")
        self._show()

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
    def _switch(self, wanted: Optional[tuple[int, str, str]]) -> None:
        if self._running is not None:
            self._running.stop()
            self._running = None
        if wanted is None:
            self._route.post(self._listening, "", 0)
            return
        port, key, bind = wanted
        if port_in_use(port, bind):
            self._route.post(self._fail, *port_taken(port, bind))
            return
        try:
            from engine.server import BackgroundServer, EngineHost, RequestLog, ServerSettings

            with self._lock:
                if self.host is None:
                    self.host = EngineHost(embedder=self._embedder)
                    self._point(self.host)
            if self.requests is None:
                self.requests = RequestLog()
                self.requests.listen(lambda entry: self._route.post(self.request_done.emit, entry))
            settings = ServerSettings(api_key=key or None, request_log=self.requests)
            self._running = BackgroundServer(self.host, settings, bind, port).start()
        except Exception as e:  # OSError (taken since the check) and anything unexpected: tell the user
            log.warning("the local API server did not start: %s", e)
            self._route.post(self._fail, *not_started(port, e, bind))
            return
        self._route.post(self._listening, bind, self._running.port)

    # -- back on the GUI thread --------------------------------------------------------------------
    @property
    def wanted(self) -> bool:
        """The settings ask for the API (it may be starting, running, or off for a reason)."""
        return self._wanted is not None

    def state(self) -> tuple[str, str, Optional[int]]:
        """(address served, "" when none; why it is off although asked for; a free port to offer)."""
        return self.address, self.problem, self.free_port

    def _listening(self, bind: str, port: int) -> None:
        """The server now listens on `bind`:`port` ("", 0: it stopped listening)."""
        before = (self.address, self.network_address)
        self.listening_on, self.port = bind, port
        self.address, self.network_address = serve_urls(bind, port) if bind else ("", "")
        self._show()
        if (self.address, self.network_address) != before:  # the network on the same port is news too
            self.changed.emit(self.address)

    def _show(self) -> None:
        """The status bar part: "API on :8317", "API on 192.168.1.5:8317 (network)", "API paused",
        "API off" (asked for, not running: why in its tooltip), or nothing while the user has it off."""
        if self.address:
            self.problem, self.free_port = "", None
        click = "\nClick for its requests and settings (Model ▸ Local API server…)."
        if self.problem:
            self.label.setText("API off")
            self.label.setToolTip(self.problem + click)
        elif self.address and self.paused_for:
            self.label.setText("API paused")
            self.label.setToolTip(f"The local API server ({self.address}) is paused while Confab uses the model on "
                                  f"{self.paused_for}: it serves only a model loaded on this computer. Load "
                                  "one (Model ▸ Load model…) and it answers again." + click)
        elif self.address and not is_loopback(self.listening_on):
            where = self.network_address.removeprefix("http://").removesuffix("/v1") or f":{self.port}"
            others = (f"other computers use {self.network_address}" if self.network_address else
                      "this computer has no network address now")
            self.label.setText(f"API on {where} (network)", f"API :{self.port} (network)")
            self.label.setToolTip(f"The local API server is open to the local network: {others}, with its API "
                                  f"key; programs on this computer, {self.address}." + click)
        elif self.address:
            self.label.setText(f"API on :{self.port}", f"API :{self.port}")
            self.label.setToolTip(f"The local API server, for programs on this computer only: {self.address}"
                                  + click)
        else:
            self.label.setText("")
        self.label.setVisible(bool(self.address or self.problem))

    def _fail(self, message: str, free_port: Optional[int] = None) -> None:
        self._wanted = None  # so that saving the settings again retries
        self.problem, self.free_port = message, free_port
        self._listening("", 0)  # off: what listened before was stopped first
        self.failed.emit(message)


NEEDS_KEY = ("The local API was not opened to the network: it needs an API key there, so that only the "
             "programs you give the key to can use the model. Set one in Model ▸ Local API server… "
             "(New key makes one), or serve this computer only.")


def not_started(port: int, error: BaseException, bind: str = LOOPBACK) -> tuple[str, Optional[int]]:
    """Why the server did not start, in words (uvicorn gives only an exit code), and a port to offer."""
    if port_in_use(port, bind):
        return port_taken(port, bind)
    if not address_is_mine(bind):
        return (f"The local API could not listen on {bind}: this computer has no such address now (the "
                "network changed?). Choose the network again in Model ▸ Local API server….", None)
    return f"The local API server could not start on port {port} ({error}), so it is off.", None


def address_is_mine(bind: str) -> bool:
    """True when this computer can listen on `bind` (any port): False for an address it no longer has."""
    with socket.socket(socket.AF_INET6 if ":" in bind else socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((bind, 0))
        except OSError as e:
            return e.errno != errno.EADDRNOTAVAIL
    return True


def port_taken(port: int, bind: str = LOOPBACK) -> tuple[str, Optional[int]]:
    """The words for a port another program holds, and the next free port, which they offer."""
    free = free_port_after(port, bind)
    offer = (f"Port {free} is free: use it in Settings ▸ Local API server." if free is not None
             else "Choose another port in Settings ▸ Local API server.")
    return f"Port {port} is in use by another program, so the local API is off. {offer}", free
