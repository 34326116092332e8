"""Files given to a window by dropping or pasting them: which local files a drag or the clipboard
carries (or which image, for a screenshot or an image copied in a browser), and an event filter
that takes drops on a whole window.

    drop = FileDrop(window)                   # the window now accepts dropped files
    drop.dropped.connect(tray.add_paths)
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtCore import QEvent, QMimeData, QObject, QUrl, Signal
from PySide6.QtGui import QDragMoveEvent, QDropEvent, QImage
from PySide6.QtWidgets import QWidget


def local_files(mime: Optional[QMimeData]) -> list[Path]:
    """The local files `mime` carries (file URLs from a file manager, or a pasted "file://…" text);
    [] when it carries anything else, so text still drops and pastes as text."""
    if mime is None:
        return []
    urls = mime.urls() if mime.hasUrls() else []
    if not urls and mime.hasText():
        lines = [line.strip() for line in mime.text().splitlines() if line.strip()]
        if lines and all(line.startswith("file://") for line in lines):
            urls = [QUrl(line) for line in lines]
    if not urls or not all(u.isLocalFile() for u in urls):
        return []
    return [Path(u.toLocalFile()) for u in urls]


def pasted_image(mime: Optional[QMimeData]) -> Optional[QImage]:
    """The image `mime` carries when it is an image alone (a screenshot, "Copy image" in a browser);
    None when it carries files or plain text too: a spreadsheet's cells come with a picture of
    themselves, and those paste as text."""
    if mime is None or not mime.hasImage() or mime.hasText() or local_files(mime):
        return None
    image = mime.imageData()
    return image if isinstance(image, QImage) and not image.isNull() else None


class FileDrop(QObject):
    """Makes `target` accept dropped local files anywhere on it, emitting `dropped(paths)`. A widget
    inside it that takes drops itself (a text box) still gets text drops; it hands files on here."""

    dropped = Signal(list)

    def __init__(self, target: QWidget) -> None:
        super().__init__(target)
        target.setAcceptDrops(True)
        target.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove) and isinstance(event, QDragMoveEvent):
            if local_files(event.mimeData()):
                event.acceptProposedAction()
                return True
        elif kind == QEvent.Type.Drop and isinstance(event, QDropEvent):
            paths = local_files(event.mimeData())
            if paths:
                event.acceptProposedAction()
                self.dropped.emit(paths)
                return True
        return super().eventFilter(watched, event)
