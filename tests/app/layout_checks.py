"""What the layout tests (`test_layout_*.py`, one per room) share: the conversations that once
pushed the window wider than itself, and the checks that nothing sticks out.

    from tests.app.layout_checks import DEFAULT, MINIMUM, add_conversation, sticking_out
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QWidget

from app.store import Attachment
from app.window.main_window import DEFAULT_SIZE, MINIMUM_SIZE

DEFAULT = DEFAULT_SIZE
"""The window's size at first start (1040 × 680)."""
MINIMUM = MINIMUM_SIZE
"""The narrowest the window goes (640 px)."""

LONG_ERROR = ("ServerUnreachableError:connection-refused:nothing-listens-at-http://127.0.0.1:8799/v1/"
              "chat/completions(is-the-server-running?-start-it-or-choose-another-model-in-Model▸Load-model…)")
"""An error line with no spaces (it once ran past the right edge, taking the buttons with it)."""
LONG_WORDS = ("See https://example.com/a/very/long/address/" + "segment/" * 20 + "end.html or the file "
              "/home/someone/projects/" + "deeper_folder_name/" * 12 + "report.txt, "
              + "Donaudampfschifffahrtsgesellschaftskapitänswitwenrentenversicherung" * 3)
FOUR_FILES = tuple(
    Attachment(name, media, len(text), text) for name, media, text in (
        ("quarterly-financial-report-2026-final-version.pdf", "application/pdf", "Revenue rose. " * 400),
        ("river-gauge-measurements-by-hour.csv", "text/csv", "hour,level\n" + "1,2.3\n" * 300),
        ("meeting-notes-from-the-council.md", "text/markdown", "# Notes\n" + "- a point\n" * 80),
        ("analysis_script_for_the_levels.py", "text/x-python", "print('levels')\n" * 90),
    ))
"""Four files on one sent message: their chips once stayed on one line past the edge."""


def add_conversation(store, title: str, *, system_prompt: str = "") -> int:
    """A conversation with every hard row: a long error, long words, four files. Returns its id."""
    c = store.create_conversation(title, system_prompt=system_prompt)
    store.append_message(c.id, "user", "Read these and tell me what changed.", attachments=FOUR_FILES)
    store.append_message(c.id, "assistant", LONG_WORDS, model="bundled:smollm2-135m-instruct")
    store.append_message(c.id, "user", "And again?")
    store.append_message(c.id, "assistant", "", status="error", error=LONG_ERROR)
    return c.id


def sticking_out(view) -> list[str]:
    """Every visible widget inside a message of `view` (a ChatView) whose right edge passes the
    viewport's, by its class and accessible name or text."""
    viewport = view.viewport()
    right = viewport.width()
    out = []
    for message in view.message_views():
        for w in [message, *message.findChildren(QWidget)]:
            if not w.isVisibleTo(view) or w.width() == 0:
                continue
            edge = w.mapTo(viewport, QPoint(w.width() - 1, 0)).x()
            if edge >= right:
                name = w.accessibleName() or getattr(w, "text", lambda: "")() or w.objectName()
                out.append(f"{type(w).__name__} {name!r} ends at {edge} ≥ {right}")
    return out


def inside(widget: QWidget, outer: QWidget) -> bool:
    """`widget` lies wholly within `outer` (in `outer`'s coordinates)."""
    top_left = widget.mapTo(outer, QPoint(0, 0))
    return outer.rect().contains(QRect(top_left, widget.size()))
