"""A port another program holds is found before the local API tries it, and a free one near it."""

from __future__ import annotations

import socket

from app.models.ports import free_port_after, port_in_use


def test_a_listening_port_is_in_use_and_a_free_one_follows_it():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert port_in_use(port)
        free = free_port_after(port)
        assert free is not None and free > port and not port_in_use(free)
    assert not port_in_use(port)  # closed: free again (a server's TIME_WAIT does not count)


def test_no_free_port_past_the_last():
    assert free_port_after(65535) is None
