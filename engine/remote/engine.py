"""RemoteEngine: a model served elsewhere (vLLM, llama.cpp's server, Ollama, LM Studio, another
Confab) behind the same conversation-level interface as the local Engine.

    engine = RemoteEngine.connect("http://127.0.0.1:8317/v1", api_key=None, model=None)
    with engine.open_session() as s:
        for chunk in s.chat([{"role": "user", "content": "Hi"}], SamplingParams(temperature=0)):
            print(chunk.text, end="")

Built on the official `openai` client: its timeouts, retries (before a stream starts) and streaming.
What it cannot do it says through the interface: `can_save_state` is False, so the app resends the
history each turn instead of saving state, and the server's prefix cache makes that cheap.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import openai

from ..errors import CapacityError, StateFileError
from ..types import Capacity
from .images import reads_images
from .errors import NO_KEY, NotOpenAIServerError, RemoteError, explain, host_of
from .session import RemoteSession

DEFAULT_MAX_SESSIONS = 16
"""Conversations streaming at once by default; the server queues or refuses (429) beyond its own."""
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 300.0
"""Longest wait for the next bytes of a reply: a big model's prefill of a long history takes a while."""


@dataclass(frozen=True)
class RemoteModel:
    """What the app shows of the model: its name on the server, and where that server is."""

    name: str
    base_url: str

    @property
    def fingerprint(self) -> str:
        return "remote:" + hashlib.sha256(f"{self.base_url}\n{self.name}".encode()).hexdigest()[:24]


def make_client(base_url: str, api_key: Optional[str], timeout_s: Optional[float] = None,
                max_retries: int = 2) -> openai.OpenAI:
    """The openai client for a server; `timeout_s` caps every phase (the Test button), else a short
    connect and a long read timeout."""
    timeout = (openai.Timeout(timeout_s) if timeout_s is not None
               else openai.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S))
    return openai.OpenAI(base_url=base_url, api_key=api_key or NO_KEY, timeout=timeout, max_retries=max_retries)


def list_models(base_url: str, api_key: Optional[str] = None, *, timeout_s: float = 10.0) -> list[str]:
    """The chat model ids the server lists at /models (an entry marked `"type": "embedding"`, as
    Confab's own server lists its embedding model, cannot chat and is left out). Raises a RemoteError
    saying why not: connection refused, DNS, timeout, 401, or an answer that is not an OpenAI API's."""
    return [str(m["id"]) for m in model_entries(base_url, api_key, timeout_s=timeout_s)
            if m.get("type") != "embedding"]


def model_entries(base_url: str, api_key: Optional[str] = None, *, timeout_s: float = 10.0) -> list[dict]:
    """The server's /models entries as it sent them (each with an "id"); errors as `list_models`."""
    if not base_url.startswith(("http://", "https://")):
        raise NotOpenAIServerError(f"not an OpenAI API: {base_url!r} is not an http:// or https:// URL")
    client = make_client(base_url, api_key, timeout_s, max_retries=0)
    try:
        page = client.models.with_raw_response.list()
        body = page.http_response.json()
    except ValueError:  # the answer was not JSON (a web page, another service)
        raise NotOpenAIServerError(f"not an OpenAI API: {base_url}/models did not answer JSON") from None
    except Exception as e:
        raise explain(e, base_url) from e
    finally:
        client.close()
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not all(isinstance(m, dict) and "id" in m for m in data):
        raise NotOpenAIServerError(f"not an OpenAI API: {base_url}/models did not list models")
    return data


