"""`python -m app.devtools.screenshots_mcp [OUT]`: pictures of MCP tools in the chat window.

Run under a virtual display like `app.devtools.screenshots`. It writes mcp-approval.png (the dialog
asking before a call, over the window) and mcp-result.png (the call's result block opened in the
reply) and mcp-settings.png (Tools ▸ MCP servers and tools) into OUT (default `docs/`). The MCP server is a small FastMCP one written into the sample
data folder; the model is the bundled one, asked to call the tool in its first step.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from engine import SamplingParams

SERVER = '''
from mcp.server.fastmcp import FastMCP

server = FastMCP("weather")


@server.tool()
def forecast(city: str) -> str:
    """Tomorrow's weather for a city."""
    return f"{city}: sunny spells, 21 °C, light wind from the west; rain after 18:00."


server.run("stdio")
'''


def make_folder(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "weather_server.py").write_text(SERVER, encoding="utf-8")
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {
        "weather": {"command": sys.executable, "args": [str(home / "weather_server.py")]}}}), encoding="utf-8")


def main(argv: list[str]) -> int:
    from app.devtools.screenshots import save_picture, settle, start_window
    from app.devtools.self_test import wait_until

    out = Path(argv[0] if argv else "docs")
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="confab-screenshots-mcp-"))
    make_folder(home)
    qapp, confab = start_window(home)
    window, controller = confab.window, confab.mcp.controller
    confab.bridge.params = SamplingParams(temperature=0, max_tokens=60)
    controller.require_call = True
    ids: list[int] = []
    confab.bridge.run(lambda store: store.set_conversation_servers(
        store.create_conversation("Weather for the weekend").id, ["weather"]) and store.list_conversations()[0].id
    ).success(ids.append)
    wait_until(qapp, lambda: bool(ids), 60, "the conversation")
    window.refresh_conversations(select=ids[0])
    wait_until(qapp, lambda: window.chat.current_id == ids[0], 60, "the conversation shown")
    window.composer.setPlainText("Will it rain in Lisbon tomorrow?")
    window.composer.submit()
    wait_until(qapp, lambda: controller.dialog is not None, 600, "the approval dialog")
    settle(qapp, 0.8)
    save_screen(qapp, out / "mcp-approval.png")
    controller.dialog.allow_button.click()
    wait_until(qapp, lambda: not controller._queue and not confab.bridge.replying()
               and any(v.tools.blocks and v.tools.blocks[0].call.status != "pending"
                       for v in window.chat_view.message_views()), 600, "the tool's result and the answer")
    settle(qapp, 1.0)
    view = next(v for v in window.chat_view.message_views() if v.tools.blocks)
    view.tools.blocks[0].set_open(True)
    settle(qapp, 0.8)
    save_picture(window, out / "mcp-result.png")
    dialog = confab.mcp.open_dialog()
    wait_until(qapp, lambda: dialog.tools.count() > 0 and dialog.use_box.isChecked(), 60, "the settings page")
    settle(qapp, 0.8)
    save_picture(dialog, out / "mcp-settings.png")
    dialog.close()
    window.close()
    confab.shutdown()
    return 0


def save_screen(qapp, path: Path) -> None:
    """The whole (virtual) screen: a dialog over its window."""
    qapp.primaryScreen().grabWindow(0).save(str(path))
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
