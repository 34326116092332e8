"""Anthropic Messages on the local server: `POST /v1/messages` and `/v1/messages/count_tokens`.

A thin translation: the body becomes the internal chat request (`anthropic_schemas.translate`), which
runs exactly as /v1/chat/completions runs it (the same plan of tools and constraints, prompt,
context check, sampling, session pool, reply and tool-call reading), and the reply comes back as a
Messages object or event stream (`anthropic_stream`). Keys are checked as for every /v1 path
(`x-api-key` or `Authorization: Bearer`); `anthropic-version` and `anthropic-beta` are accepted.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from anyio import to_thread
from fastapi import FastAPI, Header, Request
from fastapi.responses import StreamingResponse

from ...reply.truncation import truncation_fields
from .. import fitting, generation, route_common, structured
from ..chat.replies import Shape, collect
from ..host import EngineHost
from ..json_text import JSONResponse
from ..keep_alive import SSE_HEADERS
from . import stream as anthropic_stream
from .errors import AnthropicErrors
from .schemas import CountTokensRequest, MessagesRequest, translate


def register(app: FastAPI, host: EngineHost) -> None:
    """Add the Messages routes and the middleware that gives their errors Anthropic's shape."""
    app.add_middleware(AnthropicErrors)

    @app.post("/v1/messages")
    async def messages(body: MessagesRequest, request: Request, x_session_id: Optional[str] = Header(default=None)):
        session_id = route_common.session_id(None, x_session_id)
        owner = request.state.owner
        asked = translate(body)
        chat = asked.chat
        pool = host.check_model(body.model)
        engine = pool.engine
        messages = chat.engine_messages()
        shaped = structured.plan(chat, engine)

        def begin():
            if asked.continue_final:  # the reply continues the last message: nothing may be cut
                fitted, cut = messages, None
                prompt = generation.chat_prompt(engine, messages, shaped.tools, asked.thinking, True)
                generation.check_context(engine, prompt)
            else:
                fitted, prompt, cut = fitting.fit_chat(engine, messages, shaped.tools, body.context_policy,
                                                       chat.token_limit, asked.thinking)
            params = replace(generation.sampling(chat, engine, len(prompt), chat.token_limit),
                             constraint=shaped.constraint, top_k=asked.top_k)
            lease, stream = generation.start(pool, session_id, owner, prompt, lambda s: s.chat(
                fitted, params, tools=shaped.tools, thinking=asked.thinking, continue_final=asked.continue_final),
                max_tokens=params.max_tokens)
            return lease, stream, len(prompt), cut

        lease, stream, prompt_len, cut = await to_thread.run_sync(begin)
        reply = generation.Reply(pool, lease, stream, asked.stops, prompt_len)
        shape = Shape("chat", body.model or engine.source, lease.key, None, shaped.tool_format, shaped.parallel)
        msg_id, model = anthropic_stream.message_id(), body.model or engine.source
        field, headers = truncation_fields(cut)
        if body.stream:
            return StreamingResponse(anthropic_stream.events(reply, shape, msg_id, model, prompt_len, field),
                                     media_type="text/event-stream", headers={**SSE_HEADERS, **headers})
        result = await route_common.unless_gone(collect(reply, shape), request, reply)
        if result is None:  # the client hung up: nobody reads this, but the session is free again
            return JSONResponse({}, status_code=499)
        return JSONResponse({**anthropic_stream.whole(result, reply, msg_id, model), **field}, headers=headers)

    @app.post("/v1/messages/count_tokens")
    async def count_tokens(body: CountTokensRequest) -> dict:
        asked = translate(body)
        pool = host.check_model(body.model)
        shaped = structured.plan(asked.chat, pool.engine)
        prompt = await to_thread.run_sync(lambda: generation.chat_prompt(
            pool.engine, asked.chat.engine_messages(), shaped.tools, asked.thinking, asked.continue_final))
        return {"input_tokens": len(prompt)}
