"""Helpers for the hardening tests: run a call that might hang on a watched thread."""

from __future__ import annotations

import threading
from typing import Any, Callable

ENGINE_THREAD_PREFIX = "confab-engine-"


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """fn()'s result (or its exception, re-raised); AssertionError if it is still running after `seconds`."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = fn()
        except BaseException as e:  # handed back to the test's thread
            box["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("result")


def engine_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(ENGINE_THREAD_PREFIX)}


def drain(stream) -> tuple[list, BaseException | None]:
    """Every chunk of `stream`, and the error that ended it (None when it finished normally)."""
    chunks = []
    try:
        for chunk in stream:
            chunks.append(chunk)
    except Exception as e:
        return chunks, e
    return chunks, None
