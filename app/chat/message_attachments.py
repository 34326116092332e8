"""A sent message's files: chips under its header (as many per line as fit, then the next line),
each opening a window with the file's text in full (what the model was sent); an image's chip shows
its thumbnail and opens the image large."""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFontDatabase, QIcon, QPixmap
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QSizePolicy, QToolButton,
                               QVBoxLayout, QWidget)

from app.chat.attachment_chip import file_size, icon_for, short_name
from app.chat.image_reader import pixels, shown_thumbnail
from app.chat.image_viewer import ImageViewer
from app.fitting import FlowLayout
from app.resources import ui_icon
from app.chat.attachment_count import stored_count
from app.store import Attachment


class ChipButton(QToolButton):
    """A file's chip: its icon and text, elided with "…" when the line is narrower than the chip
    (`text()` stays the whole text)."""

    def __init__(self, text: str, icon: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.setIcon(ui_icon(icon))
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._full = text
        super().setText(text)

    def text(self) -> str:
        return self._full

    def shown_text(self) -> str:
        return super().text()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        """The size of the chip with its whole text, whatever is shown now."""
        hint = super().sizeHint()
        metrics = self.fontMetrics()
        return QSize(hint.width() - metrics.horizontalAdvance(super().text()) + metrics.horizontalAdvance(self._full)
                     + 2, hint.height())  # 2: whole pixels round a text's width down

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        hint = self.sizeHint()
        return QSize(min(hint.width(), self.iconSize().width() + 48), hint.height())

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        metrics = self.fontMetrics()
        room = self.width() - (self.sizeHint().width() - 2 - metrics.horizontalAdvance(self._full)) + 1
        shown = metrics.elidedText(self._full, Qt.TextElideMode.ElideRight, max(room, 0))
        if shown != super().text():
            super().setText(shown)


class MessageFiles(QWidget):
    """The chips of one message's attachments (hidden when it has none)."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Attached files")
        self.attachments: tuple[Attachment, ...] = ()
        self.chips: list[QToolButton] = []
        self.viewer: Optional[QDialog] = None
        self._box = FlowLayout(self, spacing=6)
        self._box.setContentsMargins(0, 2, 0, 2)
        self.hide()

    def show_files(self, attachments: tuple[Attachment, ...]) -> None:
        if attachments == self.attachments:
            return
        self.attachments = attachments
        for chip in self.chips:
            self._box.removeWidget(chip)
            chip.deleteLater()
        self.chips = []
        for a in attachments:
            chip = _image_chip(a) if a.is_image else _file_chip(a)
            chip.setCursor(Qt.CursorShape.PointingHandCursor)
            chip.clicked.connect(lambda _=False, a=a: self.open(a))
            self._box.addWidget(chip)
            self.chips.append(chip)
        self.setVisible(bool(attachments))

    def open(self, attachment: Attachment) -> QDialog:
        """A window with the file's whole text, or the image large (non-modal: the chat stays usable)."""
        if self.viewer is not None:
            self.viewer.close()
        viewer = ImageViewer if attachment.is_image else AttachmentViewer
        self.viewer = viewer(attachment, self.window())
        self.viewer.show()
        return self.viewer


THUMB_PX = 40
"""Height of an image's thumbnail on a sent message's chip."""


def _file_chip(a: Attachment) -> ChipButton:
    part = " (first part)" if a.truncated else ""
    return ChipButton(f"{short_name(a.name)}{part} · {stored_count(a).text} tokens",
                      icon_for(a.media_type), accessibleName=f"Open attached file {a.name}",
                      objectName="attachmentChip",
                      toolTip=f"{a.name}: {a.media_type}, {file_size(a.size)}. Click to read the text sent.")


def _image_chip(a: Attachment) -> ChipButton:
    """The image's thumbnail, its name, size in pixels and tokens ("image" when they were not counted)."""
    tokens = f"{stored_count(a).text} tokens" if a.tokens is not None else "image"
    chip = ChipButton(" · ".join(part for part in (short_name(a.name), pixels(a), tokens) if part), "file-text",
                      accessibleName=f"View attached image {a.name}", objectName="attachmentChip",
                      toolTip=f"{a.name}: {pixels(a)} pixels, {file_size(len(a.data or b''))}. Click to view it large.")
    small = shown_thumbnail(a, THUMB_PX * 2)  # stored with it; twice the height: sharp on a high-density screen
    if not small.isNull():
        chip.setIcon(QIcon(QPixmap.fromImage(small)))
        chip.setIconSize(QSize(min(THUMB_PX * 2, round(THUMB_PX * small.width() / small.height())), THUMB_PX))
    return chip


class AttachmentViewer(QDialog):
    """The text of one attached file, read-only and selectable."""

    def __init__(self, attachment: Attachment, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(attachment.name)
        self.setAccessibleName(f"Attached file {attachment.name}")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        note = (" Only its first part was attached (the whole file did not fit in the model's context)."
                if attachment.truncated else "")
        about = QLabel(f"<b>{attachment.name}</b> — {attachment.media_type}, {file_size(attachment.size)}, "
                       f"{_tokens(attachment)}.{note}", wordWrap=True)
        self.text = QPlainTextEdit(attachment.text, readOnly=True, accessibleName="File text")
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        box = QVBoxLayout(self)
        box.addWidget(about)
        box.addWidget(self.text, stretch=1)
        box.addWidget(buttons)
        self.resize(720, 560)


def _tokens(attachment: Attachment) -> str:
    """"1,204 tokens" (the model's count when it was sent) or "about 1,204 tokens"."""
    counted = stored_count(attachment)
    return f"{'' if counted.exact else 'about '}{counted.tokens:,} tokens"
