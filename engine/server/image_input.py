"""Images in requests, for every API: a data URL or base64 data turned into the bytes the engine
reads (`engine.image_part`), or a 400 that says what to send instead.

Web URLs are refused: the server would fetch whatever address a request names, from the user's
computer and network, on behalf of any client that can reach it. Clients send `data:` URLs (the
openai SDK's documented way for local files) or Anthropic's base64 blocks. What the bytes hold (a
corrupt, truncated, unsupported or too large image, or an image for a text-only model) the engine
checks and refuses in words (engine/image_check.py), before anything is queued.
"""

from __future__ import annotations

import base64
import binascii

from ..images import image_part
from .errors import bad_request

MAX_BASE64_CHARS = 28_000_000
"""About 20 MB of image once decoded (the engine's own limit); larger is refused before decoding."""


def from_data_url(url: str, where: str) -> dict:
    """An `image_url`'s URL as an engine image part; only `data:` URLs with base64 data."""
    if url.startswith(("http://", "https://")):
        raise bad_request(f"{where}: this server does not fetch images from the web; send the image itself as a "
                          "data URL (data:image/png;base64,…)", "image_url_not_supported")
    if not url.startswith("data:") or "," not in url:
        raise bad_request(f"{where}: an image URL must be a data URL (data:image/png;base64,…)", "invalid_image")
    header, data = url[5:].split(",", 1)
    if not header.endswith(";base64"):
        raise bad_request(f"{where}: the data URL must hold base64 data (data:image/png;base64,…)", "invalid_image")
    return from_base64(data, where)


def from_base64(data: str, where: str) -> dict:
    """Base64 image data as an engine image part."""
    if len(data) > MAX_BASE64_CHARS:
        raise bad_request(f"{where}: the image is over 20 MB ({len(data) * 3 // 4:,} bytes); send a smaller one",
                          "image_too_large")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise bad_request(f"{where}: the image data is not valid base64", "invalid_image") from None
    if not raw:
        raise bad_request(f"{where}: the image is empty", "invalid_image")
    return image_part(raw)


def text_length(content) -> int:
    """Characters of a message's text, whatever its shape (a string, or parts with images)."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return 0
