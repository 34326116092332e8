"""An OpenAI-compatible HTTP server over one loaded Engine: sessions by id or by longest prefix.

    from engine.server import BackgroundServer, EngineHost, ServerSettings

    server = BackgroundServer(EngineHost(engine), ServerSettings(api_key=None), port=8317).start()
    ...  # clients call server.url ("http://127.0.0.1:8317/v1") with any OpenAI client
    server.stop()

No Qt and no SQLite here; the engine is reached only through `engine`'s public names.

Threads: uvicorn's event loop runs the routes; opening a session, tokenizing and starting a reply
run on a worker thread (`anyio.to_thread`), and the model runs on the Engine's own thread.
"""

from .app import ServerSettings, create_app
from .host import EngineHost
from .request_log import RequestEntry, RequestLog
from .runner import DEFAULT_PORT, LOOPBACK, BackgroundServer, UnsafeBindError, check_bind

__all__ = [
    "DEFAULT_PORT",
    "LOOPBACK",
    "BackgroundServer",
    "EngineHost",
    "RequestEntry",
    "RequestLog",
    "ServerSettings",
    "UnsafeBindError",
    "check_bind",
    "create_app",
]
