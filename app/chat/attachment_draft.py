"""One file in the attachment tray, from the moment it is added until it is sent or removed: its chip,
what reading and counting it found, and the cancel flag its reading thread checks. The tray
(attachment_tray.py) decides what each field holds; this is only the record, kept on the GUI thread.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from app.chat.attachment_chip import AttachmentChip
from app.chat.attachment_count import Counter, TokenCount
from app.chat.attachment_reader import FileRead
from app.chat.image_reader import ImageRead
from app.store import Attachment


@dataclass
class Draft:
    """One file in the tray (GUI thread), and the cancel flag its reading thread checks."""

    path: Path
    chip: AttachmentChip
    cancel: threading.Event = field(default_factory=threading.Event)
    count: Optional[Counter] = None
    """The model's token counter when the file was added (None: estimate)."""
    read: Optional[FileRead] = None
    counted: TokenCount = TokenCount(0, False)
    """Tokens of the whole file once read; of `attachment` once it is ready."""
    attachment: Optional[Attachment] = None
    """Set once it is ready to send (all of it, or the part that fits)."""
    refusal: str = ""
    """Why it could not be attached, in words (an empty file, a binary one, …); "" if it could."""
    shown_progress: float = -1.0
    image: Optional[ImageRead] = None
    """An image, once read (its attachment is then ready too)."""
