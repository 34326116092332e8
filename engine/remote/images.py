"""Images in a remote conversation: the engine's image parts as OpenAI `image_url` data URLs, and
whether the server's model reads images as far as its `/models` entry says.

    openai_content(message["content"])     # [{"type": "image_url", "image_url": {"url": "data:…"}}, …]
    reads_images({"id": "m", "takes_images": False})   # (False, "…reads text only…")

Why data URLs: every OpenAI-compatible server that reads images (vLLM, llama.cpp's server, Ollama,
LM Studio, Confab) takes them, and the bytes never leave through another channel.
"""

from __future__ import annotations

import base64
from typing import Any, Optional

from ..image_check import check
from ..images import is_image_part

MEDIA_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "bmp": "image/bmp"}


def openai_content(content: Any) -> Any:
    """`content` with each image part (`engine.image_part`) as an `image_url` part; text as it is.
    An image that is not one the engines read raises the same typed error a local engine raises."""
    if not isinstance(content, list):
        return content
    return [_image_url(part) if is_image_part(part) else part for part in content]


def _image_url(part: dict) -> dict:
    data = bytes(part["image"])
    found = check(data, part.get("name") or "the image")
    url = f"data:{MEDIA_TYPES[found]};base64,{base64.b64encode(data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": url}}


def reads_images(entry: Optional[dict], host: str) -> tuple[bool, str]:
    """(whether to offer images, why in one line) from the model's `/models` entry: Confab's server
    says `takes_images`; other servers say nothing, and then the server decides (it answers a text
    model's image with an error the user reads)."""
    said = entry.get("takes_images") if isinstance(entry, dict) else None
    if said is True:
        return True, f"images: the server at {host} says its model reads them"
    if said is False:
        why = entry.get("images") if isinstance(entry.get("images"), str) else ""
        return False, f"the server at {host} says its model reads text only" + (f" ({why})" if why else "")
    return True, f"images are sent to the server at {host}, which decides whether its model reads them"
