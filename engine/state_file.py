"""A session's state file: what its metadata records, how it is written, and what is checked before
any tensor is read (so a file from another model, backend or size is refused by name, not by an
IndexError halfway through loading). The tensors themselves are each backend's to save and load."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from .errors import StateFileError

FORMAT = "confab-session-state/1"
DEFAULT_KV_CACHE = "f16/f16"


def metadata(backend: str, model_fingerprint: str, template_fingerprint: str, tokens: Sequence[int],
             fed: int, chat_text: str, kv_cache: str = "") -> dict[str, str]:
    """The metadata a state file carries beside its tensors (strings only: safetensors' rule).
    `kv_cache`: the K/V cache's element types ("f16/q8_0" on llama.cpp; "" where the dtype says it)."""
    return ({"kv_cache": kv_cache} if kv_cache else {}) | {
        "format": FORMAT,
        "model_fingerprint": model_fingerprint,
        "template_fingerprint": template_fingerprint,
        "tokens": json.dumps(list(tokens)),
        "fed": str(fed),
        "chat_text": chat_text,
        "backend": backend,
    }


def write(backend: Any, state: Any, path: Path, meta: dict[str, str]) -> None:
    """Write atomically: to a temporary file, synced, then renamed over `path`."""
    tmp = path.with_name(path.name + ".tmp")
    backend.save_state(state, tmp, meta)
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def check(path: Path, backend: str, model: Any, max_context: int, kv_cache: str = "") -> tuple[list[int], int, str]:
    """(tokens, tokens fed, chat text) of a state file this engine can restore; StateFileError,
    naming what is wrong, for anything else. Reads only the metadata."""
    if not path.is_file():
        raise StateFileError(f"no saved state at {path}")
    meta = read_metadata(path)
    if meta.get("backend", backend) != backend:
        raise StateFileError(f"{path.name} was saved by the {meta['backend']} backend; this engine runs {backend}")
    if meta.get("format") != FORMAT:
        raise StateFileError(f"{path.name} is not a Confab session state")
    if meta.get("model_fingerprint") != model.fingerprint:
        raise StateFileError(
            f"{path.name} was saved from another model ({meta.get('model_fingerprint')}); "
            f"this engine runs {model.name} ({model.fingerprint})"
        )
    saved = meta.get("kv_cache", DEFAULT_KV_CACHE)  # files from before the choice: llama.cpp's default
    if kv_cache and saved != kv_cache:
        raise StateFileError(f"{path.name} holds a {saved} (keys/values) cache; this engine caches {kv_cache}")
    try:
        tokens = [int(t) for t in json.loads(meta["tokens"])]
        fed = int(meta["fed"])
    except (KeyError, TypeError, ValueError) as e:
        raise StateFileError(f"{path.name} does not say which tokens it holds: {e}") from e
    if not 0 <= fed <= len(tokens):
        raise StateFileError(f"{path.name} says {fed} of its {len(tokens)} tokens were fed")
    if len(tokens) > max_context:
        raise StateFileError(
            f"{path.name} holds {len(tokens)} tokens, more than this engine's max_context ({max_context})"
        )
    return tokens, fed, meta.get("chat_text", "")


def read_metadata(path: Path) -> dict[str, str]:
    """The engine's own metadata of the file at `path`."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="numpy") as f:
            return _our_metadata(f.metadata() or {})
    except Exception as e:
        raise StateFileError(f"{path.name} is not a readable session state: {e}") from e


def _our_metadata(raw: dict[str, str]) -> dict[str, str]:
    """The engine's own metadata keys: torch writes them as they are, mlx-lm nests them one level
    down when it flattens its [metadata, cache classes, ...] list ("0.format", "0.tokens", ...)."""
    if "format" in raw:
        return raw
    for key, value in raw.items():
        if key.endswith(".format") and value == FORMAT:
            prefix = key[: -len("format")]
            return {k[len(prefix):]: v for k, v in raw.items() if k.startswith(prefix)}
    return raw
