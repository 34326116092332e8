"""Tools per conversation, where the user types: on for a first message (from the settings page or
the composer's Tools button), shown in the header, the "must call a tool" rule kept across a
restart, and the small bundled model's reluctance said in words."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from PySide6.QtCore import Qt

from app.mcp.room import McpRoom
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: F401 (fixtures)

REPLY_TIMEOUT = 60_000


def _home(tmp_path) -> Path:
    """An mcp.json with one server that exits at start: a reply offered it goes on without it, fast."""
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {
        "notes": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(0)"]}}}))
    return home


def _servers(qtbot, bridge, cid):  # noqa: F811
    out = []
    bridge.run(lambda store: store.conversation_servers(cid)).success(out.append)
    qtbot.waitUntil(lambda: bool(out), timeout=10_000)
    return out[0]


def _shown(widget) -> bool:
    return widget.isVisibleTo(widget.window())


def test_tools_chosen_on_a_new_page_are_on_for_the_first_message(qtbot, window, bridge, tmp_path):  # noqa: F811
    room = McpRoom(window, bridge, _home(tmp_path))
    try:
        assert window.chat.current_id is None
        dialog = room.open_dialog()
        assert dialog.use_box.isEnabled()  # a new page: the choice goes to the conversation it creates
        dialog.use_box.setChecked(True)
        assert room.tools.used == ["notes"] and _shown(room.controls.badge)
        assert room.controls.badge.text() == "Tools: notes" and room.controls.button.isChecked()
        dialog.close()
        asked = []  # what the conversation used when its first reply asked for tools
        offer = bridge.tools_for
        bridge.tools_for = lambda store, cid, step: (asked.append(store.conversation_servers(cid)),
                                                     offer(store, cid, step))[1]
        with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
            qtbot.keyClicks(window.composer, "hello")
            qtbot.keyClick(window.composer, Qt.Key.Key_Return)
        cid = window.chat.current_id
        assert asked and asked[0] == ["notes"]  # on for the first message, not from the second
        assert cid is not None and _servers(qtbot, bridge, cid) == ["notes"]
        qtbot.waitUntil(lambda: room.tools.used == ["notes"], timeout=10_000)
        assert _shown(room.controls.badge)
    finally:
        room.close()


def test_the_composer_tools_button_turns_a_conversations_tools_on_and_off(qtbot, window, bridge, tmp_path):  # noqa: F811
    room = McpRoom(window, bridge, _home(tmp_path))
    try:
        ids = []
        bridge.run(lambda store: store.create_conversation("T").id).success(ids.append)
        qtbot.waitUntil(lambda: bool(ids), timeout=10_000)
        window.show_conversation(ids[0])
        assert not room.controls.button.isChecked() and not _shown(room.controls.badge)
        assert "notes" in room.controls.button.toolTip()
        qtbot.mouseClick(room.controls.button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: room.tools.used == ["notes"], timeout=10_000)
        assert _servers(qtbot, bridge, ids[0]) == ["notes"] and _shown(room.controls.badge)
        assert "notes:" in room.controls.badge.toolTip()
        qtbot.mouseClick(room.controls.button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: room.tools.used == [], timeout=10_000)
        assert _servers(qtbot, bridge, ids[0]) == [] and not _shown(room.controls.badge)
    finally:
        room.close()


def test_the_tools_button_with_no_servers_opens_the_settings_page(qtbot, window, bridge, tmp_path):  # noqa: F811
    room = McpRoom(window, bridge, tmp_path / "empty-home")
    try:
        assert "No MCP servers yet" in room.controls.button.toolTip()
        qtbot.mouseClick(room.controls.button, Qt.MouseButton.LeftButton)
        assert room.dialog is not None and room.dialog.isVisible() and not room.controls.button.isChecked()
    finally:
        room.close()


def test_first_step_must_call_a_tool_survives_a_restart(qtbot, window, bridge, tmp_path):  # noqa: F811
    home = _home(tmp_path)
    room = McpRoom(window, bridge, home)
    try:
        dialog = room.open_dialog()
        dialog.require.setChecked(True)
        assert room.controller.require_call
        assert json.loads((home / "mcp.json").read_text())["confab"]["requireToolCall"] is True
    finally:
        room.close()
    again = McpRoom(window, bridge, home)  # the next start reads it back
    try:
        assert again.controller.require_call and again.open_dialog().require.isChecked()
    finally:
        again.close()


def test_the_small_bundled_model_is_said_not_to_call_tools_unless_made_to(qtbot, window, bridge, tmp_path):  # noqa: F811
    room = McpRoom(window, bridge, _home(tmp_path))
    try:
        room.set_model("SmolLM2-135M-Instruct")
        assert not _shown(room.controls.hint)  # tools are off: nothing to say
        room.tools.set_used(["notes"])
        assert _shown(room.controls.hint)
        assert "does not call tools on its own" in room.controls.hint.text()
        room.controls.hint.linkActivated.emit("require")  # the line's link turns the rule on
        assert room.controller.require_call and not _shown(room.controls.hint)
        room.set_model("Qwen2.5-7B-Instruct")
        assert not _shown(room.controls.hint)
    finally:
        room.close()
