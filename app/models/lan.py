"""Where the local API listens and the addresses people type to reach it: this computer's own
(127.0.0.1), or its addresses on the local network, which other machines use.

    serve_urls("0.0.0.0", 8317)   # ("http://127.0.0.1:8317/v1", "http://192.168.1.5:8317/v1")
    serve_urls("127.0.0.1", 8317) # ("http://127.0.0.1:8317/v1", "")
    lan_addresses()               # [LanAddress("192.168.1.5", "wlan0"), …], the likeliest first

No Qt: the status bar, Settings and the Server view all name the same addresses through this.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Optional

import psutil

LOOPBACK = "127.0.0.1"
"""This computer only."""
EVERY_NETWORK = "0.0.0.0"
"""Every network this computer is on (all of its IPv4 addresses)."""
VIRTUAL = ("docker", "br-", "veth", "virbr", "vmnet", "vboxnet", "lxc", "lxd", "podman", "cni", "flannel")
"""Interfaces of containers and virtual machines: their addresses are not where other computers reach
this one, so they go last."""


@dataclass(frozen=True)
class LanAddress:
    """One of this computer's IPv4 addresses on a network."""

    ip: str
    interface: str
    """The network interface's name as the system gives it ("eth0", "Wi-Fi", "en0")."""


def is_loopback(host: str) -> bool:
    """True for an address that only this computer can reach (127.x, ::1, "localhost")."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def lan_addresses() -> list[LanAddress]:
    """This computer's IPv4 addresses on networks that are up, loopback and link-local (169.254.x,
    a network with no router) left out: the one its default route uses first, then real network
    cards' before those of containers and virtual machines, private addresses before public ones."""
    try:
        interfaces, stats = psutil.net_if_addrs(), psutil.net_if_stats()
    except OSError:
        return []
    found = []
    for name, addresses in interfaces.items():
        if name in stats and not stats[name].isup:
            continue
        for a in addresses:
            if a.family == socket.AF_INET and not is_loopback(a.address) \
                    and not ipaddress.ip_address(a.address).is_link_local:
                found.append(LanAddress(a.address, name))
    routed = _routed_address()
    return sorted(found, key=lambda a: (a.ip != routed, name_is_virtual(a.interface),
                                        not ipaddress.ip_address(a.ip).is_private))


def name_is_virtual(interface: str) -> bool:
    return interface.lower().startswith(VIRTUAL)


def _routed_address() -> str:
    """The address the system would send from to reach another network: a UDP socket's `connect`
    only picks a route, it sends nothing. "" when there is no route (no network)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("198.51.100.1", 9))  # a documentation address: never a real host
            return probe.getsockname()[0]
        except OSError:
            return ""


def serve_urls(host: str, port: int, lan: Optional[list[LanAddress]] = None) -> tuple[str, str]:
    """(the URL programs on this computer use, the URL other computers use, "" when only this
    computer may connect) for a server listening on `host`:`port`. On every network, others use
    the likeliest LAN address (`lan_addresses`); on one address, that one."""
    if is_loopback(host):
        return url(LOOPBACK if host == "localhost" else host, port), ""
    if host in (EVERY_NETWORK, "::"):
        addresses = lan_addresses() if lan is None else lan
        return url(LOOPBACK, port), url(addresses[0].ip, port) if addresses else ""
    return url(host, port), url(host, port)


def url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/v1"
