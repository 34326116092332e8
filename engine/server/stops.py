"""Stop strings checked on the streamed text, as OpenAI does: the stop string itself is never sent.

Text that might be the start of a stop string is held back until the next piece shows whether it
is; a plain `in` check per chunk would miss a stop string split across tokens.
"""

from __future__ import annotations


class StopMatcher:
    """Feed streamed text; get back what is safe to send, and whether a stop string was reached."""

    def __init__(self, stops: list[str]) -> None:
        self._stops = [s for s in stops if s]
        self._held = ""
        self.stopped = False
        self.matched: str | None = None
        """The stop string that ended the text (Anthropic's `stop_sequence` names it)."""

    def feed(self, text: str) -> str:
        """Text that may be sent now; after a stop string, the text before it and `stopped` set."""
        if self.stopped:
            return ""
        if not self._stops:
            return text
        buffer = self._held + text
        cut = min((i for i in (buffer.find(s) for s in self._stops) if i >= 0), default=-1)
        if cut >= 0:
            self.stopped = True
            self.matched = next(s for s in self._stops if buffer.find(s) == cut)
            self._held = ""
            return buffer[:cut]
        keep = self._partial_suffix(buffer)
        self._held = buffer[len(buffer) - keep:] if keep else ""
        return buffer[: len(buffer) - keep]

    def flush(self) -> str:
        """At the end of the reply, held-back text was no stop string after all."""
        held, self._held = self._held, ""
        return "" if self.stopped else held

    def _partial_suffix(self, buffer: str) -> int:
        """Length of the longest end of `buffer` that begins some stop string."""
        longest = 0
        for stop in self._stops:
            for n in range(min(len(stop) - 1, len(buffer)), longest, -1):
                if buffer.endswith(stop[:n]):
                    longest = n
                    break
        return longest
