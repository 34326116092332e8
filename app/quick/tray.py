"""The tray / menubar icon: Quick chat, Open Confab, Quit.

    tray = Tray()                                   # harmless where the platform has no tray
    tray.quick_chat_requested.connect(quick_chat.show_near)
    tray.open_requested.connect(window.bring_forward)
    tray.quit_requested.connect(app.quit)
    if not tray.visible: ...                        # settings say the tray is unavailable

A left click opens the quick chat. On macOS a click on a menubar item with a menu always shows the
menu (the platform's rule), so there "Quick chat" is its first entry instead.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from PySide6.QtCore import QObject, QRect, Signal
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from app.resources import app_icon


class Tray(QObject):
    """The app's tray icon and its menu. The menu exists even without a tray (and is what the
    icon shows when there is one), so its actions work and can be tested anywhere."""

    quick_chat_requested = Signal(QRect)
    """The icon's screen geometry (empty when unknown), to place the quick chat next to it."""
    open_requested = Signal()
    quit_requested = Signal()

    def __init__(self, parent: QObject | None = None, icon: QIcon | None = None) -> None:
        super().__init__(parent)
        self.menu = QMenu()
        self.menu.setAccessibleName("Confab menu")
        self.quick_chat_action = self._add_action("Quick chat", "Ask a quick question in a small window",
                                                  lambda: self.quick_chat_requested.emit(self.geometry()))
        self.open_action = self._add_action("Open Confab", "Show the Confab window",
                                            lambda: self.open_requested.emit())
        self.menu.addSeparator()
        self.quit_action = self._add_action("Quit", "Stop any replies and quit Confab",
                                            lambda: self.quit_requested.emit())
        self.icon: QSystemTrayIcon | None = None
        if self.available():
            self.icon = QSystemTrayIcon(icon if icon is not None else app_icon(), self)
            self.icon.setToolTip("Confab")
            self.icon.setContextMenu(self.menu)
            self.icon.activated.connect(self._on_activated)
            self.icon.show()

    @staticmethod
    def available() -> bool:
        """Whether this desktop shows tray icons (false on some Linux desktops and offscreen)."""
        return QSystemTrayIcon.isSystemTrayAvailable()

    @property
    def visible(self) -> bool:
        """True while the icon is on screen."""
        return self.icon is not None and self.icon.isVisible()

    def geometry(self) -> QRect:
        """The icon's place on screen; an empty QRect when there is no icon or the platform won't say."""
        return self.icon.geometry() if self.icon is not None else QRect()

    def hide(self) -> None:
        """Take the icon off screen (at quit, so no dead icon lingers on Windows)."""
        if self.icon is not None:
            self.icon.hide()

    def _add_action(self, text: str, tip: str, slot: Callable[[], None]) -> QAction:
        action = QAction(text, self.menu)
        action.setToolTip(tip)
        action.setStatusTip(tip)
        action.triggered.connect(slot)
        self.menu.addAction(action)
        return action

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger and sys.platform != "darwin":
            self.quick_chat_requested.emit(self.geometry())
