"""MCP tools in the chat window: servers from `mcp.json` (Cursor's format) in the data folder, their
tools offered to a conversation's replies, each call asked for first, run off the GUI thread with a
timeout, and stored with the reply.

- `config`: read and write `mcp.json`.
- `hub`: one asyncio thread holding a client session per server (stdio or streamable HTTP).
- `offer`: MCP tools as the engine's function tools; results as text.
- `controller`: the reply → approval → call → next step loop, on the GUI thread.
- `approval`, `blocks`, `tools_dialog`: the dialog that asks, the result blocks, the settings page.
"""
