"""The prompt cache on disk: blocks of prompts' K/V, named by a hash chain of their tokens, kept least
recently used first within a cap in bytes.

Keys: block i's key hashes block i-1's key and block i's tokens; block 0's hashes the cache's
identity (the model's fingerprint, the backend and its K/V layout, this format). So a key names every
token from position 0 to its block's end, on this model and layout only. A prompt's blocks are found
by hashing its own tokens (an image's ids are a hash of its bytes, engine/images.py, so images are
keyed by content too), and a cache written by another model, build or format is never found, so it
cannot be misread; it ages out like any other block.

Why blocks that each hold their own BLOCK positions (not whole prefixes): a prompt's blocks are
stored once, agents whose prompts start with one system prompt share its blocks on disk, and the next
turn of a conversation writes only its new blocks. A whole prefix per boundary would write a
3,000-token prompt about six times over.

The index is the folder itself: every `<key>.kv` file, with its size and its modification time (the
time of its last use: every hit stamps it), read when the cache opens. Nothing else can go stale or be
half-written; `.part` files are writes that a crash cut short, removed once old.

Eviction: least recently used first, by bytes, before a block is written, so the folder never holds
more than the cap. A use stamps block i of the chain `now - i` microseconds, so a chain is cut from
its end, never its start (a block whose ancestor is gone could never be read again).

Only the engine thread uses a PrefixCache. Processes may share a folder: each write is atomic and
each read checked (block_file.py), a block another process evicted is a miss, and each keeps the
folder within the cap as far as it knows of it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from .block_file import PART, SUFFIX, BlockError, BlockHead, block_path, read_block, write_block

log = logging.getLogger(__name__)

BLOCK = 128
"""Tokens per block: a prompt is read back up to its last whole cached block, so up to BLOCK - 1 tokens
of a cached prefix are computed again. Measured on the bundled model (3,000-token prefix, a new
200-token task, 2 busy cores): blocks of 256 computed 384 tokens after a restart, time to first token
8.6 s; blocks of 128 computed 256, 7.4 s. Reading the blocks back took 60 and 76 ms (about 1.3 ms a
block more), writing them 74 and 61 ms: the tokens not computed weigh more. (LMCache's chunks are 256.)"""
FORMAT = "confab-prefix-cache/1"
STALE_PART_SECONDS = 3600
"""A `.part` file older than this was left by a crash (a write takes well under a second)."""
_KEY_CHARS = 32


@dataclass
class _Entry:
    size: int
    used: int
    """When it was last written or read, in ns since the epoch (the file's modification time)."""


class PrefixCache:
    """Blocks of prompts' K/V in one folder, within `cap` bytes (engine thread only)."""

    def __init__(self, folder: Path, cap: int, identity: dict[str, str]) -> None:
        """`identity`: what the K/V bytes depend on besides the tokens; OSError if `folder` cannot be made."""
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.cap = cap
        described = json.dumps({"format": FORMAT, **identity}, sort_keys=True)
        self.identity = hashlib.sha256(described.encode()).hexdigest()[:_KEY_CHARS]
        self.total = 0
        """Bytes of every block file in the folder (other models' included): what the cap bounds."""
        self._files: dict[str, _Entry] = {}
        self.read_blocks = 0
        """Blocks read back since the cache opened (tests and the bench read these counters)."""
        self.written_blocks = 0
        self.evicted_blocks = 0
        self.dropped_blocks = 0
        """Block files found damaged (or not what their name says) and removed."""
        self._scan()
        self._make_room(0, set())  # the cap may have been lowered since the folder was filled

    def chain(self, tokens: Sequence[int], blocks: int) -> list[str]:
        """The keys of the first `blocks` whole blocks of `tokens`."""
        keys: list[str] = []
        link = bytes.fromhex(self.identity)
        for i in range(blocks):
            piece = np.asarray(tokens[i * BLOCK:(i + 1) * BLOCK], dtype="<i8").tobytes()
            link = hashlib.sha256(link + piece).digest()[:_KEY_CHARS // 2]
            keys.append(link.hex())
        return keys

    def holds(self, key: str) -> bool:
        return key in self._files

    def read(self, key: str, tokens: Sequence[int], start: int) -> Optional[bytearray]:
        """Block `key`'s bytes, which must hold `tokens` from position `start`; None when it is not
        here, or its file is damaged (then removed)."""
        if key not in self._files:
            return None
        try:
            data = read_block(block_path(self.folder, key), BlockHead(key, self.identity, start, tuple(tokens)))
        except FileNotFoundError:  # another process evicted it
            self._forget(key)
            return None
        except (BlockError, OSError) as e:
            log.warning("prompt cache: %s; the block is removed", e)
            self._remove(key)
            self.dropped_blocks += 1
            return None
        self.read_blocks += 1
        return data

    def write(self, key: str, tokens: Sequence[int], start: int, payload, keep: set[str]) -> bool:
        """Store block `key`, evicting least recently used blocks (never those in `keep`) first;
        False when it does not fit the cap beside `keep`, or the write failed (said in the log)."""
        need = memoryview(payload).nbytes + 64 + 12 * len(tokens)  # payload and a generous header
        if not self._make_room(need, keep):
            return False
        try:
            size = write_block(self.folder, BlockHead(key, self.identity, start, tuple(tokens)), payload)
        except OSError as e:
            log.warning("prompt cache: could not write a block to %s: %s", self.folder, e)
            return False
        old = self._files.pop(key, None)
        self.total += size - (old.size if old is not None else 0)
        self._files[key] = _Entry(size, time.time_ns())
        self.written_blocks += 1
        return True

    def touch(self, keys: Sequence[str]) -> None:
        """Mark a chain of blocks used now, its first block last (eviction then takes its deepest first)."""
        now = time.time_ns()
        for i, key in enumerate(keys):
            entry = self._files.get(key)
            if entry is None:
                continue
            entry.used = now - i * 1000
            try:
                os.utime(block_path(self.folder, key), ns=(entry.used, entry.used))
            except FileNotFoundError:
                self._forget(key)
            except OSError:
                pass

    def describe(self) -> str:
        return f"{self.folder} ({self.total / 2**30:.2f} of {self.cap / 2**30:.1f} GiB used)"

    # -- the folder --------------------------------------------------------------------------------
    def _make_room(self, need: int, keep: set[str]) -> bool:
        if self.total + need <= self.cap:
            return True
        for key in sorted(self._files, key=lambda k: self._files[k].used):
            if key in keep:
                continue
            self._remove(key)
            self.evicted_blocks += 1
            if self.total + need <= self.cap:
                return True
        return False

    def _remove(self, key: str) -> None:
        self._forget(key)
        try:
            block_path(self.folder, key).unlink()
        except OSError:
            pass

    def _forget(self, key: str) -> None:
        entry = self._files.pop(key, None)
        if entry is not None:
            self.total -= entry.size

    def _scan(self) -> None:
        """Index every block file in the folder; remove what crashes left half-written long ago."""
        old = time.time() - STALE_PART_SECONDS
        for entry in os.scandir(self.folder):
            name = entry.name
            try:
                if name.endswith(SUFFIX) and _is_key(name[:-len(SUFFIX)]):
                    stat = entry.stat()
                    self._files[name[:-len(SUFFIX)]] = _Entry(stat.st_size, stat.st_mtime_ns)
                    self.total += stat.st_size
                elif name.endswith(PART) and entry.stat().st_mtime < old:
                    os.unlink(entry.path)
            except OSError:
                continue


def _is_key(text: str) -> bool:
    return len(text) == _KEY_CHARS and all(c in "0123456789abcdef" for c in text)
