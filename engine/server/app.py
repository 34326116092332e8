"""The FastAPI application: routes, API key check and CORS, over an `EngineHost`.

    host = EngineHost(engine)
    app = create_app(host, ServerSettings(api_key="secret"))

Handlers never block the event loop: opening a session, tokenizing and starting a reply run on a
worker thread (`anyio.to_thread`), and tokens arrive through `Reply`'s pump thread.
"""

from __future__ import annotations

import hmac
import time
from dataclasses import dataclass, field
from typing import Optional

from anyio import to_thread
from fastapi import FastAPI, Header, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, StreamingResponse

from . import errors, generation
from .errors import APIError
from .host import EngineHost
from .responses import Shape, collect, events
from .schemas import ChatCompletionRequest, CompletionRequest

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@dataclass(frozen=True)
class ServerSettings:
    """How the server answers: who may call it and from which web origins."""

    api_key: Optional[str] = None
    """When set, every /v1 request needs `Authorization: Bearer <api_key>`."""
    cors_origins: tuple[str, ...] = field(default_factory=tuple)
    """Web origins allowed to call from a browser; none unless asked."""


def create_app(host: EngineHost, settings: ServerSettings = ServerSettings()) -> FastAPI:
    app = FastAPI(title="Confab local API", docs_url=None, redoc_url=None, openapi_url=None)
    errors.install(app)
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins), allow_methods=["*"],
                           allow_headers=["*"])
    started = time.time()

    @app.middleware("http")
    async def _auth(request: Request, call_next):
        if settings.api_key and request.url.path.startswith("/v1") and request.method != "OPTIONS":
            given = request.headers.get("authorization", "")
            token = given[7:] if given[:7].lower() == "bearer " else ""
            if not hmac.compare_digest(token.encode(), settings.api_key.encode()):
                return APIError(401, "missing or wrong API key (send Authorization: Bearer <key>)",
                                "invalid_api_key").response()
        return await call_next(request)

    @app.get("/health")
    async def health() -> JSONResponse:
        engine = host.engine
        if engine is None:
            return JSONResponse({"status": "loading"}, status_code=503)
        return JSONResponse({"status": "ok", "model": engine.source})

    @app.get("/v1/models")
    async def models() -> dict:
        engine = host.pool().engine
        return {"object": "list", "data": [
            {"id": engine.source, "object": "model", "created": int(started), "owned_by": "confab"}]}

    @app.get("/v1/sessions")
    async def sessions() -> dict:
        return {"object": "list", "data": host.pool().describe()}

    @app.delete("/v1/sessions/{session_id}")
    async def delete_session(session_id: str) -> dict:
        pool = host.pool()
        await to_thread.run_sync(pool.delete, session_id)
        return {"id": session_id, "object": "session", "deleted": True}

    @app.post("/v1/chat/completions")
    async def chat(body: ChatCompletionRequest, x_session_id: Optional[str] = Header(default=None)):
        session_id = _session_id(body.session_id, x_session_id)
        pool = host.check_model(body.model)
        messages = body.engine_messages()

        def begin():
            prompt = generation.chat_prompt(pool.engine, messages)
            generation.check_context(pool.engine, prompt)
            params = generation.sampling(body, pool.engine, len(prompt), body.token_limit)
            lease, stream = generation.start(pool, session_id, prompt, lambda s: s.chat(messages, params))
            return lease, stream, len(prompt)

        return await _respond("chat", pool, body, begin)

    @app.post("/v1/completions")
    async def completions(body: CompletionRequest, x_session_id: Optional[str] = Header(default=None)):
        session_id = _session_id(body.session_id, x_session_id)
        pool = host.check_model(body.model)

        def begin():
            prompt = generation.text_prompt(pool.engine, body.prompt)
            generation.check_context(pool.engine, prompt)
            params = generation.sampling(body, pool.engine, len(prompt), body.token_limit)
            lease, stream = generation.start(pool, session_id, prompt, lambda s: s.generate(prompt, params))
            return lease, stream, len(prompt)

        return await _respond("completions", pool, body, begin)

    return app


async def _respond(kind: str, pool, body, begin):
    lease, stream, prompt_len = await to_thread.run_sync(begin)
    reply = generation.Reply(pool, lease, stream, body.stops, prompt_len)
    shape = Shape(kind, pool.engine.source, lease.key)
    if body.stream:
        return StreamingResponse(events(reply, shape, body.include_usage), media_type="text/event-stream",
                                 headers=SSE_HEADERS)
    text, finish_reason, usage, reasoning = await collect(reply)
    return shape.whole(text, finish_reason, usage, reasoning)


def _session_id(in_body: Optional[str], in_header: Optional[str]) -> Optional[str]:
    if in_body and in_header and in_body != in_header:
        raise errors.bad_request("session_id in the body and the X-Session-Id header differ")
    return in_body or in_header or None
