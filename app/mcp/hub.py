"""`McpHub`: the app's MCP client connections, on one asyncio thread of their own.

Each server is one long-lived task holding its transport (a child process over stdio, or streamable
HTTP) and a `ClientSession`; the task starts the server when a conversation first needs its tools
and stops it on `stop` or when the app closes. Callers on any thread get `concurrent.futures.Future`s
and never block: the GUI thread attaches callbacks, the store thread (which offers the tools to a
reply) only reads the tool lists already fetched.

A call never raises: a timeout, a crash (the server's process died), a refused connection or an
error result all come back as a failed `CallOutcome` whose text says what happened, for the user's
block and for the model, and the conversation goes on. A server that timed out is stopped (its
process killed) and starts again at the next call. What each server writes to stderr, and what the
hub did with it, goes to `<home>/mcp-logs/<name>.log` (the settings page shows it); a stdio server
that exits at start is reported with the last lines of its stderr, which usually say why.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .config import DEFAULT_TIMEOUT_S, ServerConfig

log = logging.getLogger(__name__)
MAX_RESULT_CHARS = 40_000
"""A longer result is cut (and says so): a tool can return far more than a context holds."""
LOG_TAIL_CHARS = 20_000
STDERR_LINES = 3
"""How many of the last stderr lines of a server that exited at start go into the message."""
START_TIMEOUT_S = 60.0
"""Longest a server may take to start and list its tools (npx may download it first)."""


@dataclass(frozen=True)
class ToolInfo:
    """One tool a server offers."""

    server: str
    name: str
    description: str
    input_schema: dict


@dataclass(frozen=True)
class CallOutcome:
    """How a call ended: "done" with the tool's text, or "failed" with why."""

    status: str
    text: str


class _Connection:
    def __init__(self, config: ServerConfig, loop: asyncio.AbstractEventLoop) -> None:
        self.config = config
        self.session: Any = None
        self.ready: asyncio.Future = loop.create_future()
        self.ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # read even when nobody waits
        self.stop = asyncio.Event()
        self.closed = asyncio.Event()
        self.log_start = 0
        """Where this start's part of the log begins (the log keeps earlier starts too)."""
        self.task: Optional[asyncio.Task] = None


