"""A remote engine: a model served elsewhere over the OpenAI API, with the local Engine's
conversation-level interface (open_session → chat → Stream, cancel, close, capacity).

No Qt and no SQLite here. The app reaches it through `engine.open_engine`.

Threads: calls come from the caller's thread; each reply is read by a thread of its own and
handed over through the same thread-safe `Stream` as the local engine's.
"""

from .engine import (DEFAULT_MAX_SESSIONS, RemoteEngine, RemoteModel, list_models, parse_remote_source,
                     remote_source)
from .errors import (AuthenticationFailedError, ConnectionLostError, NotOpenAIServerError, RemoteError,
                     ServerUnreachableError)
from .session import RemoteSession

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "AuthenticationFailedError",
    "ConnectionLostError",
    "NotOpenAIServerError",
    "RemoteEngine",
    "RemoteError",
    "RemoteModel",
    "RemoteSession",
    "ServerUnreachableError",
    "list_models",
    "parse_remote_source",
    "remote_source",
]
