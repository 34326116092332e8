"""OpenAI `/v1/chat/completions` and `/v1/completions` on the local server.

Both run the same way: the prompt is fitted to the context under the request's policy on a worker
thread, a pooled or named session is leased, and the reply streams as server-sent events (kept
alive while a prompt is read) or comes back whole.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from anyio import to_thread
from fastapi import FastAPI, Header, Request
from fastapi.responses import StreamingResponse

from ...reply.truncation import truncation_fields
from .. import fitting, generation, route_common, structured
from ..host import EngineHost
from ..json_text import JSONResponse
from ..keep_alive import SSE_HEADERS, keep_alive
from .logprobs import Tokens
from .replies import Shape, collect, events
from .schemas import ChatCompletionRequest, CompletionRequest


def register(app: FastAPI, host: EngineHost) -> None:
    """Add the chat/completions and completions routes."""

    @app.post("/v1/chat/completions")
    async def chat(body: ChatCompletionRequest, request: Request, x_session_id: Optional[str] = Header(default=None)):
        session_id = route_common.session_id(body.session_id, x_session_id)
        owner = request.state.owner
        pool = host.check_model(body.model)
        messages = body.engine_messages()
        shaped = structured.plan(body, pool.engine)

        def begin():
            fitted, prompt, cut = fitting.fit_chat(pool.engine, messages, shaped.tools, body.context_policy,
                                                   body.token_limit)
            params = replace(generation.sampling(body, pool.engine, len(prompt), body.token_limit),
                             constraint=shaped.constraint, logprobs=shaped.logprobs)
            lease, stream = generation.start(pool, session_id, owner, prompt,
                                             lambda s: s.chat(fitted, params, tools=shaped.tools),
                                             max_tokens=params.max_tokens)
            return lease, stream, len(prompt), cut

        return await _respond("chat", pool, body, begin, request, shaped.logprobs is not None,
                              shaped.tool_format, shaped.parallel)

    @app.post("/v1/completions")
    async def completions(body: CompletionRequest, request: Request,
                          x_session_id: Optional[str] = Header(default=None)):
        session_id = route_common.session_id(body.session_id, x_session_id)
        owner = request.state.owner
        pool = host.check_model(body.model)

        def begin():
            prompt, cut = fitting.fit_prompt(pool.engine, generation.text_prompt(pool.engine, body.prompt),
                                             body.context_policy, body.token_limit)
            params = replace(generation.sampling(body, pool.engine, len(prompt), body.token_limit),
                             logprobs=body.logprobs)
            lease, stream = generation.start(pool, session_id, owner, prompt, lambda s: s.generate(prompt, params),
                                             max_tokens=params.max_tokens)
            return lease, stream, len(prompt), cut

        return await _respond("completions", pool, body, begin, request, body.logprobs is not None)


async def _respond(kind: str, pool, body, begin, request: Request, logprobs: bool = False,
                   tool_format: Optional[str] = None, parallel: bool = True):
    lease, stream, prompt_len, cut = await to_thread.run_sync(begin)
    reply = generation.Reply(pool, lease, stream, body.stops, prompt_len)
    tokens = Tokens(pool.engine.tokenizer) if logprobs else None
    shape = Shape(kind, body.model or pool.engine.source, lease.key, tokens, tool_format, parallel)
    field, headers = truncation_fields(cut)
    shape.truncated = field["truncated"]
    if body.stream:
        return StreamingResponse(keep_alive(events(reply, shape, body.include_usage)), media_type="text/event-stream",
                                 headers={**SSE_HEADERS, **headers})
    result = await route_common.unless_gone(collect(reply, shape), request, reply)
    if result is None:  # the client hung up: nobody reads this, but the session is free again
        return JSONResponse({}, status_code=499)
    return JSONResponse(shape.whole(result), headers=headers)
