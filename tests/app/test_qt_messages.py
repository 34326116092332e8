"""Qt's harmless offscreen "propagateSizeHints" warning is dropped; every other message still shows."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
from PySide6.QtCore import qWarning
from app.qt_messages import install_message_filter
qWarning("This plugin does not support propagateSizeHints()")
install_message_filter()
install_message_filter()
qWarning("This plugin does not support propagateSizeHints()")
qWarning("This plugin does not support raise()")
qWarning("a real problem")
"""


def test_only_the_harmless_warning_is_dropped():
    # A child process: the filter is process-wide, and Qt's default handler writes to the real stderr.
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines.count("This plugin does not support propagateSizeHints()") == 1  # the one before the filter
    assert "This plugin does not support raise()" in lines and "a real problem" in lines
