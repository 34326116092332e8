"""A conversation's MCP tools as the engine's function tools (the `ToolOffer` of one reply step).

Called on the store thread, which owns the store: it reads which servers the conversation uses and
the tool lists the hub fetched. A server still starting is waited for (once, up to a minute);
one that is not running offers nothing this step and the reply goes on without it.
"""

from __future__ import annotations

import logging
from typing import Optional

from app.conversations.tool_turn import ToolOffer
from app.store import Store

from .config import McpConfig
from .hub import START_TIMEOUT_S, McpHub, ToolInfo

log = logging.getLogger(__name__)


def function_tool(tool: ToolInfo) -> dict:
    """An MCP tool as an OpenAI function tool (its input schema is the parameters' JSON schema)."""
    schema = tool.input_schema or {"type": "object", "properties": {}}
    if schema.get("type") != "object":
        schema = {"type": "object", "properties": {}}
    return {"type": "function", "function": {"name": tool.name, "description": tool.description,
                                             "parameters": schema}}


def offer_for(hub: McpHub, config: McpConfig, store: Store, conversation_id: int, step: int,
              forced: bool = False) -> Optional[ToolOffer]:
    """The tools of the conversation's servers for reply step `step`; None past the step limit
    (the model then answers with what it has) or when it uses no servers. `forced`: step 1 must call
    a tool."""
    if step > config.step_limit:
        return None
    names = [n for n in store.conversation_servers(conversation_id) if config.server(n) is not None]
    tools: list[dict] = []
    servers: dict[str, str] = {}
    for name in names:
        if hub.status(name) in ("", "starting"):
            try:
                hub.connect(name).result(START_TIMEOUT_S + 5)
            except Exception as e:  # noqa: BLE001 (the reply goes on without this server)
                log.warning("MCP server %s is not available: %s", name, e)
        for tool in hub.tools(name):
            if tool.name in servers:
                log.warning("MCP tool %s of %s hidden by %s's tool of that name", tool.name, name, servers[tool.name])
                continue
            servers[tool.name] = name
            tools.append(function_tool(tool))
    if not tools:
        return None
    return ToolOffer(tuple(tools), servers, forced=forced and step == 1)
