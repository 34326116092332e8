"""One file in the composer, as a chip: reading it (a bar and ×, which cancels), ready (a file icon,
"notes.md · 1,204 tokens ×"; an image's thumbnail, "photo.jpg · 4032×3024 → 2048×1536 · 1,105 tokens ×"),
too big (how many tokens it has, how many fit, "Attach the first part", and where the window has
libraries, "Add to library": indexed, each reply then reads the passages that answer it), or
refused (why, and × to dismiss). `AttachmentTray` holds the chips and decides which state each is in.

A count is the model's own (as the engine counts) or, marked "~", an estimate: a remote model's
tokens cannot be counted here, and a file far longer than the context is counted exactly only up
to a first part (the tooltip says which).
"""

from __future__ import annotations

from typing import Literal, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPalette, QPen, QPixmap
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QSizePolicy, QToolButton, QWidget

from app.chat.attachment_count import TokenCount
from app.fitting import ElidedLabel
from app.resources import ui_pixmap

ChipState = Literal["reading", "ready", "too_big", "refused"]
WARN_COLOR = "#b36b00"
"""Text and border of a chip that needs the user (too big, refused); readable on light and dark."""
MAX_NAME = 28
"""Characters of a file name shown on a chip (the whole name is in its tooltip)."""


def short_name(name: str, limit: int = MAX_NAME) -> str:
    """`name` shortened in the middle, keeping its extension in view: "a-very-lon…report.pdf"."""
    if len(name) <= limit:
        return name
    keep = limit - 1
    return name[:keep - keep // 2] + "…" + name[-(keep // 2):]


def icon_for(media_type: str) -> str:
    """The name of the icon (resources/ui/<name>.svg) shown on a file of `media_type`'s chip."""
    return "file-pdf" if media_type == "application/pdf" else "file-text"


ICON_PX = 16
THUMB_PX = 28
"""Height of an image's thumbnail on its chip."""


class AttachmentChip(QFrame):
    """A chip for one file. Its buttons emit `remove_clicked` (× : remove, or cancel the read),
    `fit_clicked` (attach the part that fits) and `library_clicked` (add it to the library instead)."""

    remove_clicked = Signal()
    fit_clicked = Signal()
    library_clicked = Signal()

    def __init__(self, name: str, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.name = name
        self.state: ChipState = "reading"
        self.setAccessibleName(f"Attached file {name}")
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)  # narrower: the text elides
        self.icon = QLabel(accessibleName="File type")
        self.label = ElidedLabel()  # the whole text is in the chip's tooltip
        self.label.setAccessibleName("Attached file")
        self.bar = QProgressBar(accessibleName=f"Reading {name}", maximumWidth=90, maximumHeight=12,
                                textVisible=False, minimum=0, maximum=1000)
        self.fit_button = QToolButton(text="Attach the first part", autoRaise=True,
                                      accessibleName="Attach the part that fits")
        self.fit_button.setCursor(Qt.CursorShape.PointingHandCursor)
        underlined = self.fit_button.font()
        underlined.setUnderline(True)  # an action, not more of the message
        self.fit_button.setFont(underlined)
        self.fit_button.clicked.connect(self.fit_clicked)
        self.library_offered = False
        """A file too big offers "Add to library" (the main window's composer, not the quick chat's)."""
        self.library_button = QToolButton(text="Add to library", autoRaise=True, font=underlined,
                                          accessibleName="Add to the conversation's library")
        self.library_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.library_button.setToolTip("Index the whole file in this conversation's library: each reply then "
                                       "reads the passages of it that answer the question")
        self.library_button.clicked.connect(self.library_clicked)
        self.remove_button = QToolButton(text="×", autoRaise=True, accessibleName=f"Remove {name}")
        self.remove_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.remove_button.clicked.connect(self.remove_clicked)
        box = QHBoxLayout(self)
        box.setContentsMargins(8, 1, 2, 1)
        box.setSpacing(4)
        for w in (self.icon, self.label, self.bar, self.fit_button, self.library_button, self.remove_button):
            box.addWidget(w)
        self.show_reading(0.0)

    def show_reading(self, fraction: float) -> None:
        self._set("reading", short_name(self.name), f"Reading {self.name}…")
        self.bar.setRange(0, 1000)
        self.bar.setValue(round(fraction * 1000))
        self.remove_button.setToolTip("Stop reading this file")

    def show_fitting(self) -> None:
        """Searching for the first part that fits (the model counts its tokens): a busy bar."""
        self._set("reading", short_name(self.name),
                  f"Finding the first part of {self.name} that fits…")
        self.bar.setRange(0, 0)
        self.remove_button.setToolTip("Remove this file")

    def show_ready(self, media_type: str, counted: TokenCount, size: int, truncated: bool) -> None:
        part = " (first part)" if truncated else ""
        self._set("ready", f"{short_name(self.name)}{part} · {counted.text} tokens",
                  f"{self.name}{part}\n{media_type}, {file_size(size)}, {_tokens_words(counted)} sent to "
                  "the model", icon_for(media_type))
        self.remove_button.setToolTip("Remove this file")

    def show_image(self, thumb: QPixmap, counted: Optional[TokenCount], pixels: str, size: int) -> None:
        """An image ready to send: its thumbnail, its size in pixels (both sizes when it was scaled
        down), and its tokens as the model counts them ("image" where the model cannot say)."""
        tokens = f"{counted.text} tokens" if counted is not None else "image"
        scaled = " (scaled down as the model's preprocessor would)" if "→" in pixels else ""
        words = _tokens_words(counted) if counted is not None else "tokens not known to this model"
        self._set("ready", f"{short_name(self.name)} · {pixels} · {tokens}",
                  f"{self.name}\n{pixels} pixels{scaled}, {file_size(size)}, {words}")
        if not thumb.isNull():
            ratio = self.devicePixelRatioF()
            thumb = thumb.scaledToHeight(round(THUMB_PX * ratio), Qt.TransformationMode.SmoothTransformation)
            thumb.setDevicePixelRatio(ratio)
            self.icon.setPixmap(thumb)
        self.remove_button.setToolTip("Remove this image")

    def show_too_big(self, counted: TokenCount, room: int) -> None:
        fit = f"~{room:,}" if not counted.exact and not counted.counted_chars else f"{room:,}"  # estimated room
        text = (f"{short_name(self.name)}: {counted.text} tokens, {fit} fit" if room > 0
                else f"{short_name(self.name)}: {counted.text} tokens, no room left")
        more = " about" if not counted.exact and not counted.counted_chars else ""
        self._set("too_big", text, f"{self.name} is {_tokens_words(counted)}, but only{more} {room:,} more fit "
                  "in the model's context with this conversation. Attach its first part"
                  + (", add it to the conversation's library" if self.library_offered else "") + ", or remove it.")
        self.fit_button.setVisible(room > 0)
        self.remove_button.setToolTip("Remove this file")

    def show_refused(self, reason: str) -> None:
        self._set("refused", reason, reason)
        self.remove_button.setToolTip("Dismiss")

    def _set(self, state: ChipState, text: str, tip: str, icon: str = "file-text") -> None:
        """Show `state`: `text` beside `icon` (a warning sign when the chip needs the user)."""
        warn = state in ("too_big", "refused")
        self.icon.setPixmap(ui_pixmap("warning" if warn else icon, ICON_PX))
        if state != "reading":
            self.bar.setRange(0, 1000)  # out of the busy look of `show_fitting`
        self.state = state
        self.label.setText(text)
        self.setToolTip(tip)
        self.bar.setVisible(state == "reading")
        self.fit_button.setVisible(state == "too_big")
        self.library_button.setVisible(state == "too_big" and self.library_offered)
        self.label.setStyleSheet(f"color: {WARN_COLOR};" if warn else "")
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt name)
        """A rounded chip in the palette's colors, drawn here rather than by a style sheet so that it
        follows a theme change (a style sheet's `palette(...)` is resolved once, when applied)."""
        pal = self.palette()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        warn = self.state in ("too_big", "refused")
        painter.setPen(QPen(QColor(WARN_COLOR) if warn else pal.color(QPalette.ColorRole.Mid), 1))
        painter.setBrush(pal.color(QPalette.ColorRole.AlternateBase))
        radius = min(10, self.height() / 2 - 1)
        painter.drawRoundedRect(self.rect().adjusted(1, 1, -1, -1), radius, radius)
        painter.end()


def _tokens_words(counted: TokenCount) -> str:
    """"1,204 tokens" (the model's count), "about 1,204 tokens" (estimated), or which part was
    counted and which estimated."""
    if counted.exact:
        return f"{counted.tokens:,} tokens"
    if counted.counted_chars:
        return (f"about {counted.tokens:,} tokens (its first {counted.counted_chars:,} characters counted "
                "by the model, the rest estimated)")
    return f"about {counted.tokens:,} tokens (estimated: the model's tokenizer is not on this computer)"


def file_size(n: int) -> str:
    """"12.3 KB", "1.5 MB": a file size in words."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
