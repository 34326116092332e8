"""The prompt cache on disk: prompts' K/V in blocks keyed by a hash chain of their tokens, read back
for the longest cached prefix of a new turn, after a restart too (issue 39, item 2).

- store.py: the folder, its keys, and least-recently-used eviction within a cap in bytes;
- block_file.py: one block's file, written atomically and checked when read;
- turns.py: where a turn reads blocks back and saves new ones (the worker calls it).
"""

from .store import BLOCK, PrefixCache
from .turns import open_cache, save_prompt_blocks, take_cached_prefix

__all__ = ["BLOCK", "PrefixCache", "open_cache", "save_prompt_blocks", "take_cached_prefix"]
