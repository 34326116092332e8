"""mcp.json is the user's file, also while Confab runs: Tools ▸ MCP servers and tools reads it when
it opens, Add… writes the new server into it in place (the user's servers, keys and layout stay as
they wrote them), and a file that does not parse is reported with its line and never written over.
No engine and no server process: the servers point at a closed port or a missing program."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from app.bridge import Bridge  # noqa: E402
from app.mcp.controller import McpController  # noqa: E402
from app.mcp.tools_dialog import AddServerDialog, ToolsDialog  # noqa: E402

AT_START = '{"mcpServers": {"first": {"command": "/nonexistent/confab-test-server"}}}\n'
WRITTEN_LATER = """{
    "mcpServers": {
        "notes": {"command": "/nonexistent/confab-test-server", "args": ["-y", "~/notes"], "type": "stdio"},
        "search": {
            "url": "http://127.0.0.1:9/mcp",
            "headers": {"Authorization": "Bearer x"},
            "note": "a key Confab does not know"
        }
    },
    "theirSetting": [1, 2,   3]
}
"""
ADDED = """,
        "added": {
            "url": "http://127.0.0.1:9/added"
        }"""
BROKEN = """{
    "mcpServers": {
        "notes": {"command": "/nonexistent/confab-test-server"}
        "search": {"url": "http://127.0.0.1:9/mcp"}
    }
}
"""
"""A comma missing at the end of line 3: it stops parsing at line 4."""


@pytest.fixture
def controller(qapp, tmp_path, monkeypatch):
    """The MCP controller of a running app whose mcp.json had one server at start."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(AT_START)
    monkeypatch.setenv("CONFAB_HOME", str(home))
    bridge = Bridge()
    c = McpController(bridge, home, lambda *_: None)
    yield c
    c.close()
    bridge.close()


def open_dialog(qtbot, controller) -> ToolsDialog:
    dialog = ToolsDialog(controller, None)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def listed(dialog: ToolsDialog) -> list[str]:
    return [dialog.servers.item(i).text() for i in range(dialog.servers.count())]


def fill_add(monkeypatch, url: str, opened: list) -> None:
    """Answer Add…'s dialog with a server named "added" at `url`."""
    def fill(add: AddServerDialog) -> int:
        opened.append(add)
        add.name.setText("added")
        add.target.setText(url)
        add.accept()
        return 1
    monkeypatch.setattr(AddServerDialog, "exec", fill)


def test_a_file_written_while_the_app_runs_is_listed(qtbot, controller):
    (controller.home / "mcp.json").write_text(WRITTEN_LATER)
    dialog = open_dialog(qtbot, controller)
    assert listed(dialog) == ["notes", "search"]
    assert "No MCP servers yet" not in dialog.about.text() and not dialog.error_label.isVisibleTo(dialog)


def test_add_keeps_what_the_user_wrote_byte_for_byte(qtbot, controller, monkeypatch):
    path = controller.home / "mcp.json"
    dialog = open_dialog(qtbot, controller)
    path.write_text(WRITTEN_LATER)  # written while the dialog is open, before Add…
    opened = []
    fill_add(monkeypatch, "http://127.0.0.1:9/added", opened)
    dialog.add_button.click()
    assert len(opened) == 1
    end_of_search = WRITTEN_LATER.index("        }\n    },") + len("        }")
    assert path.read_text() == WRITTEN_LATER[:end_of_search] + ADDED + WRITTEN_LATER[end_of_search:]
    assert listed(dialog) == ["notes", "search", "added"] and dialog.servers.currentItem().text() == "added"


def test_remove_and_the_limits_change_only_their_own_part(qtbot, controller):
    path = controller.home / "mcp.json"
    path.write_text(WRITTEN_LATER)
    dialog = open_dialog(qtbot, controller)
    dialog.servers.setCurrentRow(listed(dialog).index("notes"))
    dialog.remove_button.click()
    assert path.read_text() == WRITTEN_LATER.replace(
        '        "notes": {"command": "/nonexistent/confab-test-server", "args": ["-y", "~/notes"], '
        '"type": "stdio"},\n', "")
    dialog.step_limit.setValue(9)
    dialog.save_limits()
    assert path.read_text().endswith('"theirSetting": [1, 2,   3],\n    "confab": {\n        "stepLimit": 9,\n'
                                     '        "timeoutSeconds": 60.0\n    }\n}\n')
    assert listed(dialog) == ["search"] and controller.config.step_limit == 9


def test_a_broken_file_is_reported_with_its_line_and_never_written_over(qtbot, controller, monkeypatch):
    path = controller.home / "mcp.json"
    path.write_text(BROKEN)  # the user is in the middle of an edit
    dialog = open_dialog(qtbot, controller)
    assert "line 4" in dialog.error_label.text() and dialog.error_label.isVisibleTo(dialog)
    warnings, opened = [], []
    monkeypatch.setattr("app.mcp.tools_dialog.QMessageBox.warning", lambda *a: warnings.append(a[2]))
    fill_add(monkeypatch, "http://127.0.0.1:9/added", opened)
    dialog.add_button.click()
    assert not opened, "Add… must refuse before asking for a server it cannot write"
    assert len(warnings) == 1 and "not changed" in warnings[0] and "line 4" in warnings[0]
    assert "line 4" in dialog.error_label.text()
    dialog.step_limit.setValue(9)
    dialog.save_limits()
    assert len(warnings) == 2 and "line 4" in warnings[1]
    assert path.read_text() == BROKEN
