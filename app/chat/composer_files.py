"""Attaching files to the next message of a chat panel: the Attach button (a paperclip), the row of chips above the
composer, files pasted or dropped on it, and their tokens in the context meter.

    files = ComposerFiles(composer, meter, parent=panel)
    layout.addWidget(files.tray); buttons.addWidget(files.button)
    if (why := files.tray.needs_word()) is not None:
        files.refuse(why)                      # said under the chips, until the files change
    else:
        attachments = files.tray.take()        # when the message is sent
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QLabel, QPushButton, QWidget

from app.resources import ui_icon
from app.chat.attachment_chip import WARN_COLOR
from app.chat.attachment_tray import AttachmentTray
from app.chat.composer import Composer
from app.chat.context_meter import ContextMeter
from app.file_dialogs import open_files

FILE_FILTER = ("Text, code, documents and images (*.txt *.md *.markdown *.csv *.tsv *.json *.jsonl *.pdf *.log "
               "*.py *.js *.ts *.html *.css *.c *.h *.cpp *.rs *.go *.java *.sh *.yaml *.yml *.toml *.xml *.sql "
               "*.png *.jpg *.jpeg *.gif *.bmp *.webp *.tif *.tiff);;"
               "Images (*.png *.jpg *.jpeg *.gif *.bmp *.webp *.tif *.tiff);;All files (*)")
REPLY_ROOM = 512
"""Tokens kept free for the reply when deciding whether a file fits (at most a quarter of the context)."""


class ComposerFiles(QObject):
    """The files part of a composer; see the module docstring."""

    def __init__(self, composer: Composer, meter: ContextMeter, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.composer = composer
        self.meter = meter
        self.tray = AttachmentTray()
        self.tray.room = self.room
        self.tray.context = lambda: self.meter.limit or None
        self.tray.changed.connect(lambda: self.meter.set_files(self.tray.tokens(), self.tray.exact()))
        self.why = QLabel(wordWrap=True, accessibleName="Why the message was not sent")
        """Under the chips: why a message waits for the user (a file too big or unreadable)."""
        self.why.setStyleSheet(f"color: {WARN_COLOR};")
        self.why.hide()
        self.tray.changed.connect(self.why.hide)  # the user acted on the files: the reason is old
        self.button = QPushButton(ui_icon("paperclip"), "Attach…", accessibleName="Attach files",
                                  toolTip="Attach text, code, Markdown, CSV, JSON or PDF files, or images "
                                          "for a model that sees them (or drop or paste them here)")
        self.button.clicked.connect(self.pick)
        composer.files_given.connect(self.tray.add_paths)
        composer.image_given.connect(self.tray.add_image)
        composer.has_files = lambda: bool(self.tray.drafts)  # Enter with a file alone: sent, or told why not

    def refuse(self, reason: str) -> None:
        """Say under the chips why the message was not sent (until the files change)."""
        self.why.setText(reason + ".")  # starts with a file name: left as it is
        self.why.show()

    def room(self) -> Optional[int]:
        """Tokens attached files may take: the context left after the conversation, the draft and
        room for a reply; None when no model says how big its context is."""
        limit = self.meter.limit
        if limit <= 0:
            return None
        return max(0, limit - self.meter.used - self.meter.draft - min(REPLY_ROOM, limit // 4))

    def pick(self) -> None:
        """The Attach button: choose files to attach."""
        paths = open_files(self.button.window(), "Attach files", FILE_FILTER)
        if paths:
            self.tray.add_paths(paths)
