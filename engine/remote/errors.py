"""What went wrong talking to a remote server, in words a person can act on.

The `openai` client raises its own classes (connection, timeout, status); `explain` turns each into
one of the named errors below with the reason spelled out: refused, DNS, 401, timeout, or "this is
not an OpenAI API". All derive from EngineError, so the app handles them like any engine refusal.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import openai

from ..errors import EngineError, ReplyInterruptedError


class RemoteError(EngineError):
    """A request to the remote server failed; the message says why."""


class ServerUnreachableError(RemoteError):
    """Nothing answered: connection refused, host not found, or no answer in time."""


class AuthenticationFailedError(RemoteError):
    """The server refused the API key (401/403)."""


class NotOpenAIServerError(RemoteError):
    """Something answered, but not as an OpenAI API does."""


class ConnectionLostError(RemoteError, ReplyInterruptedError):
    """The connection dropped (or the server ended the stream) in the middle of a reply."""


class ReplyCutError(RemoteError, ReplyInterruptedError):
    """The server itself ended the reply before it finished (it stopped, or the session was deleted)."""


def host_of(base_url: str) -> str:
    """host:port of a base URL, for messages ("127.0.0.1:8317")."""
    parts = urlsplit(base_url)
    return parts.netloc or base_url


def explain(error: BaseException, base_url: str) -> RemoteError:
    """The named error, with a readable reason, for what the openai client (or httpx) raised."""
    if isinstance(error, RemoteError):
        return error
    where = host_of(base_url)
    if isinstance(error, openai.APITimeoutError) or isinstance(error, httpx.TimeoutException):
        return ServerUnreachableError(f"timeout: {where} did not answer in time")
    if isinstance(error, openai.AuthenticationError):
        return AuthenticationFailedError(f"401 Unauthorized: {where} refused the API key "
                                         f"({'none was given' if _no_key(error) else 'check it'})")
    if isinstance(error, openai.PermissionDeniedError):
        return AuthenticationFailedError(f"403 Forbidden: {where} refused this API key")
    if isinstance(error, openai.NotFoundError) and _openai_body(error):  # e.g. an unknown model
        return RemoteError(f"{where} answered 404 Not Found: {_detail(error)}")
    if isinstance(error, openai.NotFoundError):
        return NotOpenAIServerError(
            f"not an OpenAI API: {base_url} answered 404 Not Found (an OpenAI base URL usually ends in /v1)")
    if isinstance(error, openai.RateLimitError):
        return RemoteError(f"{where} is busy (429 Too Many Requests): {_detail(error)}")
    if isinstance(error, openai.APIStatusError):
        return RemoteError(f"{where} answered {error.status_code}: {_detail(error)}")
    if isinstance(error, openai.APIConnectionError):
        return _connection(error.__cause__ or error, where)
    if isinstance(error, (httpx.TransportError, ConnectionError)):
        return _connection(error, where)
    return RemoteError(f"{where}: {type(error).__name__}: {error}")


def _connection(cause: BaseException, where: str) -> ServerUnreachableError:
    text = f"{cause} {cause.__cause__ or ''}".lower()
    if any(s in text for s in ("name or service not known", "nodename nor servname", "getaddrinfo",
                               "name resolution", "no address associated", "no such host")):
        host = where.rsplit(":", 1)[0]
        return ServerUnreachableError(f"DNS: the host name {host!r} could not be resolved")
    if "refused" in text:
        return ServerUnreachableError(f"connection refused: nothing listens at {where} (is the server running?)")
    return ServerUnreachableError(f"could not connect to {where}: {cause}")


def _detail(error: "openai.APIStatusError") -> str:
    body = error.body
    if isinstance(body, dict):
        body = body.get("error", body)
        if isinstance(body, dict):
            return str(body.get("message", body))
    return str(body or error.message)


def _openai_body(error: "openai.APIStatusError") -> bool:
    """Whether the error body has the OpenAI shape ({"error": {"message": ...}})."""
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return "message" in body["error"]
    return isinstance(body, dict) and "message" in body and "type" in body  # the client may unwrap it


def _no_key(error: "openai.APIStatusError") -> bool:
    header = error.response.request.headers.get("authorization", "")
    return header.strip().lower() in ("", "bearer", f"bearer {NO_KEY}")


NO_KEY = "no-key"
"""What the openai client sends when the user gave no key (it insists on one); servers without a
key ignore the header."""
