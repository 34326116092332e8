"""The window's size, splitter and last open conversation come back after a restart."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from app.window.memory import WindowMemory, load_window_memory, save_window_memory  # noqa: E402
from engine import EngineConfig  # noqa: E402

CONFIG = EngineConfig(backend="torch", dtype="float32", max_context=1024)


@pytest.fixture
def start(qapp, qtbot, tmp_path):
    """start() -> a ConfabApp on tmp_path/home with no model loaded (layout and store only)."""
    from app.application import ConfabApp

    apps = []

    def make():
        app = ConfabApp(qapp, tmp_path / "home", CONFIG, use_tray=False)
        apps.append(app)
        qtbot.addWidget(app.window)
        app.show_window()
        return app

    yield make
    for app in apps:
        app.shutdown()


def create(qtbot, app, title):
    made = []
    app.bridge.run(lambda store: store.create_conversation(title)).success(made.append)
    qtbot.waitUntil(lambda: bool(made), timeout=5_000)
    return made[0].id


def test_size_splitter_and_last_conversation_come_back(qtbot, start):
    app = start()
    first, second = create(qtbot, app, "First"), create(qtbot, app, "Second")
    app.window.refresh_conversations(select=first)
    qtbot.waitUntil(lambda: app.window.current_id == first, timeout=5_000)
    app.window.resize(700, 500)  # the offscreen screen is 800 wide
    app.window.splitter.setSizes([300, 400])
    sizes = app.window.splitter.sizes()
    app.window.new_conversation()  # a blank page at quit: the last open one still comes back
    app.shutdown()

    again = start()
    qtbot.waitUntil(lambda: again.window.current_id == first, timeout=5_000)
    assert (again.window.width(), again.window.height()) == (700, 500)
    assert again.window.splitter.sizes() == sizes
    # The header and messages appear together once the store has answered.
    qtbot.waitUntil(lambda: again.window.chat.title_label.text() == "First", timeout=5_000)
    assert again.window.conversation_list.current_id() == first
    assert second != first


def test_a_deleted_last_conversation_leaves_an_empty_page(qtbot, start, tmp_path):
    save_window_memory(tmp_path / "home", WindowMemory(last_conversation=4242))
    app = start()
    qtbot.wait(100)  # the store answers "not found"; nothing is shown and nothing fails
    assert app.window.current_id is None and "Error" not in app.window.statusBar().currentMessage()


def test_garbled_memory_is_the_default_layout(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.ini").write_text("[window]\ngeometry=nonsense\nlast_conversation=minus one\n")
    assert load_window_memory(home) == WindowMemory()
