"""Prompts' K/V saved on disk come back for a new engine on the same folder (a restart): a turn whose
prompt starts with cached blocks computes only the rest, and every reply's tokens, and each token's
log probability to the last bit, are those of an engine without the cache (greedy and seeded). A
damaged block or another model's cache is never used, and the folder stays within its cap."""

from __future__ import annotations

import pytest

from engine import EngineConfig, SamplingParams
from engine.errors import InvalidRequestError
from engine.prefix_cache import BLOCK
from tests.engine.helpers import prompt_ids

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

# with log probabilities: a 1 % change in one layer's restored values left the tiny model's tokens as
# they were, but not its log probabilities
GREEDY = SamplingParams(temperature=0, max_tokens=6, ignore_stop=True, logprobs=3)
SEEDED = SamplingParams(temperature=0.9, seed=3, max_tokens=6, ignore_stop=True, logprobs=3)
SYSTEM = ("You are a coding agent. Tools: read_file(path), write_file(path, text), run(command), search(query). "
          "Always explain the plan first, then call one tool at a time, and report what each call returned. ") * 14
TASKS = ["Fix the failing test in parser.py.", "Add a --verbose flag to the command line."]


@pytest.fixture
def load(make_engine, tiny_models, tmp_path):
    """load(cache=True, source=None, **config): the tiny llama GGUF on llama.cpp, with the prompt cache
    in this test's folder (or none); several loads on one folder are restarts. Prompts are read in
    chunks of 96 tokens, so a computed prompt's chunks never line up with the cache's blocks."""
    def make(cache: bool = True, source=None, **config):
        if cache:
            config.setdefault("prefix_cache_dir", str(tmp_path / "cache"))
        return make_engine(source or tiny_models["llama"], "llamacpp", max_context=1024, max_sessions=4,
                           prefill_chunk=96, **config)
    return make


def _reply(engine, prompt: list[int], params=GREEDY):
    """(each token with its log probability, stats) of a fresh session's reply to `prompt`; the
    session is closed after."""
    session = engine.open_session()
    chunks = list(session.generate(prompt, params))
    session.close()
    return _tokens(chunks), chunks[-1].stats


def _tokens(chunks) -> list[tuple[int, float]]:
    return [(t, lp.logprob) for chunk in chunks for t, lp in zip(chunk.token_ids, chunk.logprobs, strict=True)]


def _cache(engine, name: str):
    return engine._call(lambda w: getattr(w.prefix_cache, name))


