"""The prompt cache's folder on its own (no model): blocks are found by their tokens and identity only,
a block file that is damaged, cut short, half-written or another block's is never returned (and is
removed), and the folder stays within its cap, least recently used chains cut from their end."""

from __future__ import annotations

import os
import time

import pytest

from engine.prefix_cache import BLOCK, PrefixCache

IDENTITY = {"backend": "llamacpp", "model": "a" * 32, "kv": "float16"}
PAYLOAD = 10_000


def _tokens(seed: int, blocks: int) -> list[int]:
    return [(seed * 7919 + i) % 49152 for i in range(blocks * BLOCK)]


def _fill(cache: PrefixCache, tokens: list[int], payload: int = PAYLOAD) -> list[str]:
    """Write every whole block of `tokens` (payload: its block index repeated) as a turn does."""
    keys = cache.chain(tokens, len(tokens) // BLOCK)
    for i, key in enumerate(keys):
        assert cache.write(key, tokens[i * BLOCK:(i + 1) * BLOCK], i * BLOCK, bytes([i]) * payload, set(keys))
    cache.touch(keys)
    return keys


def _read(cache: PrefixCache, tokens: list[int], i: int, key: str):
    return cache.read(key, tokens[i * BLOCK:(i + 1) * BLOCK], i * BLOCK)


def test_a_block_comes_back_by_its_tokens_after_a_reopen(tmp_path):
    tokens = _tokens(1, 3)
    keys = _fill(PrefixCache(tmp_path, 1 << 30, IDENTITY), tokens)
    again = PrefixCache(tmp_path, 1 << 30, IDENTITY)  # a restart: the index is the folder
    assert again.chain(tokens, 3) == keys
    assert [bytes(_read(again, tokens, i, key)) for i, key in enumerate(keys)] == \
        [bytes([i]) * PAYLOAD for i in range(3)]
    changed = tokens[:BLOCK + 5] + [tokens[BLOCK + 5] + 1] + tokens[BLOCK + 6:]
    assert again.chain(changed, 3)[0] == keys[0] and again.chain(changed, 3)[1:] != keys[1:], \
        "a key names every token up to its block's end"


def test_another_identity_never_finds_the_blocks(tmp_path):
    tokens = _tokens(2, 2)
    _fill(PrefixCache(tmp_path, 1 << 30, IDENTITY), tokens)
    for other in ({**IDENTITY, "model": "b" * 32}, {**IDENTITY, "kv": "q8_0"}):
        cache = PrefixCache(tmp_path, 1 << 30, other)
        assert not any(cache.holds(key) for key in cache.chain(tokens, 2))
        assert cache.total > 0, "another model's blocks still count against the cap (and age out)"


def _flip_last_byte(path):
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGE = {
    "a flipped payload byte": _flip_last_byte,
    "cut short": lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]),
    "emptied": lambda path: path.write_bytes(b""),
    "bytes appended": lambda path: path.write_bytes(path.read_bytes() + b"\0"),
    "not a block": lambda path: path.write_bytes(b"hello"),
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_block_is_refused_and_removed(tmp_path, damage):
    tokens = _tokens(3, 2)
    keys = _fill(PrefixCache(tmp_path, 1 << 30, IDENTITY), tokens)
    damage(tmp_path / f"{keys[1]}.kv")
    cache = PrefixCache(tmp_path, 1 << 30, IDENTITY)
    assert _read(cache, tokens, 0, keys[0]) is not None
    assert _read(cache, tokens, 1, keys[1]) is None
    assert cache.dropped_blocks == 1 and not (tmp_path / f"{keys[1]}.kv").exists() and not cache.holds(keys[1])


def test_a_block_under_another_blocks_name_is_refused(tmp_path):
    tokens = _tokens(4, 2)
    keys = _fill(PrefixCache(tmp_path, 1 << 30, IDENTITY), tokens)
    os.replace(tmp_path / f"{keys[0]}.kv", tmp_path / f"{keys[1]}.kv")
    cache = PrefixCache(tmp_path, 1 << 30, IDENTITY)
    assert _read(cache, tokens, 1, keys[1]) is None and cache.dropped_blocks == 1
    assert _read(cache, tokens, 0, keys[0]) is None, "gone: a miss, not an error"


def test_a_half_written_file_is_never_read_and_old_ones_are_removed(tmp_path):
    tokens = _tokens(5, 1)
    key = PrefixCache(tmp_path, 1 << 30, IDENTITY).chain(tokens, 1)[0]
    fresh, stale = tmp_path / f".{key}.1.aaaa.part", tmp_path / f".{key}.2.bbbb.part"
    fresh.write_bytes(b"a crash cut this write short")
    stale.write_bytes(b"an older crash")
    hour_ago = time.time() - 7200
    os.utime(stale, (hour_ago, hour_ago))
    cache = PrefixCache(tmp_path, 1 << 30, IDENTITY)
    assert not cache.holds(key) and cache.total == 0
    assert fresh.exists(), "it may be another process's write in progress"
    assert not stale.exists()


def test_the_folder_stays_within_its_cap_least_recently_used_first(tmp_path):
    probe = PrefixCache(tmp_path / "probe", 1 << 30, IDENTITY)
    _fill(probe, _tokens(0, 1))
    size = probe.total  # one block file
    cap = 5 * size + size // 2
    cache = PrefixCache(tmp_path / "cache", cap, IDENTITY)
    a, b = _tokens(6, 2), _tokens(7, 2)
    keys_a, keys_b = _fill(cache, a), _fill(cache, b)
    cache.touch(keys_a)  # a is used again: b is now the least recently used
    keys_c = _fill(cache, _tokens(8, 2))
    on_disk = sum(p.stat().st_size for p in (tmp_path / "cache").glob("*.kv"))
    assert on_disk == cache.total <= cap
    assert all(cache.holds(k) for k in keys_a + keys_c)
    assert cache.holds(keys_b[0]) and not cache.holds(keys_b[1]), "a chain is cut from its end, never its start"
    assert cache.evicted_blocks == 1
    reopened = PrefixCache(tmp_path / "cache", cap, IDENTITY)  # recency survives a restart (file times)
    _fill(reopened, _tokens(9, 1))
    assert not reopened.holds(keys_b[0]) and all(reopened.holds(k) for k in keys_a + keys_c)


def test_a_chain_larger_than_the_cap_keeps_its_start(tmp_path):
    probe = PrefixCache(tmp_path / "probe", 1 << 30, IDENTITY)
    _fill(probe, _tokens(0, 1))
    cap = 2 * probe.total + probe.total // 2
    cache = PrefixCache(tmp_path / "cache", cap, IDENTITY)
    tokens = _tokens(10, 4)
    keys = cache.chain(tokens, 4)
    written = [cache.write(k, tokens[i * BLOCK:(i + 1) * BLOCK], i * BLOCK, bytes(PAYLOAD), set(keys))
               for i, k in enumerate(keys)]
    assert written == [True, True, False, False] and cache.total <= cap


def test_a_lower_cap_is_kept_when_the_folder_opens(tmp_path):
    keys = _fill(PrefixCache(tmp_path, 1 << 30, IDENTITY), _tokens(11, 3))
    one = (tmp_path / f"{keys[0]}.kv").stat().st_size
    cache = PrefixCache(tmp_path, one, IDENTITY)
    assert cache.total <= one and cache.holds(keys[0]) and not cache.holds(keys[2])
