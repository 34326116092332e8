"""Every dialog opens whole, on its parent's screen: its title bar on the screen (a dialog taller
than the screen is made to fit, never pushed above its top), and wide enough for its title (a
window manager cuts a title that does not fit between its icon and its buttons: "Save … preset").

Qt centers a dialog over its parent before it is shown, but cannot know the height of a title bar
the window manager has not drawn yet, and keeps a dialog's size even where the screen is smaller
(a 640×480 display); this filter, installed once on the application, fixes both as each dialog
shows.

    qapp.installEventFilter(DialogFit(qapp))
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication, QDialog, QWidget

TITLE_BAR_PX = 32
"""Height kept above a dialog for a title bar not drawn yet (its real height, once known)."""
TITLE_BAR_EXTRA_PX = 160
"""Width a title bar takes besides its text: the icon and the close, minimize and maximize buttons."""


def title_width(dialog: QWidget) -> int:
    """The width a dialog needs for its title to show whole in its title bar."""
    font = QApplication.font("QMdiSubWindowTitleBar")
    font.setBold(True)  # most window managers draw titles bold, some larger
    return round(QFontMetrics(font).horizontalAdvance(dialog.windowTitle()) * 1.15) + TITLE_BAR_EXTRA_PX


def screen_room(dialog: QWidget) -> QRect:
    """Where the dialog's window (frame included) may be: its parent's screen's available area."""
    parent = dialog.parentWidget()
    screen = parent.window().screen() if parent is not None else dialog.screen()
    return screen.availableGeometry()


def fit(dialog: QWidget) -> None:
    """Widen `dialog` for its title and keep it, title bar included, inside its parent's screen."""
    area = screen_room(dialog)
    inner, outer = dialog.geometry(), dialog.frameGeometry()
    top = inner.top() - outer.top() or TITLE_BAR_PX  # the title bar's height, once it is known
    side = max(0, inner.left() - outer.left())
    room = area.adjusted(side, top, -side, -side)
    width = min(max(dialog.width(), title_width(dialog), dialog.minimumWidth()), room.width())
    height = min(dialog.height(), room.height())
    if (width, height) != (dialog.width(), dialog.height()):
        dialog.resize(width, height)
    x = min(max(inner.left(), room.left()), room.left() + room.width() - width)
    y = min(max(inner.top(), room.top()), room.top() + room.height() - height)
    if (x, y) != (inner.left(), inner.top()):
        dialog.move(x - side, y - top)  # a window's position is its frame's


class DialogFit(QObject):
    """Fits each dialog as it shows (see the module docstring)."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        if event.type() == QEvent.Type.Show and isinstance(watched, QDialog) and watched.isWindow():
            fit(watched)
        return super().eventFilter(watched, event)