@pytest.mark.parametrize("params", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_a_restarted_engine_reads_prompts_back_and_replies_the_same(load, params):
    plain = load(cache=False)
    prompts = [prompt_ids(plain, SYSTEM + task) for task in TASKS]
    assert len(prompt_ids(plain, SYSTEM)) > 2 * BLOCK, "the tasks share two whole blocks"
    expected = [_reply(plain, prompt, params)[0] for prompt in prompts]
    first = load()
    got, stats = _reply(first, prompts[0], params)
    assert got == expected[0] and stats.prefilled_tokens == len(prompts[0]), "an empty cache: all computed"
    assert _cache(first, "written_blocks") == len(prompts[0]) // BLOCK
    first.close()
    again = load()  # the same folder: a restart
    for prompt, want in zip(prompts, expected):
        got, stats = _reply(again, prompt, params)
        assert got == want
        assert stats.prefilled_tokens <= len(prompt) - 2 * BLOCK, "the shared blocks were read, not computed"
    # a session whose prompt came from disk goes on, turn after turn, as a computed one does
    follow = prompts[1] + [t for t, _ in expected[1]] + prompt_ids(plain, " Now run the tests.")
    restored, computed = again.open_session(), plain.open_session()
    for prompt in (prompts[1], follow):
        assert _tokens(restored.generate(prompt, params)) == _tokens(computed.generate(prompt, params))


def test_a_session_keeps_its_own_cells_and_reads_only_what_it_lacks(load):
    engine = load()
    prompt = prompt_ids(engine, SYSTEM + TASKS[0])
    _reply(engine, prompt)
    session = engine.open_session()
    short = prompt[:BLOCK + 10]
    list(session.generate(short, GREEDY))
    read = _cache(engine, "read_blocks")
    chunks = list(session.generate(prompt, GREEDY))
    cached = (len(prompt) - 1) // BLOCK * BLOCK
    assert chunks[-1].stats.prefilled_tokens == len(prompt) - cached
    assert _cache(engine, "read_blocks") - read == cached // BLOCK - 1, "block 0 was its own already"


def test_a_damaged_block_is_ignored_removed_and_written_again(load, tmp_path):
    first = load()
    prompt = prompt_ids(first, SYSTEM + TASKS[0])
    want, _ = _reply(first, prompt)
    keys = first._call(lambda w: w.prefix_cache.chain(prompt, 2))
    first.close()
    path = tmp_path / "cache" / f"{keys[1]}.kv"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    (tmp_path / "cache" / f".{keys[1]}.1.abcd.part").write_bytes(bytes(data[: len(data) // 2]))  # a cut write
    again = load()
    got, stats = _reply(again, prompt)
    assert got == want
    assert stats.prefilled_tokens == len(prompt) - BLOCK, "block 0 read; block 1 refused and computed"
    assert _cache(again, "dropped_blocks") == 1
    assert again._call(lambda w: w.prefix_cache.read(keys[1], prompt[BLOCK:2 * BLOCK], BLOCK)) is not None, \
        "written again from the computed cells"


def test_another_models_cache_is_ignored(load, tiny_llama_other_seed):
    first = load()
    prompt = prompt_ids(first, SYSTEM + TASKS[0])
    _reply(first, prompt)
    first.close()
    other = load(source=tiny_llama_other_seed)  # same shapes, other weights: its bytes would load
    got, stats = _reply(other, prompt)
    assert stats.prefilled_tokens == len(prompt) and _cache(other, "read_blocks") == 0
    assert got == _reply(load(cache=False, source=tiny_llama_other_seed), prompt)[0]


def test_the_folder_stays_within_its_cap(load, tmp_path):
    probe = load(prefix_cache_dir=str(tmp_path / "probe"))
    _reply(probe, prompt_ids(probe, SYSTEM))
    block = max(p.stat().st_size for p in (tmp_path / "probe").glob("*.kv"))
    probe.close()
    cap = 4 * block + block // 2
    engine = load(prefix_cache_bytes=cap)
    for task in ("One.", "Two.", "Three."):
        _reply(engine, prompt_ids(engine, task + " " + SYSTEM))  # no block in common
    files = list((tmp_path / "cache").glob("*.kv"))
    assert sum(p.stat().st_size for p in files) <= cap and len(files) == 4
    assert _cache(engine, "evicted_blocks") >= 2


def test_the_reason_says_where_or_why_not(load, make_engine, tiny_models, tmp_path):
    assert load().prefix_cache_reason.startswith(f"on: {tmp_path / 'cache'} (0.00 of 4.0 GiB used)")
    assert load(cache=False).prefix_cache_reason == "off: no folder given"
    assert load(prefix_cache_bytes=0).prefix_cache_reason == "off: a cap of 0 bytes"
    torch = make_engine(tiny_models["llama"], "torch", max_context=256, prefix_cache_dir=str(tmp_path / "t"))
    assert "llama.cpp only" in torch.prefix_cache_reason


@pytest.mark.parametrize("config", [{"prefix_cache_bytes": -1}, {"prefix_cache_bytes": 1.5},
                                    {"prefix_cache_dir": 3}])
def test_bad_settings_are_refused_by_name(config):
    with pytest.raises(InvalidRequestError, match=next(iter(config))):
        EngineConfig(**config)


@pytest.mark.parametrize("text, size", [("4G", 4 << 30), ("500M", 500 << 20), ("1.5GB", 3 << 29), ("2GiB", 2 << 30),
                                        ("0", 0), ("1,000,000", 1_000_000), ("64k", 64 << 10)])
def test_sizes_on_the_command_line(text, size):
    from engine.cli.options import byte_size

    assert byte_size(text) == size


@pytest.mark.parametrize("text", ["", "big", "-1G", "nan", "4X"])
def test_a_size_that_is_not_one_is_refused(text):
    import argparse

    from engine.cli.options import byte_size

    with pytest.raises(argparse.ArgumentTypeError):
        byte_size(text)
