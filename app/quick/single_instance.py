"""One Confab per user and data folder: a second launch asks the first to come forward, then exits.

    instance = SingleInstance(instance_key(data_dir()))
    if not instance.claim():              # another Confab runs on this folder; it was told to raise
        return 0
    instance.raise_requested.connect(window.bring_forward)

The first instance listens on a QLocalServer (a Unix socket or a Windows named pipe) named by
`instance_key`; a later one connects and writes "raise" (Anki's pattern). A socket left behind by a
crashed instance accepts no connection, so it is removed and listened on again.
"""

from __future__ import annotations

import getpass
import hashlib
import logging
import os
from pathlib import Path

from PySide6.QtCore import QDir, QLockFile, QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger(__name__)

RAISE = b"raise\n"
"""What a second instance sends to the first."""
CONNECT_TIMEOUT_MS = 500
"""How long a launch waits to reach a running instance (the kernel accepts; the GUI need not run)."""


def instance_key(data_folder: Path) -> str:
    """A short server name for this user and data folder: two folders (tests, portable installs)
    or two users never share one, and the name fits the ~100-byte limit of Unix socket paths."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError, ImportError):  # no login name (some containers): the uid still separates users
        user = str(getattr(os, "getuid", lambda: "")())
    folder = os.path.normcase(str(Path(data_folder).expanduser().resolve()))
    digest = hashlib.sha256(f"{user}\0{folder}".encode()).hexdigest()[:16]
    return f"confab-{digest}"


class SingleInstance(QObject):
    """Claims `key` for this process; `raise_requested` fires here when another launch asks."""

    raise_requested = Signal()

    def __init__(self, key: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.key = key
        self.server: QLocalServer | None = None

    def claim(self) -> bool:
        """True: we are the first and now listen. False: another instance runs and was asked to
        raise its window, so the caller should exit 0. Blocks for at most about a second."""
        # Two launches at once must not both see "nobody listens" and both listen.
        lock = QLockFile(QDir(QDir.tempPath()).filePath(f"{self.key}.lock"))
        lock.setStaleLockTime(0)  # stale only when its process is gone
        locked = lock.tryLock(2 * CONNECT_TIMEOUT_MS)
        try:
            if self._tell_running():
                return False
            return self._listen()
        finally:
            if locked:
                lock.unlock()

    def close(self) -> None:
        """Stop listening (also removes the socket file); a later launch becomes the first."""
        if self.server is not None:
            self.server.close()
            self.server.deleteLater()  # never deleted directly: its sockets may have events queued
            self.server = None

    # -- internals ---------------------------------------------------------------------------------
    def _tell_running(self) -> bool:
        socket = QLocalSocket(self)
        try:
            socket.connectToServer(self.key)
            if not socket.waitForConnected(CONNECT_TIMEOUT_MS):
                return False
            socket.write(RAISE)
            socket.flush()
            socket.waitForBytesWritten(CONNECT_TIMEOUT_MS)
            socket.disconnectFromServer()
            return True
        finally:
            socket.deleteLater()

    def _listen(self) -> bool:
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        server.newConnection.connect(self._on_connection)
        if not server.listen(self.key):
            # Nobody answered, so what holds the name is a crashed instance's socket file.
            QLocalServer.removeServer(self.key)
            if not server.listen(self.key):
                log.warning("single instance: cannot listen on %s (%s); running without it",
                            self.key, server.errorString())
                server.deleteLater()
                return True
        self.server = server
        return True

    def _on_connection(self) -> None:
        while self.server is not None and (socket := self.server.nextPendingConnection()) is not None:
            socket.readyRead.connect(self._on_ready_read)
            socket.disconnected.connect(socket.deleteLater)
            self._read(socket)

    def _on_ready_read(self) -> None:
        socket = self.sender()
        if isinstance(socket, QLocalSocket):
            self._read(socket)

    def _read(self, socket: QLocalSocket) -> None:
        while socket.canReadLine():
            if bytes(socket.readLine().data()) == RAISE:
                self.raise_requested.emit()
