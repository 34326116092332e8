"""What every session handle shares, local (`engine.session`) or remote (`engine.remote.session`).

Lives in the caller's threads and below both kinds of session, so neither imports the other and the
engine thread's code (`worker`) needs neither for it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Failed:
    """Put on a stream's queue instead of a chunk when the request failed."""

    error: BaseException
