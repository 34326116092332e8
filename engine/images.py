"""Images in a session's content: how a message carries one, and how an image span sits in the token
list every other part of the engine compares.

A message's `content` may be a list of parts, as OpenAI's API has them:

    {"role": "user", "content": [image_part(png_bytes), {"type": "text", "text": "What is this?"}]}

An image becomes a span of the prompt: the model's own text around it (e.g. SmolVLM's
`<fake_token_around_image>`), then one *image id* per embedding position. Image ids are negative, so
they never collide with a vocabulary id, and are made from a hash of the image's bytes and the
position in its span: the same image gives the same ids, another image other ids from its first
position on. So everything that reuses a prefix by comparing token lists (warm resume, the server's
pool, parked and saved sessions, lookup drafts) keys images by content, never by a placeholder id.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Sequence

OFFSET_BITS = 20
"""Positions one image may take (about a million; real models take 64 to a few thousand)."""
DIGEST_BITS = 42
"""Bits of the image's SHA-256 in each id: two different images share ids with odds of 2^-42."""


def image_part(data: bytes) -> dict:
    """A message content part holding an image's bytes (PNG, JPEG, GIF or BMP)."""
    return {"type": "image", "image": data}


def is_image_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "image"


def digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def image_ids(image_digest: bytes, n: int) -> tuple[int, ...]:
    """The `n` ids of an image's embedding positions."""
    if n >= 1 << OFFSET_BITS:
        raise ValueError(f"an image of {n} positions")
    key = int.from_bytes(image_digest[:8], "big") >> (64 - DIGEST_BITS)
    base = key << OFFSET_BITS
    return tuple(-(base | i) - 1 for i in range(n))


def is_image_id(token: int) -> bool:
    return token < 0


def starts_span(token: int) -> bool:
    """Whether `token` is the first id of an image's span."""
    return token < 0 and (-token - 1) & ((1 << OFFSET_BITS) - 1) == 0


def span_floor(tokens: Sequence[int], k: int) -> int:
    """`k`, or where the image span that position `k` falls inside begins: an image is one unit, never
    kept or trimmed in part."""
    while 0 < k < len(tokens) and is_image_id(tokens[k]) and not starts_span(tokens[k]):
        k -= 1
    return k


def text_ids(tokens: Sequence[int]) -> list[int]:
    """`tokens` without image ids (what a repetition penalty or a draft may look at)."""
    return [t for t in tokens if t >= 0]


@dataclass
class ImageSpan:
    """One image in a prompt: its ids and what the backend evaluates for them."""

    digest: bytes
    ids: tuple[int, ...]
    chunk: Any
    """The backend's handle (llama.cpp: an mtmd image chunk, preprocessed pixels), freed with this span."""
    width: int = 0
    height: int = 0

    @property
    def first(self) -> int:
        return self.ids[0]
