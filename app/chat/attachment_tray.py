"""The files waiting to be sent with the next message: a row of chips above the composer.

    tray = AttachmentTray()
    tray.room = lambda: tokens_left_in_context      # None: unknown (no model), every file fits
    tray.context = lambda: model_context_tokens     # None: unknown
    tray.count_tokens = engine.count_tokens         # None (a remote engine): estimates, shown "~"
    tray.add_paths([Path("notes.md")])              # read in the background, with progress
    if (why := tray.needs_word()) is None:          # a file too big, or unreadable, is never
        attachments = tray.take()                   # dropped unsaid: the message waits, it says why

Files are read on the tray's own two reading threads (`attachment_reader.read_file`), never on the
GUI thread, so a 200 MB file leaves the window answering, and fifty files dropped at once do not
start fifty threads; progress and results come back through a `GuiRoute`.
A read can be cancelled from its chip. A file whose text would not fit in what is left of the
model's context is not attached as it is: its chip says so and offers to attach the part that fits.
Tokens are counted by the engine on the reading threads too (`attachment_count`), as is the search
for the part that fits; a model that cannot count (remote) gets the estimate.

Images (a file, or one pasted: `add_image`) are read, scaled and counted on the same threads
(`image_reader`, `image_support`); their chips show a thumbnail. An image for a model that reads
text only is refused when the message is sent (`needs_word`), never dropped.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget

from app.chat.attachment_chip import AttachmentChip
from app.chat.attachment_count import Counter, TokenCount, count_read, count_text, estimated, fit_part
from app.chat.attachment_draft import Draft
from app.chat.attachment_reader import FileRead, ReadCancelled, UnreadableFileError, read_file
from app.chat.image_reader import (THUMB_EDGE, ImageRead, image_from_qimage, is_image_file, pixels, read_image,
                                  thumbnail, thumbnail_bytes)
from app.chat.image_support import TEXT_ONLY, ImageSupport
from app.bridge import GuiRoute
from app.fitting import FlowLayout
from app.store import Attachment
from engine import ImageError

READERS = 2
"""Files read at once (more only compete for the same disk and CPU)."""
MAX_LINES = 3
"""Lines of chips shown before the row scrolls."""
PROGRESS_STEP = 0.01
"""Smallest change of a read's progress worth a repaint (at most 100 posts per file)."""


