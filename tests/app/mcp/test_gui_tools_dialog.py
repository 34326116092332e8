"""Tools ▸ MCP servers and tools: add a server (written to mcp.json), use it in the conversation shown
(stored), see its tools and log, remove it; bad input is named, never saved."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from app.mcp.room import McpRoom
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: F401 (fixtures)

SERVER = Path(__file__).with_name("tool_server.py")


def test_add_use_see_and_remove_a_server(qtbot, window, bridge, tmp_path, monkeypatch):  # noqa: F811
    home = tmp_path / "home"
    room = McpRoom(window, bridge, home)
    try:
        created = []
        bridge.run(lambda store: store.create_conversation("T").id).success(created.append)
        qtbot.waitUntil(lambda: bool(created), timeout=10_000)
        window.chat.current_id = created[0]
        dialog = room.open_dialog()
        from app.mcp.tools_dialog import AddServerDialog

        def fill(add: AddServerDialog) -> int:
            add.name.setText("test")
            add.target.setText(f'"{sys.executable}" "{SERVER}" lookup')
            add.extra.setPlainText("not a pair")
            add.accept()
            assert "NAME=value" in add.error.text() and add.server is None  # named, not saved
            add.extra.setPlainText("GREETING=hi")
            add.accept()
            return 1
        monkeypatch.setattr(AddServerDialog, "exec", fill)
        dialog.add_server()
        saved = json.loads((home / "mcp.json").read_text())["mcpServers"]["test"]
        assert saved == {"command": sys.executable, "args": [str(SERVER), "lookup"], "env": {"GREETING": "hi"}}
        qtbot.waitUntil(lambda: dialog.tools.count() == 1, timeout=120_000)
        assert dialog.tools.item(0).text().startswith("lookup — The secret word")
        assert "running" in dialog.about.text() and "running; tools: lookup" in dialog.log.toPlainText()
        dialog.use_box.setChecked(True)
        used = []
        qtbot.waitUntil(lambda: dialog.used == {"test"}, timeout=10_000)
        bridge.run(lambda store: store.conversation_servers(created[0])).success(used.append)
        qtbot.waitUntil(lambda: bool(used), timeout=10_000)
        assert used == [["test"]]
        dialog.remove_button.click()
        assert json.loads((home / "mcp.json").read_text())["mcpServers"] == {} and dialog.servers.count() == 0
    finally:
        room.close()


def test_a_broken_mcp_json_is_shown_not_overwritten(qtbot, window, bridge, tmp_path, monkeypatch):  # noqa: F811
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "mcp.json").write_text("{ not json")
    room = McpRoom(window, bridge, home)
    try:
        dialog = room.open_dialog()
        assert "mcp.json is not valid JSON" in dialog.error_label.text() and dialog.error_label.isVisibleTo(dialog)
        warnings = []
        monkeypatch.setattr("app.mcp.tools_dialog.QMessageBox.warning", lambda *a: warnings.append(a[2]))
        dialog.step_limit.setValue(9)
        dialog.save_limits()  # a change while the file is broken is refused, and says why
        assert warnings and "mcp.json was not changed" in warnings[0]
        assert (home / "mcp.json").read_text() == "{ not json"
    finally:
        room.close()
