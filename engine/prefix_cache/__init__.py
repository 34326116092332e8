"""The prompt cache on disk: prompts' K/V in blocks keyed by a hash chain of their tokens (issue 39, item 2).

- store.py: the folder, its keys, and least-recently-used eviction within a cap in bytes;
- block_file.py: one block's file, written atomically and checked when read.
"""

from .store import BLOCK, PrefixCache

__all__ = ["BLOCK", "PrefixCache"]
