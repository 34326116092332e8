"""An attached image, large: opened from its chip on a sent message. Non-modal, so the chat stays
usable; the image fits the window (never past the screen) and a larger window shows it larger, up to
its own size."""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QImage, QPixmap, QResizeEvent
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QSizePolicy, QVBoxLayout, QWidget

from app.chat.attachment_chip import file_size
from app.chat.attachment_count import stored_count
from app.chat.image_reader import pixels
from app.store import Attachment

START = QSize(900, 700)
"""The window's first size at most (smaller for a smaller image or screen)."""


def image_words(attachment: Attachment) -> str:
    """"photo.jpg — 4032×3024 → 2048×1536 pixels (scaled down to send), 412.0 KB, 1,105 tokens"."""
    size = pixels(attachment)
    scaled = " (scaled down to send)" if attachment.scaled_from is not None else ""
    tokens = (f", {'' if stored_count(attachment).exact else 'about '}{attachment.tokens:,} tokens"
              if attachment.tokens is not None else "")
    return f"{attachment.name} — {size} pixels{scaled}, {file_size(len(attachment.data or b''))}{tokens}"


class ImageViewer(QDialog):
    """One attached image at the size of the window (up to its own)."""

    def __init__(self, attachment: Attachment, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(attachment.name)
        self.setAccessibleName(f"Attached image {attachment.name}")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.image = QImage.fromData(attachment.data or b"")
        about = QLabel(image_words(attachment), wordWrap=True, accessibleName="About the image")
        self.picture = QLabel(alignment=Qt.AlignmentFlag.AlignCenter, accessibleName="Image")
        self.picture.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)  # follows the window
        self.picture.setMinimumSize(64, 64)
        if self.image.isNull():
            self.picture.setText("This image could not be shown.")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        box = QVBoxLayout(self)
        box.addWidget(about)
        box.addWidget(self.picture, stretch=1)
        box.addWidget(buttons)
        screen = self.screen().availableSize() * 0.9 if self.screen() is not None else START
        want = self.image.size().grownBy(self.contentsMargins()) + QSize(24, 96) if not self.image.isNull() else START
        self.resize(want.boundedTo(START).boundedTo(screen).expandedTo(QSize(320, 240)))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        if self.image.isNull():
            return
        ratio = self.devicePixelRatioF()
        room = self.picture.size() * ratio
        shown = self.image if (self.image.width() <= room.width() and self.image.height() <= room.height()) \
            else self.image.scaled(room, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation)
        pixmap = QPixmap.fromImage(shown)
        pixmap.setDevicePixelRatio(ratio)
        self.picture.setPixmap(pixmap)
