"""The FastAPI application: API key check, CORS, models and sessions, and each API's routes
(chat/, anthropic/, responses/, embeddings/), over an `EngineHost`.

    host = EngineHost(engine)
    app = create_app(host, ServerSettings(api_key="secret"))

Handlers never block the event loop: opening a session, tokenizing and starting a reply run on a
worker thread (`anyio.to_thread`), and tokens arrive through `Reply`'s pump thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

from anyio import to_thread
from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware

from ..errors import EngineError
from . import errors, guard, route_common
from .anthropic import routes as anthropic_api
from .chat import routes as chat_routes
from .embeddings import routes as embedding_routes
from .errors import APIError
from .host import EngineHost
from .json_text import JSONResponse
from .limits import DEFAULT_MAX_BODY, BodyLimit
from .model_names import ModelNames
from .request_log import RequestLog
from .responses import routes as openai_responses


@dataclass(frozen=True)
class ServerSettings:
    """How the server answers: who may call it and from which web origins."""

    api_key: Optional[str] = None
    """When set, every /v1 request needs `Authorization: Bearer <api_key>`."""
    api_keys: tuple[str, ...] = field(default_factory=tuple)
    """More keys, one per client: each key's sessions are private to it."""
    cors_origins: tuple[str, ...] = field(default_factory=tuple)
    """Web origins allowed to call from a browser; none unless asked."""
    max_body_bytes: int = DEFAULT_MAX_BODY
    """Largest request body read; a larger one is answered 413 before it is read."""
    model_names: ModelNames = ModelNames()
    """Aliases of the served model, or any name at all; by default only the model's own names."""
    request_log: Optional[RequestLog] = field(default=None, compare=False)
    """Where each request is recorded as it ends (the app's Server view); None: not recorded."""

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(k for k in (self.api_key, *self.api_keys) if k)


def create_app(host: EngineHost, settings: ServerSettings = ServerSettings()) -> FastAPI:
    app = FastAPI(title="Confab local API", docs_url=None, redoc_url=None, openapi_url=None,
                  default_response_class=JSONResponse)
    host.names = settings.model_names  # the host checks each request's model name
    errors.install(app)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    started = time.time()

    app.add_middleware(_Guarded, keys=settings.keys)

    if settings.cors_origins:  # added last, so it wraps the key check: a browser can read a 401 too
        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins), allow_methods=["*"],
                           allow_headers=["*"])

    if settings.request_log is not None:  # outermost: refusals by the key check and the body limit count too
        app.add_middleware(_Logged, log=settings.request_log)

    @app.get("/health")
    async def health() -> JSONResponse:
        engine = host.engine
        if engine is None:
            return JSONResponse({"status": "loading"}, status_code=503)
        return JSONResponse({"status": "ok", "model": engine.source})

    @app.get("/v1/models")
    async def models() -> dict:
        engine = host.pool().engine
        card = _card(engine, started)
        aliases = [{**card, "id": name, "alias_of": engine.source} for name in host.names.aliases]
        # the chat model stays first: clients that take the first model listed mean to chat with it
        embedder = [embedding_routes.card(host.embedder, int(started))] if host.embedder is not None else []
        return {"object": "list", "data": [{**card, "id": engine.source}, *aliases, *embedder]}

    @app.get("/v1/models/{model:path}")  # a model id may be a path
    async def model(model: str) -> dict:
        if host.embedder is not None and model in embedding_routes.own_names(host.embedder):
            return {**embedding_routes.card(host.embedder, int(started)), "id": model}
        engine = host.check_model(model).engine  # 404 for any other model
        alias = {"alias_of": engine.source} if model in host.names.aliases else {}
        return {**_card(engine, started), "id": model, **alias}

    @app.get("/v1/sessions")
    async def sessions(request: Request) -> dict:
        return {"object": "list", "data": host.pool().describe(request.state.owner)}

    @app.delete("/v1/sessions/{session_id:path}")  # an id may hold "/"
    async def delete_session(session_id: str, request: Request) -> dict:
        pool = host.pool()
        await to_thread.run_sync(pool.delete, session_id, request.state.owner)
        return {"id": session_id, "object": "session", "deleted": True}

    openai_responses.install(app, host, route_common.unless_gone)

    for path, what in errors.UNSUPPORTED.items():
        app.add_api_route(path, errors.unsupported(what), methods=["GET", "POST"])

    chat_routes.register(app, host)
    anthropic_api.register(app, host)
    embedding_routes.register(app, host)
    return app


class _Logged:
    """`RequestLog.middleware` in the shape `add_middleware` takes (a class called with the app)."""

    def __init__(self, app, log: RequestLog) -> None:
        self._app = log.middleware(app)

    async def __call__(self, scope, receive, send) -> None:
        await self._app(scope, receive, send)


class _Guarded:
    """The host check of a keyless server and the key check (engine/server/guard.py), before any route.

    A pure ASGI middleware, not Starlette's `@app.middleware("http")`: that one passes every chunk
    of a streamed reply through a task and a memory stream of its own (request_log.py says the same)."""

    def __init__(self, app, keys: tuple[str, ...]) -> None:
        self.app, self.keys = app, keys

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)  # headers only: the body stays for the route
        try:
            if not self.keys:
                guard.check_host(request.headers.get("host", ""))
            request.state.owner = None
            if self.keys and scope["path"].startswith("/v1") and scope["method"] != "OPTIONS":
                request.state.owner = guard.owner_of(_authorization(request), self.keys)
        except APIError as e:
            await e.response()(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _authorization(request: Request) -> str:
    """The Authorization header, or Anthropic's `x-api-key` as the same bearer key."""
    key = request.headers.get("x-api-key")
    return request.headers.get("authorization") or (f"Bearer {key}" if key else "")


def _card(engine, started: float) -> dict:
    """An OpenAI model object, plus Confab's `drafting`: whether replies are sped up by drafted tokens
    (llama.cpp's lookups; `draft_model` names the small model that also guesses, when one is loaded),
    `runs_on`: the backend, the device and, for llama.cpp on a GPU, the card and layers on it, and
    `takes_images` with `images`: whether messages may hold images, and how or why not."""
    try:
        on = bool(getattr(getattr(engine, "config", None), "speculative", False)) and engine.backend == "llamacpp"
        draft = (getattr(engine, "draft_model", "") or None) if on else None
        runs_on = {"backend": engine.backend, "device": engine.device,
                   "placement": getattr(engine, "placement", "") or None}
        images = {"takes_images": bool(getattr(engine, "takes_images", False)),
                  "images": getattr(engine, "images_reason", "") or None}
    except EngineError:  # the engine stopped under the server: the list still answers, drafting off
        on, draft, runs_on, images = False, None, None, {"takes_images": False, "images": None}
    return {"object": "model", "created": int(started), "owned_by": "confab",
            "drafting": {"enabled": on, "draft_model": draft}, "runs_on": runs_on, **images}