class RemoteEngine:
    """A model on a remote OpenAI-compatible server. Create it with `RemoteEngine.connect`."""

    can_save_state = False
    """Sessions cannot be saved to disk; the history is resent each turn."""
    is_local = False
    """The app cannot re-serve it on its own local API."""
    counts_tokens = False
    """No tokenizer here (the OpenAI API has no tokenize call): callers estimate token counts."""
    backend = "remote"
    dtype = ""
    """The server chooses the precision; nothing is known of it here."""
    dtype_reason = ""
    backend_reason = "remote: a model served elsewhere over the OpenAI API"
    quantized = ""
    reasoning = "unknown"
    """The server splits reasoning off (`reasoning_content`) or it arrives inline in `<think>` tags,
    which this side splits; either way `Chunk.reasoning` carries it."""
    thinking_switch = False
    """The OpenAI API has no common Think switch; `chat(thinking=...)` is not sent."""
    max_context = 0
    """Tokens one conversation may hold: not told by the OpenAI API (0: unknown)."""
    takes_images = False
    """Whether messages may hold images (sent as data URLs): what the server's /models entry says, or
    True where it says nothing (the server then decides). Set by `connect`."""
    images_reason = "not connected yet"

    def __init__(self, base_url: str, api_key: Optional[str], model: str, max_sessions: int) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = RemoteModel(model, self.base_url)
        self.max_sessions = max_sessions
        self.client = make_client(self.base_url, api_key)
        self._ids = itertools.count(1)
        self._sessions: set[RemoteSession] = set()
        self._lock = threading.Lock()
        self._running = True

    @classmethod
    def connect(cls, base_url: str, api_key: Optional[str] = None, model: Optional[str] = None,
                *, max_sessions: int = DEFAULT_MAX_SESSIONS) -> "RemoteEngine":
        """Check the server answers as an OpenAI API and has `model` (None: the first it lists).
        Raises a RemoteError with the reason when it does not."""
        entries = {str(m["id"]): m for m in model_entries(base_url, api_key)}
        models = [name for name, m in entries.items() if m.get("type") != "embedding"]
        if model is None:
            if not models:
                raise RemoteError(f"{host_of(base_url)} lists no models")
            model = models[0]
        elif models and model not in models:
            raise RemoteError(f"{host_of(base_url)} has no model {model!r}; it has: {', '.join(models)}")
        engine = cls(base_url, api_key, model, max_sessions)
        engine.takes_images, engine.images_reason = reads_images(entries.get(model), host_of(base_url))
        return engine

    # -- facts -------------------------------------------------------------------------------------
    @property
    def source(self) -> str:
        return remote_source(self.base_url, self.model.name)

    @property
    def model_name(self) -> str:
        return self.model.name

    @property
    def device(self) -> str:
        return host_of(self.base_url)

    @property
    def label(self) -> str:
        """Which engine and model: "NAME @ host:port"."""
        return f"{self.model.name} @ {self.device}"

    @property
    def model_fingerprint(self) -> str:
        return self.model.fingerprint

    @property
    def template_fingerprint(self) -> str:
        return "remote"

    def capacity(self) -> Capacity:
        with self._lock:
            live = len(self._sessions)
        return Capacity(weights_bytes=0, bytes_per_session=0, max_sessions=self.max_sessions,
                        live_sessions=live, budget_bytes=0)

    # -- sessions ----------------------------------------------------------------------------------
    def open_session(self, restore_from: Optional[str | Path] = None) -> RemoteSession:
        """A new conversation; CapacityError past max_sessions. Nothing can be restored."""
        if restore_from is not None:
            raise StateFileError("a remote engine cannot restore a saved state")
        with self._lock:
            if not self._running:
                raise RemoteError("the remote engine is closed")
            if len(self._sessions) >= self.max_sessions:
                raise CapacityError(f"{len(self._sessions)} of {self.max_sessions} remote sessions are open")
            session = RemoteSession(self, next(self._ids))
            self._sessions.add(session)
        return session

    def _forget(self, session: RemoteSession) -> None:
        with self._lock:
            self._sessions.discard(session)

    def close(self) -> None:
        """Stop every reply and close the client. Idempotent."""
        with self._lock:
            self._running = False
            sessions = list(self._sessions)
        for session in sessions:
            session.close()
        self.client.close()

    def __enter__(self) -> "RemoteEngine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RemoteEngine {self.label}>"


REMOTE_PREFIX = "server:"


def remote_source(base_url: str, model: str) -> str:
    """The source string that names a remote model ("server:http://host:8317/v1#model"), so the app
    remembers it like a local model's path."""
    return f"{REMOTE_PREFIX}{base_url.rstrip('/')}#{model}"


def parse_remote_source(source: str) -> Optional[tuple[str, Optional[str]]]:
    """(base_url, model or None) of a remote source; None for a local one."""
    if not source.startswith(REMOTE_PREFIX):
        return None
    url, _, model = source[len(REMOTE_PREFIX):].partition("#")
    return url, (model or None)
