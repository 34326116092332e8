"""Anthropic-shaped errors on the Messages routes: `{"type": "error", "error": {"type", "message"}}`.

Every refusal of the server (a bad body, a wrong key, the model not loaded, capacity, a size limit)
is built once, OpenAI-shaped, by `errors.APIError` and the handlers in `errors.install`. This ASGI
middleware rewrites those bodies on `/v1/messages…` paths, so the status, the message and every
header (Retry-After, CORS) stay what the rest of the server sends, and the Anthropic SDK raises its
own error classes with the message.
"""

from __future__ import annotations

import json

from ..json_text import json_bytes

PATH = "/v1/messages"

TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
         404: "not_found_error", 409: "invalid_request_error", 413: "request_too_large",
         429: "rate_limit_error", 503: "overloaded_error", 529: "overloaded_error"}


def body_of(status: int, openai_body: dict) -> dict:
    """The Anthropic error body of an OpenAI-shaped one (its message kept, its code named in it)."""
    error = openai_body.get("error") if isinstance(openai_body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return {"type": "error", "error": {"type": TYPES.get(status, "api_error"),
                                       "message": message or f"request failed with status {status}"}}


class AnthropicErrors:
    """Wraps the app: error answers (status ≥ 400) on Messages paths get Anthropic's body."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PATH):
            await self.app(scope, receive, send)
            return
        start: dict = {}
        chunks: list[bytes] = []

        async def rewrite(message) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 400:
                start.update(message)
                return
            if not start or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            try:
                original = json.loads(b"".join(chunks) or b"{}")
            except ValueError:
                original = {}
            payload = json_bytes(body_of(start["status"], original))
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in (b"content-length", b"content-type")]
            headers += [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": payload})

        await self.app(scope, receive, rewrite)
