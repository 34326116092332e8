"""The Qt binding the app ships with must not corrupt the interpreter it runs in."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QObject  # noqa: E402


def test_void_qt_calls_keep_none_alive():
    # PySide6 6.12.0 dropped a reference to None on every call returning nothing; on Python 3.11 a
    # running window then aborted with "none_dealloc" after a few thousand calls.
    obj = QObject()
    before = sys.getrefcount(None)
    for _ in range(1000):
        obj.setObjectName("x")
    assert sys.getrefcount(None) >= before
