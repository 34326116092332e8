"""A thinking model's reply in the window: a collapsed "Thought for N s" block above the answer,
live ("Thinking…") while it streams, whatever way the stream cuts its tags; Copy copies the
answer; the reasoning comes back after a restart; the Think switch is kept per conversation,
reaches the model, and is hidden for models without one."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.chat.message_view import MessageView, Shown  # noqa: E402
from app.store import open_store  # noqa: E402
from engine import EngineConfig, SamplingParams  # noqa: E402
from engine.reply.reasoning import ReasoningFormat  # noqa: E402
from tests.engine.helpers import with_template  # noqa: E402

CONFIG = EngineConfig(backend="torch", dtype="float32", max_context=1024)
TIMEOUT = 60_000
REPLY = "<think>\nThe user asks 2+2.\nThat is 4.\n</think>\n\nIt is **4**."
THOUGHT, ANSWER = "The user asks 2+2.\nThat is 4.", "It is **4**."


def stream_into(view: MessageView, pieces: list[str]) -> None:
    """Stream `pieces` (a reply's text, cut anywhere) as the engine does: through the splitter."""
    splitter = ReasoningFormat("think").splitter("start")
    for piece in pieces:
        view.append(*reversed(splitter.feed(piece)))
    view.append(*reversed(splitter.flush()))


def test_the_block_splits_streamed_tags_cut_at_every_position(qtbot):
    cuts = [[REPLY[:i], REPLY[i:]] for i in range(len(REPLY) + 1)] + [list(REPLY)]
    for pieces in cuts:
        view = MessageView(Shown(None, "assistant", "", "streaming"))
        qtbot.addWidget(view)
        stream_into(view, pieces)
        view.render_body()
        assert (view.shown.reasoning, view.shown.content) == (THOUGHT, ANSWER), pieces
        assert view.thinking.text.text() == THOUGHT
        assert view.thinking.toggle.text().startswith("Thought")
        assert "<think>" not in view.body.toPlainText() and "It is 4." in view.body.toPlainText()


def test_while_thinking_the_block_says_so_and_grows_live(qtbot):
    view = MessageView(Shown(None, "assistant", "", "streaming"))
    qtbot.addWidget(view)
    view.show()
    splitter = ReasoningFormat("think").splitter("start")
    view.append(*reversed(splitter.feed("<think>\nThe user")))
    view.render_body()
    assert view.thinking.isVisible() and view.thinking.toggle.text() == "Thinking…"
    assert not view.thinking.text.isVisible()  # collapsed by default
    qtbot.mouseClick(view.thinking.toggle, Qt.MouseButton.LeftButton)
    assert view.thinking.text.isVisible() and view.thinking.text.text() == "The user"
    view.append(*reversed(splitter.feed(" asks.</think>Four")))
    view.render_body()
    assert view.thinking.text.text() == "The user asks." and view.thinking.expanded
    assert view.thinking.toggle.text().startswith("Thought for")


def test_copy_copies_the_answer_only(qtbot):
    view = MessageView(Shown(1, "assistant", ANSWER, "complete", reasoning=THOUGHT, reasoning_s=12.4))
    qtbot.addWidget(view)
    assert view.thinking.toggle.text() == "Thought for 12 s"
    view.copy_text()
    assert QApplication.clipboard().text() == ANSWER


def test_a_reply_without_reasoning_has_no_block(qtbot):
    view = MessageView(Shown(1, "assistant", "Hello", "complete"))
    qtbot.addWidget(view)
    view.show()
    assert not view.thinking.isVisible()


@pytest.fixture
def start_app(qapp, qtbot, tiny_models, tmp_path):
    """start_app(family) -> a ConfabApp on tmp_path/home with the tiny model speaking `family`'s
    real chat template (None: the bundled SmolLM2 template, no thinking)."""
    from app.application import ConfabApp

    apps = []
    folders: dict = {}

    def start(family=None):
        if family is not None and family not in folders:
            folders[family] = with_template(tiny_models["llama"], tmp_path / family, family)
        confab = ConfabApp(qapp, tmp_path / "home", CONFIG, use_tray=False)
        apps.append(confab)
        qtbot.addWidget(confab.window)
        confab.show_window()
        confab.load(str(folders[family] if family else tiny_models["llama"]))
        qtbot.waitUntil(lambda: confab.window.state != "loading", timeout=TIMEOUT)
        confab.bridge.params = SamplingParams(temperature=0, max_tokens=12, ignore_stop=True)
        return confab

    yield start
    for confab in apps:  # a reply still running would ask "Quit anyway?"
        for cid in confab.bridge.replying():
            confab.bridge.stop(cid)
        qtbot.waitUntil(lambda: not confab.bridge.replying(), timeout=TIMEOUT)
        confab.shutdown()


def send(qtbot, confab, text):
    window = confab.window
    with qtbot.waitSignal(window.chat.reply_finished, timeout=TIMEOUT) as finished:
        qtbot.keyClicks(window.composer, text)
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    return finished.args[0]


def last_view(window):
    return window.chat_view.message_views()[-1]


def test_a_thinking_reply_streams_into_the_block_and_comes_back_after_a_restart(qtbot, start_app, tmp_path):
    """DeepSeek-R1's template opens <think> in the prompt: the tiny model's whole reply is reasoning."""
    confab = start_app("deepseek-r1-distill")
    window = confab.window
    assert not window.chat.think_switch.isVisible()  # R1 distills always think: no switch
    confab.bridge.params = SamplingParams(temperature=0, max_tokens=900, ignore_stop=True)
    qtbot.keyClicks(window.composer, "What is 2+2?")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    # live, while it streams (the view renders on its timer)
    qtbot.waitUntil(lambda: bool(window.chat_view.message_views()
                                 and last_view(window).thinking.toggle.text() == "Thinking…"), timeout=TIMEOUT)
    assert last_view(window).thinking.isVisible() and last_view(window).shown.reasoning
    window.chat.stop()
    qtbot.waitUntil(lambda: not confab.bridge.replying(), timeout=TIMEOUT)
    qtbot.waitUntil(lambda: last_view(window).shown.status == "cancelled", timeout=10_000)
    view = last_view(window)
    assert view.thinking.toggle.text().startswith("Thought") and not view.thinking.expanded
    opened = open_store(tmp_path / "home")
    try:
        store = opened.store
        stored = store.messages(store.list_conversations()[0].id)[-1]
    finally:
        opened.store.close()
    assert stored.reasoning and stored.content == "" and stored.reasoning_s is not None
    assert view.shown.reasoning == stored.reasoning
    confab.shutdown()

    again = start_app("deepseek-r1-distill")
    qtbot.waitUntil(lambda: bool(again.window.chat_view.message_views()), timeout=10_000)
    view = last_view(again.window)
    assert view.shown.reasoning == stored.reasoning
    assert view.thinking.toggle.text() == f"Thought for {stored.reasoning_s:.0f} s" or stored.reasoning_s < 1
    qtbot.mouseClick(view.thinking.toggle, Qt.MouseButton.LeftButton)
    assert view.thinking.text.text() == stored.reasoning


def test_the_think_switch_is_kept_per_conversation_and_reaches_the_model(qtbot, start_app, tmp_path):
    confab = start_app("qwen3")
    window, switch = confab.window, confab.window.chat.think_switch
    assert switch.isVisible() and switch.isChecked()
    on = send(qtbot, confab, "Hi")
    first = window.chat.current_id
    window.new_conversation()
    qtbot.mouseClick(switch, Qt.MouseButton.LeftButton)  # off, for the conversation this page creates
    assert not switch.isChecked()
    off = send(qtbot, confab, "Hi")
    second = window.chat.current_id
    assert second != first
    # Off, Qwen3's template closes an empty think block in the prompt: <think>\n\n</think>\n\n
    closed = len(confab.engine.tokenizer("<think>\n\n</think>\n\n", add_special_tokens=False).input_ids)
    assert off.stats.prompt_tokens - on.stats.prompt_tokens == closed
    window.show_conversation(first)
    qtbot.waitUntil(lambda: switch.isChecked(), timeout=5_000)
    window.show_conversation(second)
    qtbot.waitUntil(lambda: not switch.isChecked(), timeout=5_000)
    qtbot.mouseClick(switch, Qt.MouseButton.LeftButton)  # on again, kept in the store
    opened = open_store(tmp_path / "home")
    try:
        qtbot.waitUntil(lambda: opened.store.get_conversation(second).thinking is True, timeout=5_000)
        assert opened.store.get_conversation(first).thinking is None
    finally:
        opened.store.close()


def test_the_switch_is_hidden_for_a_model_without_one(start_app):
    confab = start_app(None)
    assert confab.window.state == "ready" and not confab.window.chat.think_switch.isVisible()
