"""JSON bytes for every answer and stream event, with lone surrogates as U+FFFD.

Why: JSON may carry a lone UTF-16 surrogate ("\\ud800" is valid JSON and a valid Python str), UTF-8
cannot. Routes echo what clients sent (Responses' `instructions`, `metadata`, tools' descriptions),
and Starlette's JSONResponse encodes with `ensure_ascii=False`: such a string then raised
UnicodeEncodeError after the reply was generated, a 500, and a stored response could not be read
again. The prompt side already cleans (engine/reply/text.clean); this is the answer side.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import JSONResponse as _StarletteJSON

from ..reply.text import clean


def json_bytes(obj: Any, separators: tuple[str, str] = (",", ":"), allow_nan: bool = True) -> bytes:
    """`obj` as UTF-8 JSON; a lone surrogate anywhere in it becomes U+FFFD."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=allow_nan, separators=separators)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return clean(text).encode("utf-8")


class JSONResponse(_StarletteJSON):
    """Starlette's JSONResponse that cannot fail on text UTF-8 cannot hold (the server's default)."""

    def render(self, content: Any) -> bytes:
        return json_bytes(content, allow_nan=False)
