"""The quick chat's place: opened by the global shortcut (which gives no place), it opens beside
the tray icon, never over it."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import QObject, QRect  # noqa: E402
from PySide6.QtGui import QGuiApplication  # noqa: E402

from engine import EngineConfig  # noqa: E402


class MenubarTray(QObject):
    """A tray icon in the top-right corner of the screen, as on a menubar."""

    def __init__(self) -> None:
        super().__init__()
        screen = QGuiApplication.primaryScreen().geometry()
        self.icon_rect = QRect(screen.right() - 40, screen.top(), 24, 24)
        self.visible = True

    def geometry(self) -> QRect:
        return self.icon_rect

    def hide(self) -> None:
        self.visible = False


@pytest.fixture
def confab(qapp, qtbot, tmp_path, monkeypatch):
    from app.application import ConfabApp

    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    app = ConfabApp(qapp, tmp_path / "home", EngineConfig(backend="torch"), use_tray=False)
    qtbot.addWidget(app.window)
    app.tray = MenubarTray()
    yield app
    app.shutdown()


def test_the_shortcut_opens_the_quick_chat_beside_the_tray_icon(qtbot, confab):
    confab.shortcut.activated.emit()
    quick = confab.quick_chat
    qtbot.waitUntil(quick.isVisible, timeout=5_000)
    assert not quick.frameGeometry().intersects(confab.tray.icon_rect)
    assert quick.geometry().top() > confab.tray.icon_rect.bottom()  # under it, as from a click on it
