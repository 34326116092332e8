"""A long prompt shows "Reading your message… n / N tokens" with a bar on the pending reply, and the
progress chunks are never stored or shown as text."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from app.chat.prefill_progress import progress_text
from engine import Engine, EngineConfig
from tests.app.gui_fixtures import bridge, window  # noqa: F401 (fixtures)

REPLY_TIMEOUT = 30_000


@pytest.fixture(scope="module")
def gui_engine(tiny_models) -> Engine:
    """The tiny llama reading prompts 8 tokens per forward, so any message is a "long" prompt."""
    engine = Engine.load(str(tiny_models["llama"]),
                         EngineConfig(backend="torch", dtype="float32", max_context=1024, prefill_chunk=8))
    yield engine
    engine.close()


def test_progress_text_groups_thousands():
    assert progress_text(1200, 3039) == "Reading your message… 1,200 / 3,039 tokens"


def test_long_prompt_shows_reading_progress_then_only_the_reply(qtbot, window):
    seen, meter = [], []
    original = window.chat_view.show_prefill

    def record(done, total):
        original(done, total)
        progress = window.chat_view.message_views()[-1].progress
        seen.append((done, total, not progress.isHidden(), progress.label.text(), progress.bar.value()))
        assert window.chat_view.message_views()[-1].body.isHidden()  # no "…" under the bar
        meter.append(window.chat.context_meter.used)

    window.chat_view.show_prefill = record
    finished = []
    window.chat.reply_finished.connect(finished.append)
    qtbot.keyClicks(window.composer, "Please read this whole paragraph about rivers, hills and valleys first")
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    assert seen, "no prefill progress was shown"
    done, total, visible, text, value = seen[0]
    assert visible and done == 8 and total > 8 and text == progress_text(8, total) and value == 8
    # a new conversation: the context meter takes the engine's count, not the draft's estimate
    assert meter[0] == total
    last = window.chat_view.message_views()[-1]
    qtbot.waitUntil(lambda: last.shown.status == "complete", timeout=5_000)
    assert last.progress.isHidden() and not last.body.isHidden()  # the reply's text replaced it
    assert last.shown.content == finished[0].text != ""
    assert window.chat.reading == {}


def test_the_quick_chat_says_how_far_it_has_read(qtbot, bridge):
    from app.quick.quick_chat import QuickChat

    quick = QuickChat(bridge)
    qtbot.addWidget(quick)
    quick.set_ready(True)
    said = []
    set_text = quick.status_label.setText
    quick.status_label.setText = lambda text: (said.append(text), set_text(text))
    quick.input.setText("Please read this whole paragraph about rivers, hills and valleys first")
    quick.send()
    qtbot.waitUntil(lambda: not bridge.replying() and bool(quick.reply_text), timeout=REPLY_TIMEOUT)
    reading = [t for t in said if t.startswith("Reading your message… 8 / ")]
    assert reading and said.index(reading[0]) < said.index("Answering…")
    assert "Reading" not in quick.reply_text


def test_stop_while_reading_ends_the_reply_as_stopped(qtbot, window):
    qtbot.keyClicks(window.composer, "rivers and hills " * 40)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: bool(window.chat.reading), timeout=REPLY_TIMEOUT)
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT) as done:
        window.chat.stop()
    assert done.args[0].finish_reason == "cancelled"
    assert window.chat.reading == {}
    qtbot.waitUntil(lambda: window.chat_view.message_views()[-1].shown.status == "cancelled", timeout=5_000)
    assert window.chat_view.message_views()[-1].progress.isHidden()
