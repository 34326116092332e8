"""The per-conversation context policy in the window: chosen in the conversation settings, and a
reply written without the whole conversation shows a notice saying what was left out."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from app.settings.app_settings import AppSettings  # noqa: E402
from app.settings.conversation_settings import ConversationSettingsDialog  # noqa: E402
from app.store import Conversation  # noqa: E402
from engine import Engine, EngineConfig  # noqa: E402
from tests.app.gui_fixtures import bridge, window  # noqa: E402,F401 (fixtures)
from tests.app.window.test_gui_export import on_store  # noqa: E402

REPLY_TIMEOUT = 30_000
CONTEXT = 128


@pytest.fixture(scope="module")
def gui_engine(tiny_models) -> Engine:
    engine = Engine.load(str(tiny_models["llama"]), EngineConfig(backend="torch", dtype="float32", max_context=CONTEXT))
    yield engine
    engine.close()


def draft(sampling):
    return Conversation(id=0, title="", created_at=0.0, updated_at=0.0, pinned=False, model=None,
                        system_prompt="", sampling=sampling)


def test_the_settings_dialog_sets_the_policy(qtbot):
    dialog = ConversationSettingsDialog(draft({}), AppSettings())
    qtbot.addWidget(dialog)
    combo = dialog.context_policy
    assert combo.currentData() == "refuse" and "context_policy" not in dialog.result()[1]
    combo.setCurrentIndex(combo.findData("rolling"))
    assert dialog.result()[1] == {"context_policy": "rolling"}
    kept = ConversationSettingsDialog(draft({"context_policy": "middle", "temperature": 0.5}), AppSettings())
    qtbot.addWidget(kept)
    assert kept.context_policy.currentData() == "middle"
    assert kept.result()[1] == {"context_policy": "middle", "temperature": 0.5}


def test_a_cut_reply_shows_a_notice_in_the_window(qtbot, window):
    window.set_model("tiny", "torch", "cpu", max_context=CONTEXT)

    def make(store):
        c = store.create_conversation("Long", sampling={"context_policy": "rolling"})
        for i in range(8):
            store.append_message(c.id, "user", f"Question {i} about the weather in some city or other.")
            store.append_message(c.id, "assistant", f"Answer {i}: it is mild and dry there today, as usual.")
        return c.id

    cid = on_store(qtbot, window.bridge, make)
    window.show_conversation(cid)
    qtbot.waitUntil(lambda: len(window.chat_view.message_views()) == 16, timeout=5_000)
    assert all(v.notice.isHidden() for v in window.chat_view.message_views())
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        qtbot.keyClicks(window.composer, "And now?")
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    last = lambda: window.chat_view.message_views()[-1]  # noqa: E731
    qtbot.waitUntil(lambda: last().notice.isVisible(), timeout=5_000)
    text = last().notice.text()
    assert "earlier messages from the start left out" in text and f"context of {CONTEXT:,} tokens" in text
    assert last().notice.wordWrap()  # a long notice wraps instead of widening the window
    assert all(v.notice.isHidden() for v in window.chat_view.message_views()[:-1])
    # Every message is still in the conversation; only the model's view was cut.
    assert "Question 0 about the weather" in window.chat_view.plain_text()
