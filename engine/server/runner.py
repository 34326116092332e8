"""Running the app under uvicorn: in the foreground (the headless command) or on a background
thread (the desktop app, tests, the bench), on loopback by default.

    server = BackgroundServer(host, ServerSettings(), port=0).start()   # 0: a free port
    print(server.url)
    server.stop()
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import threading
from typing import Optional

import uvicorn

from .app import ServerSettings, create_app
from .host import EngineHost

log = logging.getLogger(__name__)
LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8317


class UnsafeBindError(ValueError):
    """Binding beyond loopback without an API key would hand the model to the whole network."""


def check_bind(address: str, api_key: Optional[str]) -> None:
    """Refuse a non-loopback address unless an API key is set."""
    if is_loopback(address) or api_key:
        return
    raise UnsafeBindError(
        f"refusing to listen on {address} without an API key: anyone on the network could use the model. "
        f"Pass --api-key KEY (clients send 'Authorization: Bearer KEY'), or bind {LOOPBACK}."
    )


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class _Server(uvicorn.Server):
    """uvicorn's server that cancels every running reply as soon as it is asked to stop, so streamed
    replies end at their next token instead of holding the shutdown open."""

    def __init__(self, config: uvicorn.Config, host: EngineHost) -> None:
        super().__init__(config)
        self._engine_host = host

    def handle_exit(self, sig, frame) -> None:
        self._engine_host.cancel_all()
        super().handle_exit(sig, frame)
        # uvicorn raises a captured signal again once it has shut down; SIGTERM's default action would
        # then kill the process (exit 143) before the caller frees sessions and the engine. A SIGTERM
        # is handled by now: the caller's clean shutdown runs and the process exits 0.
        self._captured_signals = [s for s in self._captured_signals if s != signal.SIGTERM]


def make_server(host: EngineHost, settings: ServerSettings, address: str = LOOPBACK,
                port: int = DEFAULT_PORT) -> uvicorn.Server:
    check_bind(address, settings.api_key)
    config = uvicorn.Config(create_app(host, settings), host=address, port=port, log_level="warning",
                            lifespan="off", timeout_graceful_shutdown=5, access_log=False)
    return _Server(config, host)


def bound_port(server: uvicorn.Server) -> int:
    return server.servers[0].sockets[0].getsockname()[1]


class BackgroundServer:
    """uvicorn on a daemon thread with its own event loop; `stop()` cancels replies and joins it."""

    def __init__(self, host: EngineHost, settings: ServerSettings = ServerSettings(), address: str = LOOPBACK,
                 port: int = DEFAULT_PORT) -> None:
        self.host = host
        self.address = address
        self._server = make_server(host, settings, address, port)
        self._thread: Optional[threading.Thread] = None
        self.port = port
        self.error: Optional[BaseException] = None

    @property
    def url(self) -> str:
        shown = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{shown}:{self.port}/v1"

    def start(self, timeout: float = 30.0) -> "BackgroundServer":
        """Start serving; returns once the socket listens. OSError if it could not (port in use)."""
        self._thread = threading.Thread(target=self._run, name="confab-server", daemon=True)
        self._thread.start()
        while not self._server.started:
            self._thread.join(0.02)
            if not self._thread.is_alive():
                raise OSError(f"the server could not start on {self.address}:{self.port}: {self.error or 'see the log'}")
            timeout -= 0.02
            if timeout <= 0:
                self.stop()
                raise OSError(f"the server did not start on {self.address}:{self.port} in time")
        self.port = bound_port(self._server)
        return self

    def _run(self) -> None:
        try:
            self._server.run()
        except BaseException as e:  # uvicorn exits the thread with SystemExit when bind fails
            self.error = e
            log.warning("the local API server stopped: %s", e)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        """Cancel running replies, close connections and wait for the thread. Idempotent."""
        self.host.cancel_all()
        self._server.should_exit = True
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
