"""File ▸ Export… / Import JSON… from the window, and file pickers that start where the user was."""

from __future__ import annotations

import json

import pytest
from PySide6.QtWidgets import QFileDialog, QMessageBox

from app import file_dialogs
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: F401 (fixtures)


@pytest.fixture(autouse=True)
def default_home(monkeypatch):
    """Pickers remember folders in $CONFAB_HOME, whatever app an earlier test started."""
    monkeypatch.setattr(file_dialogs, "_home", None)


def on_store(qtbot, bridge, fn):
    """Run `fn(store)` through the bridge and wait for its result."""
    box = []
    bridge.run(fn).success(box.append).failure(box.append)
    qtbot.waitUntil(lambda: bool(box), timeout=10_000)
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


def make_conversation(qtbot, window, title="Plans **for** Monday"):
    def make(store):
        c = store.create_conversation(title, system_prompt="Be brief.")
        store.append_message(c.id, "user", "What is on Monday?")
        store.append_message(c.id, "assistant", "A walk, then `tea`.")
        return c.id
    cid = on_store(qtbot, window.bridge, make)
    window.refresh_conversations(select=cid)
    qtbot.waitUntil(lambda: window.current_id == cid, timeout=5_000)
    return cid


def fake_save(monkeypatch, path, chosen_filter):
    seen = {}

    def get_save(parent, caption, start, filters, selected=""):
        seen.update(start=start, filters=filters)
        return str(path), chosen_filter
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(get_save))
    return seen


def fake_open(monkeypatch, path):
    seen = {}

    def get_open(parent, caption, start, filters):
        seen.update(start=start)
        return str(path), ""
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(get_open))
    return seen


def test_export_markdown_from_the_file_menu(qtbot, window, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    (tmp_path / "user").mkdir()
    make_conversation(qtbot, window)
    target = tmp_path / "out" / "chat.md"
    target.parent.mkdir()
    seen = fake_save(monkeypatch, target, "Markdown (*.md)")
    with qtbot.waitSignal(window.files.exported, timeout=10_000):
        window.export_action.trigger()
    # The picker started in the user's home folder (nothing remembered yet), named after the title.
    assert seen["start"] == str(tmp_path / "user" / "Plans for Monday.md")
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# Plans **for** Monday") and "A walk, then `tea`." in text
    assert str(target) in window.statusBar().currentMessage()


def test_export_json_then_import_it_opens_a_copy(qtbot, window, tmp_path, monkeypatch):
    cid = make_conversation(qtbot, window)
    target = tmp_path / "chat"
    fake_save(monkeypatch, target, "Confab conversation, JSON (*.json)")
    with qtbot.waitSignal(window.files.exported, timeout=10_000):
        window.export_action.trigger()
    written = tmp_path / "chat.json"
    assert json.loads(written.read_text(encoding="utf-8"))["format"] == "confab.conversation"
    seen = fake_open(monkeypatch, written)
    with qtbot.waitSignal(window.files.imported, timeout=10_000) as imported:
        window.import_action.trigger()
    assert seen["start"] == str(tmp_path)  # the folder of the export, remembered
    copy_id = imported.args[0]
    assert copy_id != cid
    qtbot.waitUntil(lambda: window.current_id == copy_id, timeout=5_000)
    copy = on_store(qtbot, window.bridge, lambda s: (s.get_conversation(copy_id), s.messages(copy_id)))
    assert copy[0].title == "Plans **for** Monday (imported)"  # told from the original in the list
    assert copy[0].system_prompt == "Be brief." and [m.content for m in copy[1]] == [
        "What is on Monday?", "A walk, then `tea`."]


def test_import_of_a_bad_file_says_why_and_adds_nothing(qtbot, window, tmp_path, monkeypatch):
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": 1}', encoding="utf-8")
    fake_open(monkeypatch, bad)
    with qtbot.waitSignal(window.files.failed, timeout=10_000) as failed:
        window.import_action.trigger()
    assert "Could not import notes.json" in failed.args[0] and "Not a Confab conversation" in failed.args[0]
    box = window.findChild(QMessageBox, "conversationFileError")
    assert box is not None and box.isVisible() and "Not a Confab conversation" in box.informativeText()
    assert on_store(qtbot, window.bridge, lambda s: s.list_conversations()) == []


def test_export_with_no_conversation_open_says_so(qtbot, window, monkeypatch):
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a: (_ for _ in ()).throw(AssertionError)))
    window.export_action.trigger()
    assert window.statusBar().currentMessage() == "Open a conversation to export it."


def test_pickers_start_at_home_then_in_the_last_folder(qapp, tmp_path, monkeypatch):
    monkeypatch.setenv("CONFAB_HOME", str(tmp_path / "confab"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    (tmp_path / "user").mkdir()
    models = tmp_path / "models"
    models.mkdir()
    assert file_dialogs.start_folder() == tmp_path / "user"
    seen = fake_open(monkeypatch, models / "a.gguf")
    assert file_dialogs.open_file(None, "Open", "GGUF (*.gguf)") == models / "a.gguf"
    assert seen["start"] == str(tmp_path / "user")
    assert file_dialogs.start_folder() == models
    models.rmdir()  # a remembered folder that is gone: back to home
    assert file_dialogs.start_folder() == tmp_path / "user"
