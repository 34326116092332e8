"""One block of a prompt's K/V on disk: written so that a crash never leaves a file that is read, and
read so that a file that is damaged, cut short or not the block asked for is refused, never used.

A block file is `<key>.kv`:

    MAGIC (8 bytes) · header length (4 bytes, little-endian) · header (JSON) · payload

The header names the block (its key, the digest of the cache's identity, its first position and its
tokens) and the payload's length and CRC-32; the payload is the backend's bytes for the block's cells.

Why no fsync: this is a cache. A file is written under a temporary name and renamed over its own
(`os.replace`, atomic), so a crash mid-write leaves only a `.part` file, which is never read and is
removed later; what a power cut could leave behind a rename (a short or zeroed file) fails the length
or the checksum when read, and is removed then. Syncing every block (about 3 MB for 128 tokens of the
bundled 135M model) would cost more than writing it.
"""

from __future__ import annotations

import json
import os
import secrets
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

MAGIC = b"CFBKV\x00\x01\n"
SUFFIX = ".kv"
PART = ".part"
_LENGTH = struct.Struct("<I")


class BlockError(Exception):
    """A block file that must not be used: unreadable, cut short, corrupt, or another block."""


@dataclass(frozen=True)
class BlockHead:
    """What a block file says it holds; a read checks each field against the block asked for."""

    key: str
    """The block's name: the hash chain of every token up to its end (engine/prefix_cache/store.py)."""
    identity: str
    """Digest of the cache's identity (model, backend, K/V layout, format)."""
    start: int
    """Position of its first token."""
    tokens: tuple[int, ...]

    def header(self, payload_bytes: int, crc: int) -> bytes:
        return json.dumps({"key": self.key, "identity": self.identity, "start": self.start,
                           "tokens": list(self.tokens), "payload_bytes": payload_bytes, "crc32": crc}).encode()


def block_path(folder: Path, key: str) -> Path:
    return folder / f"{key}{SUFFIX}"


def write_block(folder: Path, head: BlockHead, payload: Sequence[int] | memoryview | bytes) -> int:
    """Write the block atomically (temporary file, then rename); its size in bytes. OSError as raised."""
    view = memoryview(payload).cast("B")
    header = head.header(view.nbytes, zlib.crc32(view))
    tmp = folder / f".{head.key}.{os.getpid()}.{secrets.token_hex(4)}{PART}"
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC)
            f.write(_LENGTH.pack(len(header)))
            f.write(header)
            f.write(view)
        os.replace(tmp, block_path(folder, head.key))
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    return len(MAGIC) + _LENGTH.size + len(header) + view.nbytes


def read_block(path: Path, want: BlockHead) -> bytearray:
    """The payload of the block file at `path`, which must be exactly `want`; BlockError otherwise
    (FileNotFoundError where the file is gone: another process may have evicted it)."""
    with open(path, "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            raise BlockError(f"{path.name} is not a prefix cache block")
        raw = f.read(_LENGTH.size)
        if len(raw) != _LENGTH.size:
            raise BlockError(f"{path.name} is cut short")
        try:
            head = json.loads(f.read(_LENGTH.unpack(raw)[0]))
            size, crc = int(head["payload_bytes"]), int(head["crc32"])
            said = BlockHead(head["key"], head["identity"], int(head["start"]), tuple(int(t) for t in head["tokens"]))
        except (ValueError, KeyError, TypeError) as e:
            raise BlockError(f"{path.name} has no readable header: {e}") from None
        if said != want:
            raise BlockError(f"{path.name} holds another block than its name says")
        payload = bytearray(size)
        got = f.readinto(payload)
        if got != size:
            raise BlockError(f"{path.name} is cut short ({got} of {size} payload bytes)")
        if f.read(1):
            raise BlockError(f"{path.name} is longer than its header says")
    if zlib.crc32(payload) != crc:
        raise BlockError(f"{path.name} fails its checksum")
    return payload
