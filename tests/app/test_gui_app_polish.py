"""The whole app: the quick chat follows a theme change and its conversation shows in the list as
soon as it starts; a new conversation's settings go through the conversation settings dialog."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog

from app.settings.conversation_settings import ConversationSettingsDialog
from app.quick.quick_chat import TITLE
from tests.app.gui_fixtures import LONG
from tests.app.test_gui_app import TIMEOUT, start_app  # noqa: F401 (fixture)


def panel_color(quick) -> str:
    quick.repaint()
    return quick.grab().toImage().pixelColor(quick.width() // 2, quick.height() - 60).name()


def test_quick_chat_follows_a_theme_change(qtbot, start_app):  # noqa: F811 (fixture)
    confab = start_app()
    quick = confab.quick_chat
    confab.apply_settings(replace(confab.settings, theme="light"))
    quick.show_near(None)
    quick.question, quick.reply_text = "Q", "See [the docs](https://example.com)."
    quick._render()
    light = panel_color(quick)
    try:
        confab.apply_settings(replace(confab.settings, theme="dark"))
        qtbot.waitUntil(lambda: panel_color(quick) != light, timeout=5_000)
        assert "#58a6ff" in quick.answer.toHtml()  # the answer re-rendered with the dark link color
    finally:
        confab.apply_settings(replace(confab.settings, theme="system"))


def test_quick_chat_conversation_shows_in_the_list_when_it_starts(qtbot, start_app):  # noqa: F811
    confab = start_app()
    confab.bridge.params = LONG
    quick = confab.quick_chat
    quick.show_near(None)
    qtbot.keyClicks(quick.input, "Hi from the tray")
    qtbot.keyClick(quick.input, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: TITLE in [t for _, t in confab.window.conversation_list.shown()], timeout=TIMEOUT)
    assert quick.streaming  # before the reply ended, and before any "Continue in Confab"
    with qtbot.waitSignal(quick.reply_finished, timeout=TIMEOUT):
        quick.stop()


def test_conversation_settings_on_a_new_conversation_set_what_it_starts_with(qtbot, start_app,  # noqa: F811
                                                                             monkeypatch):
    confab = start_app()

    def accept(dialog):
        assert dialog.windowTitle() == "Conversation settings for the new conversation"
        dialog.system_prompt.setPlainText("Be brief.")
        dialog.use_default["max_tokens"].setChecked(False)
        dialog.spins["max_tokens"].setValue(64)
        return QDialog.DialogCode.Accepted
    monkeypatch.setattr(ConversationSettingsDialog, "exec", accept)
    menu_action = next(a for m in confab.window.menuBar().actions() for a in m.menu().actions()
                       if a.text() == "Conversation &settings…")
    menu_action.trigger()
    assert confab.window.chat.new_settings == ("Be brief.", {"max_tokens": 64})
    assert confab.window.chat.prompt_badge.isVisible()


def test_the_global_shortcut_opens_the_quick_chat_and_settings_say_why_it_cannot(qtbot, start_app,  # noqa: F811
                                                                                 monkeypatch):
    import app.application as application

    confab = start_app()
    assert not confab.shortcut.active and "No desktop" in confab.shortcut.status  # offscreen: fails soft
    confab.shortcut.activated.emit()  # what a press of the grabbed keys does
    qtbot.waitUntil(confab.quick_chat.isVisible, timeout=5_000)
    shown = []

    class Recording(application.SettingsDialog):
        def exec(self):
            shown.append(self.shortcut_status.text())
            return QDialog.DialogCode.Rejected
    monkeypatch.setattr(application, "SettingsDialog", Recording)
    confab.edit_settings()
    assert shown == [confab.shortcut.status]


def test_a_preset_starts_a_new_conversation_from_the_file_menu(qtbot, start_app, monkeypatch):  # noqa: F811
    from app import file_dialogs
    from app.settings.presets import Preset, save_preset

    monkeypatch.setattr(file_dialogs, "_home", None)
    confab = start_app()
    assert file_dialogs._folder() == confab.home  # the pickers remember folders in this app's folder
    empty = [a.text() for a in confab.preset_menu.actions()]
    assert empty == ["No presets yet (save one in Conversation settings…)"]
    save_preset(confab.home, "Pirate", Preset("Talk like a pirate.", {"temperature": 1.1}))
    confab.preset_menu.fill()
    (action,) = confab.preset_menu.actions()
    assert action.text() == "Pirate"
    action.trigger()
    assert confab.window.current_id is None
    assert confab.window.chat.new_settings == ("Talk like a pirate.", {"temperature": 1.1})
    assert confab.window.chat.prompt_badge.isVisible()
    with qtbot.waitSignal(confab.window.chat.reply_finished, timeout=TIMEOUT):
        qtbot.keyClicks(confab.window.composer, "Ahoy")
        qtbot.keyClick(confab.window.composer, Qt.Key.Key_Return)
    cid = confab.window.current_id
    got = []
    confab.bridge.run(lambda s: s.get_conversation(cid)).success(got.append)
    qtbot.waitUntil(lambda: bool(got), timeout=5_000)
    assert (got[0].system_prompt, got[0].sampling) == ("Talk like a pirate.", {"temperature": 1.1})
