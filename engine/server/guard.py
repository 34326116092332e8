"""Who may call the server: the API keys, and the Host header of a keyless loopback server.

A keyless server listens on loopback only, but a web page can still reach it through DNS rebinding
(a name the attacker controls that resolves to 127.0.0.1): the browser then sends that name as the
Host header. So without a key only loopback host names are answered. With keys, each key is a client
of its own: `owner` names it (a digest, never the key) so sessions stay private to the key that made them.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from typing import Optional

from .errors import APIError

LOOPBACK_NAMES = ("localhost",)


def owner_of(authorization: str, keys: tuple[str, ...]) -> Optional[str]:
    """The owner id of the key in an `Authorization: Bearer KEY` header; APIError 401 if it is none
    of `keys`. Without keys everyone is the one owner None."""
    if not keys:
        return None
    token = authorization[7:] if authorization[:7].lower() == "bearer " else ""
    matched = None
    for key in keys:  # every key compared, in constant time each: timing says nothing about which
        if hmac.compare_digest(token.encode(), key.encode()):
            matched = key
    if matched is None:
        raise APIError(401, "missing or wrong API key (send Authorization: Bearer <key>, or x-api-key: <key>)", "invalid_api_key")
    return hashlib.sha256(matched.encode()).hexdigest()[:16]


def check_host(host_header: str) -> None:
    """APIError 403 unless the Host header names this machine's loopback (with any port)."""
    if not is_loopback_host(host_header):
        raise APIError(403, f"this server answers only requests addressed to localhost, not {host_header!r} "
                            "(start it with --api-key to serve other names)", "invalid_host", "permission_error")


def is_loopback_host(host_header: str) -> bool:
    host = host_header.strip().lower()
    if host.startswith("["):  # [::1]:8317
        host = host[1:host.find("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