class AttachmentTray(QScrollArea):
    """The chips of the files to send, on as many lines as they need (up to `MAX_LINES`); hidden
    while there are none. `changed` fires whenever the files to send, or their token count,
    change (the context meter follows it)."""

    changed = Signal()
    library_requested = Signal(object)
    """(path) "Add to library" on a file too big: the chip goes; the library indexes the file."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Attached files")
        self.room: Callable[[], Optional[int]] = lambda: None
        """Tokens the attached files may take in all (None: unknown, so any file fits)."""
        self.context: Callable[[], Optional[int]] = lambda: None
        """The model's context in tokens (None: unknown): files are counted exactly up to it."""
        self.count_tokens: Optional[Counter] = None
        """The engine's exact token count (`Engine.count_tokens`); None: estimate (remote engine)."""
        self.keep_bytes = False
        """Keep a copy of each file's bytes with the message (the "keep copies" setting)."""
        self.images = ImageSupport()
        """What the loaded model does with images (`set_images`)."""
        self.library_offered = False
        """A file too big offers "Add to library" (set where a library takes it: app/library)."""
        self.route = GuiRoute(self)
        self.drafts: list[Draft] = []
        self._readers = ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="confab-read")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidgetResizable(True)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)  # past `MAX_LINES`
        row = QWidget()
        self.setWidget(row)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._box = FlowLayout(row, spacing=6)  # chips wrap onto more lines; never past the edge
        self._box.setContentsMargins(0, 0, 0, 2)
        drafts, readers = self.drafts, self._readers  # the tray going away (window closed) stops every read
        self.destroyed.connect(lambda *_: ([d.cancel.set() for d in drafts],
                                           readers.shutdown(wait=False, cancel_futures=True)))
        self.hide()

    def set_counter(self, count: Optional[Counter]) -> None:
        """A model was loaded: count with its tokenizer from now on (None: estimate), and count the
        files already ready again, since another model's tokens differ."""
        self.count_tokens = count
        for draft in self.drafts:
            draft.count = count
            if draft.attachment is None or draft.image is not None:
                continue
            if count is None:
                self._make_ready(draft, draft.attachment, estimated(len(draft.attachment.text)))
            else:
                self._readers.submit(self._recount, draft, draft.attachment)

    def set_images(self, support: ImageSupport) -> None:
        """A model was loaded: images are counted (and refused) as it reads them from now on; the
        images already here are counted again."""
        self.images = support
        for draft in self.drafts:
            if draft.image is not None:
                read = draft.image
                self._readers.submit(self._read_image, draft, lambda r=read: r, support.count)

    # -- adding ------------------------------------------------------------------------------------
    def _new_draft(self, path: Path) -> Draft:
        draft = Draft(path, AttachmentChip(path.name), count=self.count_tokens)
        draft.chip.remove_clicked.connect(lambda d=draft: self.remove(d))
        draft.chip.fit_clicked.connect(lambda d=draft: self._attach_part(d))
        draft.chip.library_offered = self.library_offered
        draft.chip.library_clicked.connect(lambda d=draft: (self.library_requested.emit(d.path), self.remove(d)))
        self.drafts.append(draft)
        self._box.addWidget(draft.chip)
        return draft

    def add_paths(self, paths: list[Path]) -> None:
        """Read each file in the background; its chip shows the progress, then the result."""
        for path in paths:
            draft = self._new_draft(Path(path))
            self._readers.submit(self._read, draft, self.keep_bytes, self.context(), self.images.count)
        self._update()

    def add_image(self, image: QImage, name: str = "") -> None:
        """A pasted image: made ready to send (encoded, scaled, counted) in the background."""
        taken = {d.path.name for d in self.drafts}
        name = name or next(n for i in range(1, len(taken) + 2)
                            if (n := "Pasted image.png" if i == 1 else f"Pasted image {i}.png") not in taken)
        draft = self._new_draft(Path(name))
        copy = image.copy()  # its own pixels: the clipboard's may change while this one is read
        self._readers.submit(self._read_image, draft, lambda: image_from_qimage(copy, name), self.images.count)
        self._update()

    def restore(self, attachments: tuple[Attachment, ...]) -> None:
        """Put back files that were taken for a message that was not sent."""
        for a in attachments:
            if a.is_image and a.data:
                read = ImageRead(a.name, a.media_type, a.data, a.size, a.width or 0, a.height or 0, a.scaled_from,
                                 a.thumbnail)
                self._readers.submit(self._read_image, self._new_draft(Path(a.name)), lambda r=read: r,
                                     self.images.count)
                continue
            counted = TokenCount(a.tokens, a.tokens_exact) if a.tokens is not None else estimated(len(a.text))
            draft = Draft(Path(a.name), AttachmentChip(a.name), count=self.count_tokens, attachment=a,
                          counted=counted)
            draft.chip.remove_clicked.connect(lambda d=draft: self.remove(d))
            draft.chip.show_ready(a.media_type, draft.counted, a.size, a.truncated)
            self.drafts.append(draft)
            self._box.addWidget(draft.chip)
            if draft.count is not None and not counted.exact:  # the estimate until the model counts it
                self._readers.submit(self._recount, draft, a)
        self._update()

    # -- reading and counting (the reading threads) -------------------------------------------------
    def _post(self, draft: Draft, fn: Callable, *args: object) -> None:
        try:
            self.route.post(fn, *args)
        except RuntimeError:  # the tray (and its route) were deleted: nobody is waiting
            draft.cancel.set()

    def _read(self, draft: Draft, keep_bytes: bool, context: Optional[int], count_image) -> None:
        if draft.cancel.is_set():  # removed while it waited for a reader
            return
        if is_image_file(draft.path):
            self._read_image(draft, lambda: read_image(draft.path), count_image)
            return
        try:
            read = read_file(draft.path, keep_bytes=keep_bytes, cancelled=draft.cancel.is_set,
                             progress=lambda f: self._post(draft, self._progress, draft, f))
        except ReadCancelled:
            return
        except UnreadableFileError as e:
            self._post(draft, self._refused, draft, str(e))
        except Exception as e:  # a library's own error on a malformed file: still a reason to show
            self._post(draft, self._refused, draft,
                       f"{draft.path.name} could not be read ({type(e).__name__}: {e}).")
        else:
            try:
                counted = count_read(read, draft.count, context)
            except Exception:  # the engine could not count (it failed): the file is still good
                counted = estimated(read.chars)
            self._post(draft, self._read_done, draft, read, counted)

    def _read_image(self, draft: Draft, read: Callable[[], ImageRead], count_image) -> None:
        """Read (or take) the image, make its thumbnail and ask the model what it costs."""
        if draft.cancel.is_set():
            return
        try:
            image = read()
            small = thumbnail(image.data, THUMB_EDGE)  # stored with it, for the history too
            image = dataclasses.replace(image, thumbnail=thumbnail_bytes(small))
        except UnreadableFileError as e:
            return self._post(draft, self._refused, draft, str(e))
        except Exception as e:  # Qt's own failure on a malformed file: still a reason to show
            return self._post(draft, self._refused, draft, f"{draft.path.name} could not be read ({e}).")
        try:
            counted = TokenCount(count_image(image.data), True) if count_image is not None else None
        except ImageError as e:  # the model's own refusal (more positions than its step holds, …)
            return self._post(draft, self._refused, draft, f"{draft.path.name} cannot be sent to this model: {e}.")
        except Exception:  # the engine could not count (it closed): the image is still good
            counted = None
        self._post(draft, self._image_done, draft, image, small, counted)

    def _fit(self, draft: Draft, read: FileRead, room: int) -> None:
        if draft.cancel.is_set():
            return
        try:
            attachment, counted = fit_part(read, room, draft.count)
        except Exception:  # the engine could not count (it failed): cut at the estimate instead
            attachment, counted = fit_part(read, room, None)
        self._post(draft, self._fit_done, draft, attachment, counted)

    def _recount(self, draft: Draft, attachment: Attachment) -> None:
        if draft.cancel.is_set() or draft.count is None:
            return
        try:
            counted = count_text(attachment.text, draft.count)
        except Exception:  # keep the estimate already shown
            return
        self._post(draft, self._make_ready, draft, attachment, counted)

    # -- results (GUI thread) ----------------------------------------------------------------------
    def _progress(self, draft: Draft, fraction: float) -> None:
        if draft.read is None and draft in self.drafts and fraction - draft.shown_progress >= PROGRESS_STEP:
            draft.shown_progress = fraction
            draft.chip.show_reading(fraction)

    def _refused(self, draft: Draft, reason: str) -> None:
        if draft in self.drafts:
            draft.refusal = reason
            draft.chip.show_refused(reason)
            self._update()

    def _read_done(self, draft: Draft, read: FileRead, counted: TokenCount) -> None:
        if draft not in self.drafts:
            return
        draft.read, draft.counted = read, counted
        room = self.room_for(draft)
        if room is None or counted.tokens <= room:
            attachment = read.attachment()
            self._make_ready(draft, attachment, counted if not attachment.truncated
                             else estimated(len(attachment.text)))
        else:
            draft.chip.show_too_big(counted, room)
            self._update()

    def _attach_part(self, draft: Draft) -> None:
        """"Attach the first part": found on a reading thread when the model counts (exact counts
        of a few prefixes), at once from the estimate otherwise."""
        room = self.room_for(draft)
        if draft.read is None or room is None or room <= 0:
            return
        if draft.count is None:
            self._fit_done(draft, *fit_part(draft.read, room, None))
        else:
            draft.chip.show_fitting()
            self._readers.submit(self._fit, draft, draft.read, room)

    def _image_done(self, draft: Draft, image: ImageRead, small: QImage, counted: Optional[TokenCount]) -> None:
        if draft not in self.drafts:
            return
        attachment = image.attachment(counted.tokens if counted else None, counted is not None)
        draft.image, draft.attachment, draft.counted = image, attachment, counted or TokenCount(0, False)
        room = self.room_for(draft)
        if counted is not None and room is not None and counted.tokens > room:
            draft.attachment = None
            self._refused(draft, f"{draft.path.name} takes {counted.tokens:,} tokens, but only {room:,} more fit in "
                                 "the model's context with this conversation.")
            return
        draft.chip.show_image(QPixmap.fromImage(small), counted, pixels(attachment), attachment.size)
        self._update()

    def _fit_done(self, draft: Draft, attachment: Attachment, counted: TokenCount) -> None:
        if draft not in self.drafts:
            return
        if attachment.text:
            self._make_ready(draft, attachment, counted)
        else:  # not even a first line fits
            draft.chip.show_too_big(draft.counted, 0)
            self._update()

    def _make_ready(self, draft: Draft, attachment: Attachment, counted: TokenCount) -> None:
        if draft not in self.drafts:
            return
        draft.attachment, draft.counted = attachment, counted
        draft.chip.show_ready(attachment.media_type, counted, attachment.size, attachment.truncated)
        self._update()

    def room_for(self, draft: Draft) -> Optional[int]:
        """Tokens `draft` may take: what is left of the context less the other ready files."""
        room = self.room()
        if room is None:
            return None
        others = sum(d.counted.tokens for d in self.drafts if d is not draft and d.attachment is not None)
        return max(0, room - others)

    # -- taking ------------------------------------------------------------------------------------
    def attachments(self) -> tuple[Attachment, ...]:
        """The files ready to send, in the order they were added, each with the token count its chip
        shows (stored with the message, so the sent message shows the same number)."""
        return tuple(d.attachment if d.image is not None else  # an image's count is set (None: not known)
                     dataclasses.replace(d.attachment, tokens=d.counted.tokens, tokens_exact=d.counted.exact)
                     for d in self.drafts if d.attachment is not None)

    def tokens(self) -> int:
        """Tokens of the files ready to send (the model's count, or estimated; see `exact`)."""
        return sum(d.counted.tokens for d in self.drafts if d.attachment is not None)

    def exact(self) -> bool:
        """Every ready file's tokens are the model's own count."""
        return all(d.counted.exact for d in self.drafts if d.attachment is not None)

    def reading(self) -> bool:
        """A file is still being read."""
        return any(d.chip.state == "reading" for d in self.drafts)

    def needs_word(self) -> Optional[str]:
        """Why the message must wait for the user (None when it may go): a file that does not fit
        or could not be read is never dropped without a word; the user attaches its first part (or
        adds it to the library), or removes it."""
        for d in self.drafts:
            if d.chip.state == "too_big":
                library = " or “Add to library”" if self.library_offered else ""
                return (f"{d.path.name} does not fit in the model's context: press “Attach the first part”{library} "
                        "on it, or remove it (×), then send again")
            if d.chip.state == "refused":
                why = d.refusal.rstrip(". ") or f"{d.path.name} could not be read"
                return f"{why}. Remove it (×) to send without it"
        image = next((d for d in self.drafts if d.image is not None), None)
        if image is not None and not self.images.takes:
            return f"{image.path.name} is an image, and {TEXT_ONLY}. Remove it (×) to send without it"
        return None

    def take(self) -> tuple[Attachment, ...]:
        """The files ready to send; every chip but those still reading goes (ask `needs_word` first:
        a file too big or unreadable goes with them, unsent)."""
        ready = self.attachments()
        for draft in [d for d in self.drafts if d.chip.state != "reading"]:
            self.remove(draft)
        return ready

    def remove(self, draft: Draft) -> None:
        """Remove a file (cancelling its read when it is still being read)."""
        draft.cancel.set()
        if draft in self.drafts:
            self.drafts.remove(draft)
            self._box.removeWidget(draft.chip)
            draft.chip.deleteLater()
            self._update()

    def clear(self) -> None:
        for draft in list(self.drafts):
            self.remove(draft)

    def _update(self) -> None:
        self.setVisible(bool(self.drafts))
        self._fit_height()
        self.changed.emit()

    def _fit_height(self) -> None:
        """As tall as its lines of chips, up to `MAX_LINES` (then it scrolls)."""
        chip = max((d.chip.sizeHint().height() for d in self.drafts), default=0)
        lines = self._box.heightForWidth(max(1, self.viewport().width()))
        self.setFixedHeight(min(lines, MAX_LINES * (chip + self._box.spacing())) + 4)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._fit_height()
