"""Which tools a reply step is offered: the conversation's running servers' tools as function
tools, none past the step limit (the model then answers with what it has), a forced call only in
the first step, and a tool name two servers share offered once."""

from __future__ import annotations

from app.mcp.config import McpConfig, ServerConfig
from app.mcp.hub import ToolInfo
from app.mcp.offer import offer_for


class RunningServers:
    """The two things `offer_for` reads of a hub: a server's status and its tools."""

    def __init__(self, tools: dict[str, tuple[ToolInfo, ...]]) -> None:
        self._tools = tools

    def status(self, name: str) -> str:
        return "running"

    def tools(self, name: str) -> tuple[ToolInfo, ...]:
        return self._tools.get(name, ())


CONFIG = McpConfig((ServerConfig("a", "x"), ServerConfig("b", "y"), ServerConfig("c", "z")), step_limit=2)
HUB = RunningServers({
    "a": (ToolInfo("a", "read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),),
    "b": (ToolInfo("b", "read", "Another read.", {}), ToolInfo("b", "search", "", {})),
    "c": (ToolInfo("c", "never", "", {}),),
})


def test_the_conversations_servers_tools_become_function_tools(store):
    cid = store.create_conversation().id
    store.set_conversation_servers(cid, ["a", "b", "gone"])  # "gone" is no longer in mcp.json
    offer = offer_for(HUB, CONFIG, store, cid, 1, forced=True)
    assert offer.servers == {"read": "a", "search": "b"}
    assert offer.tools[0] == {"type": "function", "function": {"name": "read", "description": "Read a file.",
                              "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
    assert offer.tools[1]["function"]["parameters"] == {"type": "object", "properties": {}}
    assert offer.forced
    assert not offer_for(HUB, CONFIG, store, cid, 2, forced=True).forced  # only the first step is forced


def test_past_the_step_limit_or_without_servers_nothing_is_offered(store):
    cid = store.create_conversation().id
    assert offer_for(HUB, CONFIG, store, cid, 1) is None
    store.set_conversation_servers(cid, ["a"])
    assert offer_for(HUB, CONFIG, store, cid, 2) is not None
    assert offer_for(HUB, CONFIG, store, cid, 3) is None
