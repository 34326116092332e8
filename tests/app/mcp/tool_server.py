"""A small MCP server for the tests (FastMCP over stdio): tools that answer, fail, hang and crash.

    python tool_server.py                # speaks MCP on stdin/stdout, every tool
    python tool_server.py lookup crash   # only these tools (so a forced call has one choice)
    python tool_server.py --http 8123    # streamable HTTP on 127.0.0.1:8123/mcp instead
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.fastmcp import FastMCP

server = FastMCP("test-tools")


@server.tool()
def lookup() -> str:
    """The secret word of the day."""
    return "The word is periwinkle."


@server.tool()
def add(a: int, b: int) -> str:
    """Add two whole numbers."""
    return str(a + b)


@server.tool()
def hang() -> str:
    """Never answers (a hung server)."""
    time.sleep(3600)
    return "late"


@server.tool()
def crash() -> str:
    """Kills its own server (a crashed server)."""
    print("about to crash", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def fail() -> str:
    """Raises: the result is an error."""
    raise ValueError("the disk is on fire")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--http"]:
        server.settings.host, server.settings.port = "127.0.0.1", int(args[1])
        server.run("streamable-http")
        sys.exit(0)
    keep = set(args)
    if keep:
        for name in [t.name for t in server._tool_manager.list_tools()]:
            if name not in keep:
                server.remove_tool(name)
    print("test-tools server starting", file=sys.stderr, flush=True)
    server.run("stdio")