class McpHub:
    """Connections to MCP servers. Thread-safe; every method returns at once."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = Path(log_dir)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="confab-mcp", daemon=True)
        self._thread.start()
        self._lock = threading.Lock()
        self._configs: dict[str, ServerConfig] = {}
        self._tools: dict[str, tuple[ToolInfo, ...]] = {}  # read from any thread
        self._status: dict[str, str] = {}
        self._conns: dict[str, _Connection] = {}  # loop thread only
        self._closed = False

    # -- any thread --------------------------------------------------------------------------------
    def configure(self, servers: tuple[ServerConfig, ...]) -> None:
        """The servers from `mcp.json`; a removed or changed server is stopped."""
        with self._lock:
            changed = [n for n, c in self._configs.items() if n not in {s.name for s in servers}
                       or next(s for s in servers if s.name == n) != c]
            self._configs = {s.name: s for s in servers}
            for name in changed:
                self._tools.pop(name, None)
                self._status.pop(name, None)
        for name in changed:
            self._submit(self._stop(name))

    def tools(self, name: str) -> tuple[ToolInfo, ...]:
        """The tools `name` offered when it last started (empty before it has)."""
        with self._lock:
            return self._tools.get(name, ())

    def status(self, name: str) -> str:
        """"" (not started), "starting", "running", or why it is not running."""
        with self._lock:
            return self._status.get(name, "")

    def connect(self, name: str, timeout_s: float = START_TIMEOUT_S) -> concurrent.futures.Future:
        """Start `name` (if it is not running) and list its tools: a Future of its `ToolInfo`s."""
        return self._submit(self._ensure(name, timeout_s))

    def call(self, server: str, tool: str, arguments: dict, timeout_s: float = DEFAULT_TIMEOUT_S) -> concurrent.futures.Future:
        """Call a tool: a Future of its `CallOutcome` (never an exception)."""
        return self._submit(self._call(server, tool, arguments, timeout_s))

    def stop(self, name: str) -> concurrent.futures.Future:
        return self._submit(self._stop(name))

    def log_text(self, name: str) -> str:
        """The end of the server's log (its stderr and what the hub did)."""
        try:
            text = self._log_path(name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return text[-LOG_TAIL_CHARS:]

    def close(self, timeout_s: float = 15.0) -> None:
        """Stop every server (their processes end) and the thread."""
        if self._closed:
            return
        self._closed = True
        try:
            asyncio.run_coroutine_threadsafe(self._stop_all(), self._loop).result(timeout_s)
        except Exception:
            log.warning("MCP servers did not all stop in time", exc_info=True)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout_s)

    def _submit(self, coro) -> concurrent.futures.Future:
        if self._closed:
            coro.close()
            future: concurrent.futures.Future = concurrent.futures.Future()
            future.set_exception(RuntimeError("MCP tools are closed"))
            return future
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def _set(self, name: str, status: str, tools: Optional[tuple[ToolInfo, ...]] = None) -> None:
        with self._lock:
            if name in self._configs:
                self._status[name] = status
                if tools is not None:
                    self._tools[name] = tools

    def _log_path(self, name: str) -> Path:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
        return self.log_dir / f"{safe}.log"

    def _log_size(self, name: str) -> int:
        try:
            return self._log_path(name).stat().st_size
        except OSError:
            return 0

    def _stderr_tail(self, conn: _Connection) -> str:
        """The last lines the server wrote to stderr since this start (the hub's own notes left out)."""
        try:
            with self._log_path(conn.config.name).open("rb") as f:
                f.seek(conn.log_start)
                text = f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("[confab ")]
        return " / ".join(lines[-STDERR_LINES:])[-1000:]

    def _note(self, name: str, text: str) -> None:
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            with self._log_path(name).open("a", encoding="utf-8") as f:
                f.write(f"[confab {time.strftime('%H:%M:%S')}] {text}\n")
        except OSError:
            log.warning("could not write the log of MCP server %s", name, exc_info=True)

    # -- loop thread -------------------------------------------------------------------------------
    async def _ensure(self, name: str, timeout_s: float) -> tuple[ToolInfo, ...]:
        with self._lock:
            config = self._configs.get(name)
        if config is None:
            raise LookupError(f"there is no MCP server named {name!r} in mcp.json")
        conn = self._conns.get(name)
        if conn is None or conn.closed.is_set() or conn.config != config:
            if conn is not None:
                await self._stop(name)
            conn = self._conns[name] = _Connection(config, self._loop)
            conn.log_start = self._log_size(name)
            self._set(name, "starting")
            self._note(name, f"starting: {config.describe()}")
            conn.task = self._loop.create_task(self._run(conn))
        try:
            return await asyncio.wait_for(asyncio.shield(conn.ready), timeout_s)
        except asyncio.TimeoutError:
            await self._stop(name)
            why = f"did not start within {timeout_s:g} s"
            self._set(name, why)
            self._note(name, why)
            raise TimeoutError(f"the MCP server {name!r} {why}") from None

    async def _run(self, conn: _Connection) -> None:
        """The connection's whole life, in one task (anyio's transports must be left where entered)."""
        name = conn.config.name
        try:
            async with AsyncExitStack() as stack:
                read, write = await self._open_transport(conn.config, stack)
                from mcp import ClientSession

                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                listed = await session.list_tools()
                tools = tuple(ToolInfo(name, t.name, t.description or "", dict(t.inputSchema or {}))
                              for t in listed.tools)
                conn.session = session
                self._set(name, "running", tools)
                self._note(name, f"running; tools: {', '.join(t.name for t in tools) or 'none'}")
                conn.ready.set_result(tools)
                await conn.stop.wait()
        except BaseException as e:  # noqa: BLE001 (a server's failure must not end the thread)
            why = describe_error(e)
            if not conn.ready.done() and _connection_lost(_innermost(e)):  # it exited: its stderr says why
                tail = self._stderr_tail(conn) if not conn.config.url else ""
                why = f"{name} exited at start: {tail}" if tail else why
            if not conn.stop.is_set():
                self._set(name, f"stopped: {why}")
                self._note(name, f"stopped: {why}")
            if not conn.ready.done():
                conn.ready.set_exception(ConnectionError(f"the MCP server {name!r} could not start: {why}"))
            if isinstance(e, asyncio.CancelledError):
                raise
        finally:
            conn.session = None
            conn.closed.set()

    async def _open_transport(self, config: ServerConfig, stack: AsyncExitStack):
        if config.url:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            client = await stack.enter_async_context(create_mcp_http_client(headers=config.headers or None))
            read, write, _ = await stack.enter_async_context(streamable_http_client(config.url, http_client=client))
            return read, write
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        self.log_dir.mkdir(parents=True, exist_ok=True)
        errlog = stack.enter_context(self._log_path(config.name).open("a", encoding="utf-8"))
        params = StdioServerParameters(command=config.command, args=list(config.args), env=config.env or None)
        return await stack.enter_async_context(stdio_client(params, errlog=errlog))

    async def _call(self, server: str, tool: str, arguments: dict, timeout_s: float) -> CallOutcome:
        try:
            await self._ensure(server, max(timeout_s, START_TIMEOUT_S))
        except Exception as e:  # noqa: BLE001
            return CallOutcome("failed", f"The tool {tool} could not run: {describe_error(e)}.")
        conn = self._conns[server]
        left = timeout_s
        self._note(server, f"call {tool} {arguments}")
        call = asyncio.ensure_future(conn.session.call_tool(tool, arguments))
        died = asyncio.ensure_future(conn.closed.wait())
        done, _ = await asyncio.wait({call, died}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        died.cancel()
        if call not in done:
            call.cancel()
            if conn.closed.is_set():
                why = f"The MCP server {server!r} stopped during the call to {tool} ({self.status(server)})."
            else:
                why = (f"The MCP server {server!r} did not answer the call to {tool} within {timeout_s:g} s; "
                       "the call was given up and the server stopped (it starts again at the next call).")
                await self._stop(server)
                self._set(server, f"stopped: a call to {tool} timed out")
            self._note(server, why)
            return CallOutcome("failed", why)
        try:
            result = call.result()
        except Exception as e:  # noqa: BLE001
            if _connection_lost(e):
                why = (f"The MCP server {server!r} stopped during the call to {tool} (it crashed or exited: "
                       f"{describe_error(e)}); it starts again at the next call. Its log may say why.")
                await self._stop(server)
                self._set(server, f"stopped: it crashed or exited during a call to {tool}")
            else:
                why = f"The call to {tool} failed: {describe_error(e)}."
            self._note(server, why)
            return CallOutcome("failed", why)
        text = result_text(result)
        self._note(server, f"{tool} {'returned an error' if result.isError else 'answered'} ({len(text)} characters)")
        return CallOutcome("failed" if result.isError else "done", text)

    async def _stop(self, name: str) -> None:
        conn = self._conns.pop(name, None)
        if conn is None or conn.task is None:
            return
        conn.stop.set()
        if not conn.ready.done():  # still starting: nothing to close politely
            conn.task.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(conn.closed.wait()), 5)
        except asyncio.TimeoutError:
            conn.task.cancel()
            await asyncio.wait({conn.task}, timeout=5)
        self._note(name, "stopped")

    async def _stop_all(self) -> None:
        await asyncio.gather(*(self._stop(n) for n in list(self._conns)), return_exceptions=True)


