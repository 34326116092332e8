"""Conversation settings from the header: its name, a new conversation's settings, the system prompt
badge, presets, and titles shown without Markdown marks."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.chat.labels import title_from
from app.settings.conversation_settings import ConversationSettingsDialog
from app.chat.markdown_render import plain_title
from app.settings.presets import Preset, load_presets, save_preset
from app.settings.app_settings import AppSettings
from app.store import Conversation
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: F401 (fixtures)
from tests.app.window.test_gui_export import on_store

REPLY_TIMEOUT = 30_000


def draft(prompt="", sampling=None):
    return Conversation(id=0, title="", created_at=0.0, updated_at=0.0, pinned=False, model=None,
                        system_prompt=prompt, sampling=sampling or {})


def test_the_button_is_named_apart_from_app_settings_and_works_on_a_new_conversation(qtbot, window):
    button = window.chat.settings_button
    assert button.text() == "Conversation settings…"
    assert window.current_id is None and button.isEnabled()
    with qtbot.waitSignal(window.chat.new_settings_requested, timeout=1_000):
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_settings_chosen_before_the_first_message_create_the_conversation(qtbot, window):
    badge = window.chat.prompt_badge
    assert badge.isHidden()
    window.chat.set_new_settings("Answer like a pirate.", {"temperature": 0.2})
    assert badge.isVisible() and "Answer like a pirate." in badge.toolTip()
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        qtbot.keyClicks(window.composer, "Hello")
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    cid = window.current_id
    stored = on_store(qtbot, window.bridge, lambda s: s.get_conversation(cid))
    assert stored.system_prompt == "Answer like a pirate." and stored.sampling == {"temperature": 0.2}
    qtbot.waitUntil(lambda: badge.isVisible(), timeout=5_000)
    # Another new conversation starts from nothing; one without a prompt shows no badge.
    window.new_conversation()
    assert window.chat.new_settings == ("", {}) and badge.isHidden()
    plain = on_store(qtbot, window.bridge, lambda s: s.create_conversation("Plain").id)
    window.show_conversation(cid)
    qtbot.waitUntil(lambda: badge.isVisible(), timeout=5_000)
    window.show_conversation(plain)
    qtbot.waitUntil(lambda: badge.isHidden(), timeout=5_000)


def test_a_preset_saved_in_one_dialog_fills_another(qtbot, tmp_path):
    first = ConversationSettingsDialog(draft("Be terse.", {"temperature": 0.3}), AppSettings(), home=tmp_path)
    qtbot.addWidget(first)
    assert first.presets is not None and first.presets.save_as("  Terse   mode ")
    assert load_presets(tmp_path) == {"Terse mode": Preset("Be terse.", {"temperature": 0.3})}
    assert not first.presets.save_as("   ") and first.presets.message.text() == "A preset needs a name."

    second = ConversationSettingsDialog(draft(), AppSettings(), home=tmp_path, new=True)
    qtbot.addWidget(second)
    assert second.windowTitle() == "Conversation settings for the new conversation"
    second.presets.choose("Terse mode")
    assert second.result() == ("Be terse.", {"temperature": 0.3})


def test_presets_keep_odd_names_and_skip_garbled_entries(tmp_path):
    save_preset(tmp_path, "a/b \\ c", Preset("x", {"top_p": 0.5, "bogus": 1}))
    with open(tmp_path / "settings.ini", "a", encoding="utf-8") as f:
        f.write("\n[presets]\nbroken=not json\n")
    assert load_presets(tmp_path) == {"a/b \\ c": Preset("x", {"top_p": 0.5})}


def test_titles_show_without_markdown(qtbot, window):
    assert plain_title("**Fix** the `bug` in [this](http://x)") == "Fix the bug in this"
    assert plain_title("# A heading") == "A heading" and plain_title("2 * 3 * 4") == "2 * 3 * 4"
    assert title_from("**Bold** question\nsecond line") == "Bold question"
    cid = on_store(qtbot, window.bridge, lambda s: s.create_conversation("*Old* **raw** title").id)
    window.refresh_conversations(select=cid)
    qtbot.waitUntil(lambda: window.current_id == cid, timeout=5_000)
    qtbot.waitUntil(lambda: window.chat.title_label.text() == "Old raw title", timeout=5_000)
    assert (cid, "Old raw title") in window.conversation_list.shown()


def test_settings_are_kept_with_the_text_when_the_conversation_cannot_be_created(qtbot, window):
    bad = {"temperature": float("nan")}  # the store refuses it, so creating the conversation fails
    window.chat.set_new_settings("Be kind.", bad)
    with qtbot.waitSignal(window.chat.error, timeout=10_000):
        qtbot.keyClicks(window.composer, "Hello")
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    assert window.composer.toPlainText() == "Hello" and window.current_id is None
    assert window.chat.new_settings[0] == "Be kind." and window.chat.prompt_badge.isVisible()
