"""OpenAI-style error bodies: every refusal is `{"error": {"message", "type", "code"}}` with a status.

Clients (the `openai` package, editors, agents) read `error.message` and branch on the status, so
each failure the issue names has one status and one code here, and nothing else builds error bodies.
"""

from __future__ import annotations

from typing import Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import errors as engine_errors
from .json_text import JSONResponse


class APIError(Exception):
    """A refusal with its HTTP status, OpenAI error type and code."""

    def __init__(self, status: int, message: str, code: Optional[str] = None,
                 type: str = "invalid_request_error", headers: Optional[dict[str, str]] = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.type = type
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "code": self.code, "param": None}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def bad_request(message: str, code: Optional[str] = "invalid_request") -> APIError:
    return APIError(400, message, code)


def not_found(message: str, code: str) -> APIError:
    return APIError(404, message, code)


def busy_session(session_id: str) -> APIError:
    return APIError(409, f"session {session_id!r} is already generating a reply; wait for it or cancel it",
                    "session_busy", "conflict_error")


def capacity_full(detail: str, wait: tuple[int, str] = (1, "")) -> APIError:
    """429 with `Retry-After` from `wait`: (seconds, the estimate in words) (SessionPool.retry_after)."""
    seconds, why = wait
    return APIError(429, f"the server is at capacity ({detail}); {why or 'retry shortly'}", "capacity_exceeded",
                    "rate_limit_error", headers={"Retry-After": str(seconds)})


def no_model(detail: str = "no model is loaded") -> APIError:
    return APIError(503, f"{detail}; retry when the model is ready", "model_not_loaded", "server_error",
                    headers={"Retry-After": "2"})


def from_engine(error: engine_errors.EngineError) -> APIError:
    """The HTTP answer for an engine refusal raised before any compute."""
    if isinstance(error, engine_errors.ContextOverflowError):
        return APIError(400, str(error), "context_length_exceeded")
    if isinstance(error, engine_errors.InvalidRequestError):
        return APIError(400, str(error), "invalid_request")
    if isinstance(error, engine_errors.CapacityError):
        return capacity_full(str(error))
    if isinstance(error, engine_errors.SessionBusyError):
        return APIError(409, str(error), "session_busy", "conflict_error")
    if type(error) is engine_errors.EngineError:  # "the engine is closed": a model switch or shutdown
        return no_model(str(error))
    return APIError(500, str(error), "engine_error", "server_error")


ENDPOINTS = ("this server answers /v1/chat/completions, /v1/completions, /v1/messages, /v1/responses, "
             "/v1/embeddings, /v1/models and /v1/sessions")

UNSUPPORTED = {
    "/v1/audio/{rest:path}": "audio",
    "/v1/images/{rest:path}": "images",
}
"""OpenAI endpoints this text-generation server does not implement, and what to call them."""


def unsupported(what: str):
    """A route that answers 404 saying which OpenAI feature is missing and what to use instead."""
    async def route():
        raise APIError(404, f"{what} is not supported by this server; {ENDPOINTS}", "unsupported_endpoint")
    return route


def _validation_message(error: RequestValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item.get("loc", ()) if p != "body")
        parts.append(f"{where or 'body'}: {item.get('msg', 'invalid')}")
    return "invalid request body: " + "; ".join(parts)


def install(app: FastAPI) -> None:
    """Route every error FastAPI or the handlers raise to an OpenAI-style body."""

    @app.exception_handler(APIError)
    async def _api_error(request: Request, error: APIError) -> JSONResponse:
        return error.response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        return bad_request(_validation_message(error)).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, error: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}.get(
            error.status_code, "http_error")
        message = str(error.detail)
        if error.status_code in (404, 405):
            message = f"{request.method} {request.url.path} is not served here; {ENDPOINTS}"
        return APIError(error.status_code, message, code).response()

    @app.exception_handler(engine_errors.EngineError)
    async def _engine(request: Request, error: engine_errors.EngineError) -> JSONResponse:
        return from_engine(error).response()
