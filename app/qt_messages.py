"""Qt's own log messages, less one known-harmless kind.

    install_message_filter()    # once per process; idempotent

Offscreen (tests, `--self-test`, `app.devtools.bench_ui`) Qt says "This plugin does not support
propagateSizeHints()" each time a window's size hints change, ~90 lines a run, which buries real
warnings. This drops exactly that message and passes every other one on unchanged (to the handler
installed before, or formatted and printed as Qt's default handler would).
"""

from __future__ import annotations

import sys
from typing import Callable, Optional

from PySide6.QtCore import QMessageLogContext, QtMsgType, qFormatLogMessage, qInstallMessageHandler

HARMLESS = ("This plugin does not support propagateSizeHints()",)
"""Messages (exact starts) dropped: the platform plugin cannot pass size hints on, which changes
nothing for a window on a virtual screen."""

Handler = Callable[[QtMsgType, QMessageLogContext, str], None]
_installed: Optional[Handler] = None
_previous: Optional[Handler] = None


def is_harmless(message: str) -> bool:
    return message.startswith(HARMLESS)


def _filter(mode: QtMsgType, context: QMessageLogContext, message: str) -> None:
    if is_harmless(message):
        return
    if _previous is not None:
        _previous(mode, context, message)
    else:
        print(qFormatLogMessage(mode, context, message), file=sys.stderr, flush=True)


def install_message_filter() -> None:
    """Route Qt's messages through the filter (again a no-op once installed)."""
    global _installed, _previous
    if _installed is not None:
        return
    _previous = qInstallMessageHandler(_filter)
    _installed = _filter