def result_text(result: Any) -> str:
    """A `CallToolResult` as text for the model and the user: its text parts; other parts named."""
    parts = []
    for item in result.content or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind == "resource" and hasattr(item.resource, "text"):
            parts.append(item.resource.text)
        else:
            parts.append(f"[{kind or 'content'}{': ' + item.mimeType if getattr(item, 'mimeType', None) else ''}]")
    if not parts and getattr(result, "structuredContent", None) is not None:
        import json

        parts.append(json.dumps(result.structuredContent, ensure_ascii=False))
    text = "\n".join(parts)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[cut: {len(text) - MAX_RESULT_CHARS:,} more characters]"
    return text


def _connection_lost(error: BaseException) -> bool:
    """The server's side of the connection is gone (process exited, stream closed)."""
    import anyio
    from mcp.shared.exceptions import McpError
    from mcp.types import CONNECTION_CLOSED

    if isinstance(error, McpError):
        return error.error.code == CONNECTION_CLOSED
    return isinstance(error, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream,
                              ConnectionError))


def _innermost(error: BaseException) -> BaseException:
    """The first error inside (nested) exception groups, which anyio raises."""
    while getattr(error, "exceptions", None):
        error = error.exceptions[0]
    return error


def describe_error(error: BaseException) -> str:
    """One line for a failure, looking inside exception groups (anyio raises them)."""
    error = _innermost(error)
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
