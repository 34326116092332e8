"""A chat prompt with images: messages whose content holds image parts, rendered by the chat template
with a marker in each image's place, then tokenized piece by piece: the text as `TextCodec.encode_chat`
does it (content as text, the template's markers as control tokens), each image as the model's own
pieces (engine/backends/llamacpp_vision.py).

The marker is made from the image's hash and private-use characters, so the rendered text (the key of
warm resume) is the same in every turn and every engine for the same image.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol

from . import image_check
from .errors import ImagesNotSupportedError, InvalidRequestError
from .images import ImageSpan, digest, is_image_part

_OPEN, _CLOSE = "\ue000image:", "\ue001"


class ImageReader(Protocol):
    """What reads images into prompt pieces (llama.cpp's `Vision`)."""

    def pieces(self, data: bytes, name: str) -> list: ...


class Images:
    """The images of one prompt, by marker."""

    def __init__(self) -> None:
        self.by_marker: dict[str, tuple[bytes, str]] = {}

    def __bool__(self) -> bool:
        return bool(self.by_marker)

    def add(self, data: Any, name: str) -> str:
        image_check.check(data, name)
        data = bytes(data)
        marker = f"{_OPEN}{digest(data).hex()[:24]}{_CLOSE}"
        self.by_marker.setdefault(marker, (data, name))
        return marker


def flatten(messages: Any) -> tuple[Any, Images]:
    """`messages` with each list content joined into one string (an image part becomes its marker),
    and the images found, each checked (engine/image_check.py: typed errors, nothing queued)."""
    images = Images()
    if not isinstance(messages, list) or not any(isinstance(m, dict) and isinstance(m.get("content"), list)
                                                 for m in messages):
        return messages, images
    out = []
    count = 0
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            out.append(message)
            continue
        text = []
        for part in content:
            if is_image_part(part):
                count += 1
                name = f"image {count}" + (f" (message {i + 1})" if len(messages) > 1 else "")
                text.append(images.add(part.get("image"), name))
            elif isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                text.append(part["text"])
            else:
                raise InvalidRequestError(f"message {i}: a content part must be {{'type': 'text', 'text': ...}} "
                                          f"or engine.image_part(bytes), not {part!r:.80}")
        out.append({**message, "content": "".join(text)})
    return out, images


def encode(codec, rendered, start: int, images: Images, reader: Optional[ImageReader],
           why_not: str) -> tuple[list[int], dict[int, ImageSpan]]:
    """Token ids of `rendered.text[start:]` with every image's pieces in its marker's place, and the
    spans of every image of the prompt (those before `start` too: a turn may have to feed them again)
    by their first id. ImagesNotSupportedError (saying `why_not`) where no reader takes images."""
    if not images:
        return codec.encode_chat(rendered, start), {}
    if reader is None:
        raise ImagesNotSupportedError(f"this model cannot see images: {why_not}")
    pieces = {marker: reader.pieces(data, name) for marker, (data, name) in images.by_marker.items()}
    spans = {p.first: p for ps in pieces.values() for p in ps if isinstance(p, ImageSpan)}
    text = rendered.text
    ids: list[int] = []
    at = start
    while (found := _next_marker(text, at, pieces)) is not None:
        a, marker = found
        ids += codec.encode_chat_range(rendered, at, a)
        for piece in pieces[marker]:
            ids += piece.ids if isinstance(piece, ImageSpan) else piece
        at = a + len(marker)
    ids += codec.encode_chat_range(rendered, at, len(text))
    return ids, spans


def _next_marker(text: str, at: int, pieces: dict) -> Optional[tuple[int, str]]:
    while (a := text.find(_OPEN, at)) >= 0:
        b = text.find(_CLOSE, a)
        if b < 0:
            return None
        marker = text[a:b + len(_CLOSE)]
        if marker in pieces:
            return a, marker
        at = a + 1  # the same characters typed in a message: text
    return None
