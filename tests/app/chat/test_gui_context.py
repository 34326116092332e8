"""The context meter: tokens used of the model's context, a warning before the next message would
not fit that says what will happen, and a clear message when it does not fit."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from app.chat.context_meter import ContextMeter, used_tokens  # noqa: E402
from app.store import Message, ReplyStats  # noqa: E402
from engine import Engine, EngineConfig  # noqa: E402
from tests.app.gui_fixtures import bridge, window  # noqa: E402,F401 (fixtures)

REPLY_TIMEOUT = 30_000
CONTEXT = 96


def message(position, role, content, stats=None):
    return Message(id=position + 1, conversation_id=1, position=position, role=role, content=content,
                   status="complete", token_ids=None, error=None, stats=stats, created_at=0.0, updated_at=0.0)


def test_used_tokens_are_the_last_replys_own_counts_plus_what_follows():
    history = [message(0, "user", "Hi"), message(1, "assistant", "Hello!", ReplyStats(0.1, 20.0, 30, 12)),
               message(2, "user", "x" * 40)]
    assert used_tokens(history[:2]) == 42
    assert used_tokens(history) == 42 + 10 + 4
    assert used_tokens([]) == 0


def test_meter_shows_figures_and_warns_with_what_will_happen(qtbot):
    meter = ContextMeter()
    qtbot.addWidget(meter)
    assert meter.isHidden()  # no model: no meter
    meter.set_limit(4096)
    meter.set_used(2310)
    assert meter.text() == "2,310 / 4,096 tokens" and meter.level == "ok"
    meter.set_used(3600)
    assert meter.level == "nearly" and "nearly full" in meter.text()
    assert "stops there" in meter.toolTip() and "Ctrl+N" in meter.toolTip()
    meter.set_draft("word " * 400)
    assert meter.level == "full" and "will not be answered" in meter.text()
    assert "the model will not answer" in meter.toolTip() and "Ctrl+N" in meter.toolTip()


@pytest.fixture(scope="module")
def gui_engine(tiny_models) -> Engine:
    engine = Engine.load(str(tiny_models["llama"]),
                         EngineConfig(backend="torch", dtype="float32", max_context=CONTEXT))
    yield engine
    engine.close()


def test_the_window_meters_the_conversation_and_explains_an_overflow(qtbot, window):
    window.set_model("tiny", "torch", "cpu", max_context=CONTEXT)
    meter = window.chat.context_meter
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT) as done:
        qtbot.keyClicks(window.composer, "Hi")
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    stats = done.args[0].stats
    used = stats.prompt_tokens + stats.generated_tokens
    qtbot.waitUntil(lambda: meter.text() == f"{used:,} / {CONTEXT} tokens", timeout=5_000)
    long = "many words here " * 30
    qtbot.keyClicks(window.composer, long)
    assert meter.level == "full" and "will not be answered" in meter.text()
    errors = []
    window.chat.error.connect(errors.append)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: bool(errors), timeout=REPLY_TIMEOUT)
    assert "This conversation is full" in str(errors[0]) and "Ctrl+N" in str(errors[0])
    qtbot.waitUntil(lambda: long.strip() in window.chat_view.plain_text(), timeout=5_000)  # kept


def test_a_sent_message_counts_at_once(qtbot, window):
    window.set_model("tiny", "torch", "cpu", max_context=CONTEXT)
    meter = window.chat.context_meter
    window.bridge.params = window.bridge.params.__class__(temperature=0, max_tokens=2, ignore_stop=True)
    qtbot.keyClicks(window.composer, "x" * 80)
    assert meter.draft == 20 and meter.used == 0
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    assert meter.used == 24 and meter.draft == 0  # before the reply's own figures replace it
    qtbot.waitUntil(lambda: not window.bridge.replying(), timeout=REPLY_TIMEOUT)


def test_files_sent_after_the_last_counted_reply_count_in_the_meter():
    """A message whose files are not yet in a reply's prompt count (estimated) in what is used."""
    import dataclasses

    from app.store import Attachment

    history = [message(0, "user", "Hi"), message(1, "assistant", "Hello!", ReplyStats(0.1, 20.0, 30, 12)),
               dataclasses.replace(message(2, "user", "x" * 40),
                                   attachments=(Attachment("a.txt", "text/plain", 400, "y" * 400),))]
    assert used_tokens(history) == 42 + 10 + 100 + 4


def test_the_count_moves_while_a_reply_streams(qtbot, window):
    from tests.app.gui_fixtures import LONG

    window.set_model("tiny", "torch", "cpu", max_context=1024)
    window.bridge.params = LONG
    meter = window.chat.context_meter
    seen = []
    show = window.chat_view.append_to_last

    def spy(text, reasoning=""):
        show(text, reasoning)
        if window.bridge.replying():
            seen.append(meter.text())

    window.chat_view.append_to_last = spy
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        qtbot.keyClicks(window.composer, "Tell me a long story")
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    figures = [int(t.split(" / ")[0].replace(",", "")) for t in seen]
    assert len(set(figures)) > 3 and figures == sorted(figures)  # it grew as the reply was written
