"""Whether a port on this computer's loopback is taken, and a free one near it.

uvicorn reports a taken port only in its log and then exits (the local API saw exit code 3), so the
app asks the system itself: then it can say "Port 8317 is in use by another program" and offer a
port that is free, instead of an exit code.
"""

from __future__ import annotations

import errno
import os
import socket
from typing import Optional

LOOPBACK = "127.0.0.1"
TAKEN = {errno.EADDRINUSE, errno.EACCES, getattr(errno, "WSAEADDRINUSE", -1), getattr(errno, "WSAEACCES", -1)}
"""Bind errors that mean another program holds the port (or the system keeps it: Windows' reserved
ranges answer "access denied")."""


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    """True when a server could not listen on `host:port` now because something else holds it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        if os.name != "nt":  # as uvicorn binds: a port left in TIME_WAIT by a stopped server is free
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as e:
            return e.errno in TAKEN or getattr(e, "winerror", None) in TAKEN
    return False


def free_port_after(port: int, host: str = LOOPBACK, tries: int = 100, highest: int = 65535) -> Optional[int]:
    """The first port above `port` that is free now (None when none of the next `tries` is)."""
    for candidate in range(port + 1, min(port + tries, highest) + 1):
        if not port_in_use(candidate, host):
            return candidate
    return None
