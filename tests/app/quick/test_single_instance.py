"""A second launch on the same data folder hands over to the first; a crashed one is not in the way."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import QDir  # noqa: E402

from app.quick.single_instance import SingleInstance, instance_key  # noqa: E402


@pytest.fixture
def key(tmp_path) -> str:
    """A key no other test run or real Confab uses."""
    return instance_key(tmp_path / uuid.uuid4().hex)


def test_second_claim_hands_over_to_the_first(qtbot, key):
    first, second = SingleInstance(key), SingleInstance(key)
    try:
        assert first.claim()
        with qtbot.waitSignal(first.raise_requested, timeout=5_000):
            assert not second.claim()
        assert second.server is None  # the second one listens on nothing: it is about to exit
    finally:
        first.close()


def test_every_later_launch_raises_the_first(qtbot, key):
    first = SingleInstance(key)
    raised = []
    first.raise_requested.connect(lambda: raised.append(True))
    try:
        assert first.claim()
        for _ in range(2):
            assert not SingleInstance(key).claim()
        qtbot.waitUntil(lambda: len(raised) == 2, timeout=5_000)
    finally:
        first.close()


def test_after_close_the_next_launch_is_first(key):
    first = SingleInstance(key)
    assert first.claim()
    first.close()
    again = SingleInstance(key)
    try:
        assert again.claim()
    finally:
        again.close()


def test_a_crashed_instance_leaves_no_lock_behind(qtbot, key):
    crash = ("import sys, os\n"
             "from PySide6.QtCore import QCoreApplication\n"
             "from PySide6.QtNetwork import QLocalServer\n"
             "app = QCoreApplication([])\n"
             "server = QLocalServer()\n"
             "assert server.listen(sys.argv[1]), server.errorString()\n"
             "os._exit(0)  # no cleanup, like a crash\n")
    subprocess.run([sys.executable, "-c", crash, key], check=True, timeout=120)
    if sys.platform != "win32":  # a named pipe dies with its process; a socket file stays
        assert Path(QDir(QDir.tempPath()).filePath(key)).exists()
    first = SingleInstance(key)
    try:
        assert first.claim()
        with qtbot.waitSignal(first.raise_requested, timeout=5_000):
            assert not SingleInstance(key).claim()
    finally:
        first.close()


def test_keys_differ_by_data_folder_and_stay_short(tmp_path):
    a, b = instance_key(tmp_path / "a"), instance_key(tmp_path / "b")
    assert a != b and a == instance_key(tmp_path / "a")
    assert a == instance_key(tmp_path / "x" / ".." / "a")  # the same folder spelled differently
    assert len(a) < 40 and a.startswith("confab-")
