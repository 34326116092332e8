"""Whether the loaded model reads images, why or why not, and what one image costs it in tokens.

    support = ImageSupport.of(engine)            # once a model is loaded (GUI thread: no engine work)
    tokens = support.count(png_bytes)            # on a reading thread: the model's own count, or None
    if not support.takes: refuse(TEXT_ONLY)      # before a message with an image is sent

The count asks the engine how many prompt tokens a user message with the image takes more than an
empty one (`Engine.chat_tokens`): the image as the model's preprocessor cuts it (its tiles and the
model's markers around them), with no compute. It preprocesses the image, so it runs on the tray's
reading threads, never on the GUI thread. No Qt here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from engine import image_part

TEXT_ONLY = "this model reads text only; load a vision model with its mmproj file"
"""Why an image is refused before it is sent, in words that say which models can see."""

ImageCounter = Callable[[bytes], int]


@dataclass(frozen=True)
class ImageSupport:
    """What the loaded model does with images."""

    takes: bool = False
    """Messages may hold images (`Engine.takes_images`)."""
    reason: str = ""
    """How it takes images, or why not, in the engine's words (`Engine.images_reason`)."""
    count: Optional[ImageCounter] = None
    """Tokens one image takes in this model's prompt; None where it cannot say (then "image")."""

    @classmethod
    def of(cls, engine: Any) -> "ImageSupport":
        """The support of a loaded engine (a remote one takes no images here)."""
        takes = bool(getattr(engine, "takes_images", False))
        reason = getattr(engine, "images_reason", "") or "images are sent only to a model loaded in Confab"
        return cls(takes, reason, image_counter(engine) if takes and hasattr(engine, "chat_tokens") else None)

    @property
    def refusal(self) -> str:
        """Why an image cannot be sent to this model (the engine's reason in brackets)."""
        return f"{TEXT_ONLY} ({self.reason})" if self.reason else TEXT_ONLY


def image_counter(engine: Any) -> ImageCounter:
    """Tokens an image takes in `engine`'s prompt: a user message holding it against an empty one."""
    empty: list[int] = []

    def count(data: bytes) -> int:
        if not empty:
            empty.append(len(engine.chat_tokens([{"role": "user", "content": ""}])))
        return len(engine.chat_tokens([{"role": "user", "content": [image_part(data)]}])) - empty[0]

    return count
