"""OpenAI's Responses API on the local server: POST /v1/responses, GET and DELETE /v1/responses/{id}.

A thin translation: the request becomes the internal chat request (`schema.chat_request`),
which runs exactly as /v1/chat/completions runs it (structured.plan, fitting, generation.start, the
pool), and the reply comes back as output items (`stream`). Stateless unless `store: true`;
a stored response continues, through `previous_response_id`, on its own named session, so a
follow-up prefills only its new items (`usage.input_tokens_details.cached_tokens` says how many
were reused).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Callable, Optional

from anyio import to_thread
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from ...reply.truncation import truncation_fields
from .. import fitting, generation, structured
from ..chat.replies import Shape, _Calls
from ..errors import APIError, bad_request
from ..generation import Reply, Usage
from ..host import EngineHost
from ..json_text import JSONResponse
from ..keep_alive import SSE_HEADERS, keep_alive
from .schema import ResponsesRequest, chat_messages, chat_request, thinking
from .store import SESSION_PREFIX, ResponseStore, Stored
from .stream import OutputWriter, events, feed, new_id, usage_json


def install(app: FastAPI, host: EngineHost, unless_gone: Callable, store: Optional[ResponseStore] = None) -> None:
    """Add the Responses routes. unless_gone(work, request, reply): the app's hang-up watcher."""
    store = store if store is not None else ResponseStore()
    app.state.responses = store

    @app.post("/v1/responses")
    async def create(body: ResponsesRequest, request: Request):
        owner = request.state.owner
        pool = host.check_model(body.model)
        previous = store.get(owner, body.previous_response_id) if body.previous_response_id else None
        items = (list(previous.items) if previous else []) + body.items()
        messages = chat_messages(items)
        if body.instructions:
            messages.insert(0, {"role": "system", "content": body.instructions})
        if not messages:
            raise bad_request("input is empty")
        chat = chat_request(body, messages)
        shaped = structured.plan(chat, pool.engine)
        engine_messages = chat.engine_messages()
        think = thinking(body, pool.engine.thinking_switch)
        rid = new_id("resp")
        session = previous.session if previous else (SESSION_PREFIX + rid if body.store else None)

        def begin():
            fitted, prompt, cut = fitting.fit_chat(pool.engine, engine_messages, shaped.tools, body.policy,
                                                   chat.token_limit, think)
            params = replace(generation.sampling(chat, pool.engine, len(prompt), chat.token_limit),
                             constraint=shaped.constraint)
            extra = {} if think is None else {"thinking": think}
            lease, stream = generation.start(pool, session, owner, prompt,
                                             lambda s: s.chat(fitted, params, tools=shaped.tools, **extra),
                                             max_tokens=params.max_tokens)
            return lease, stream, len(prompt), cut

        lease, stream, prompt_len, cut = await to_thread.run_sync(begin)
        reply = Reply(pool, lease, stream, [], prompt_len)
        model = body.model or pool.engine.source  # echoed as asked, as OpenAI does
        shape = Shape("chat", model, lease.key, None, shaped.tool_format, shaped.parallel)
        field, headers = truncation_fields(cut)
        created = int(time.time())

        def response(status: str, output: list[dict], usage: Optional[Usage], complete: bool) -> dict:
            return {
                "id": rid, "object": "response", "created_at": created, "status": status, "error": None,
                "incomplete_details": None if complete else {"reason": "max_output_tokens"},
                "instructions": body.instructions, "max_output_tokens": body.max_output_tokens,
                "model": model, "output": json.loads(json.dumps(output)),
                "parallel_tool_calls": shaped.parallel, "previous_response_id": body.previous_response_id,
                "reasoning": {"effort": body.reasoning.effort if body.reasoning else None, "summary": None},
                "store": bool(body.store), "temperature": chat.temperature if chat.temperature is not None else 1.0,
                "text": {"format": _format(body)}, "tool_choice": body.tool_choice or "auto",
                "tools": body.tools or [], "top_p": chat.top_p if chat.top_p is not None else 1.0,
                "truncation": "disabled" if body.policy == "refuse" else "auto", "usage": usage_json(usage),
                "metadata": body.metadata or {}, "user": body.user, "session_id": lease.key, **field,
            }

        def done(final: dict) -> None:
            if body.store:
                store.put(Stored(rid, owner, session, tuple(items + final["output"]), final))

        if body.stream:
            return StreamingResponse(keep_alive(events(reply, shape, response, done)), media_type="text/event-stream",
                                     headers={**SSE_HEADERS, **headers})
        result = await unless_gone(_whole(reply, shape), request, reply)
        if result is None:  # the client hung up
            return JSONResponse({}, status_code=499)
        output, usage, complete = result
        final = response("completed" if complete else "incomplete", output, usage, complete)
        done(final)
        return JSONResponse(final, headers=headers)

    @app.get("/v1/responses/{response_id}")
    async def read(response_id: str, request: Request) -> dict:
        return store.get(request.state.owner, response_id).body

    @app.delete("/v1/responses/{response_id}")
    async def delete(response_id: str, request: Request) -> dict:
        store.delete(request.state.owner, response_id)
        return {"id": response_id, "object": "response.deleted", "deleted": True}


async def _whole(reply: Reply, shape: Shape) -> tuple[list[dict], Optional[Usage], bool]:
    """The finished output (non-streamed): the same writer as a stream, its events left unsent."""
    writer, splitter = OutputWriter(), _Calls(shape)
    async for piece in reply.pieces():
        feed(writer, splitter, piece)
        if piece.finish_reason is not None:
            complete = piece.finish_reason != "length"
            writer.finish(complete)
            return writer.items, piece.usage, complete
    raise APIError(500, "the reply ended without finishing", "generation_failed", "server_error")


def _format(body: ResponsesRequest) -> dict:
    fmt = body.text.format if body.text else None
    if fmt is None:
        return {"type": "text"}
    return fmt.model_dump(by_alias=True, exclude_none=True)
