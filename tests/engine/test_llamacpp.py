"""The llama.cpp backend's own promises: which backend a source gets and why, a GGUF read as stored
(the same template and stop tokens as the converted path), one shared K/V pool admitted by tokens,
and a round that puts decode tokens and a prompt chunk in one llama_decode."""

from __future__ import annotations

import threading

import pytest

from engine import Engine, EngineConfig, SamplingParams
from engine.errors import CapacityError, ModelLoadError
from tests.engine.helpers import token_ids
from tests.conftest import HEAD_DIM

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

PER_TOKEN = 2 * 2 * (HEAD_DIM + HEAD_DIM) * 2  # layers × kv heads × (K + V head dims) × float16 bytes


def greedy(n: int) -> SamplingParams:
    return SamplingParams(temperature=0, max_tokens=n, ignore_stop=True)


def test_auto_runs_a_gguf_on_llamacpp_without_converting_it(tiny_models, gguf_source, tmp_path, monkeypatch):
    monkeypatch.setenv("CONFAB_CACHE", str(tmp_path))
    with Engine.load(str(gguf_source(tiny_models["llama"])), EngineConfig(max_context=128)) as engine:
        assert engine.backend == "llamacpp"
        assert engine.backend_reason == "llama.cpp: a GGUF file runs as stored"
        with engine.open_session() as s:
            assert len(token_ids(s.generate([5, 6, 7], greedy(4)))) == 4
    assert not (tmp_path / "models").exists()  # no float16 folder: only the tokenizer's small files
    assert all(f.suffix in (".json", ".jinja", ".txt") for f in (tmp_path / "gguf-meta").rglob("*") if f.is_file())


def test_a_gguf_falls_back_to_torch_with_the_reason_when_llama_cpp_does_not_import(tiny_models, gguf_source,
                                                                                     monkeypatch):
    from engine import backends

    monkeypatch.setattr(backends, "llamacpp_error", lambda: "ImportError: libllama.so: cannot open shared object")
    with Engine.load(str(gguf_source(tiny_models["llama"])), EngineConfig(max_context=128)) as engine:
        assert engine.backend == backends.default_backend()
        assert engine.backend_reason == (f"{engine.backend}: llama-cpp-python does not import (ImportError: "
                                         "libllama.so: cannot open shared object); the GGUF is converted")
    with pytest.raises(ModelLoadError, match="needs llama-cpp-python, which does not import: ImportError"):
        Engine.load(str(gguf_source(tiny_models["llama"])), EngineConfig(backend="llamacpp"))


def test_a_folder_is_refused_by_name_on_llamacpp(tiny_models):
    with pytest.raises(ModelLoadError, match="the llamacpp backend loads .gguf files; this model is a folder"):
        Engine.load(str(tiny_models["llama"]), EngineConfig(backend="llamacpp"))


def test_template_and_stop_tokens_read_from_the_file_match_the_converted_path(bundled_folder):
    from engine.models import resolve
    from engine.reply.text import TextCodec

    as_stored = TextCodec(resolve("bundled:smollm2-135m-instruct", as_stored=True).tokenizer_folder)
    converted = TextCodec(bundled_folder)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <|im_end|> there"},
                {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "And now?"}]
    assert as_stored.render(messages) == converted.render(messages)
    assert as_stored.stop_ids == converted.stop_ids and as_stored.stop_ids
    assert as_stored.template_fingerprint == converted.template_fingerprint
    text = as_stored.render(messages)
    assert as_stored.encode(text) == converted.encode(text)


def test_the_pool_admits_turns_by_what_they_hold_and_parks_idle_sessions(make_engine, tiny_models):
    # 300 tokens' worth of budget: a pool of 256 tokens (llama.cpp sizes it in steps of 256)
    engine = make_engine(tiny_models["llama"], "llamacpp", max_context=128, memory_budget=300 * PER_TOKEN)
    cap = engine.capacity()
    assert (cap.pool_tokens, cap.budget_bytes, cap.bytes_per_session) == (256, 256 * PER_TOKEN, 128 * PER_TOKEN)
    a, b, c = engine.open_session(), engine.open_session(), engine.open_session()
    token_ids(a.generate(list(range(10, 30)), greedy(100)))  # holds 119 tokens
    token_ids(b.generate(list(range(40, 60)), greedy(100)))
    held = engine.capacity().held_tokens
    assert held == 2 * 119 and a.state_nbytes == 119 * PER_TOKEN
    # c's turn does not fit beside a and b: a, the least recently used idle session, parks for it
    # (the old admission reserved prompt + max_tokens and refused it)
    assert len(token_ids(c.generate(list(range(70, 90)), greedy(100)))) == 100
    assert engine.capacity().held_tokens == 2 * 119  # b and c; a waits on disk
    assert len(token_ids(a.generate(a.tokens + [5, 6], greedy(5)))) == 5  # a comes back for its turn
    for s in (a, b, c):
        s.close()
    assert engine.capacity().held_tokens == 0


def test_a_budget_below_one_session_is_refused_at_load(make_engine, tiny_models):
    with pytest.raises(CapacityError, match=r"cannot hold one session"):
        make_engine(tiny_models["llama"], "llamacpp", max_context=512, memory_budget=300 * PER_TOKEN)


def test_open_sessions_are_capped_by_max_sessions(make_engine, tiny_models):
    engine = make_engine(tiny_models["llama"], "llamacpp", max_sessions=2)
    a, b = engine.open_session(), engine.open_session()
    with pytest.raises(CapacityError, match=r"2 of 2 open"):
        engine.open_session()
    a.close()
    engine.open_session().close()  # the closed session's sequence id is free again
    b.close()


def test_a_long_prompt_shares_each_decode_with_the_other_sessions(make_engine, tiny_models):
    """While one session reads a long prompt in chunks, another's tokens go on, in the same calls."""
    # without drafts: every decode item is one token (test_speculative.py checks drafts in shared calls)
    engine = make_engine(tiny_models["llama"], "llamacpp", prefill_chunk=16, speculative=False)
    worker = engine._worker
    with engine.open_session() as solo:
        alone = token_ids(solo.generate([5, 6, 7], greedy(30)))
    calls: list[list[int]] = []
    real_step = worker.backend.step
    worker.backend.step = lambda items: (calls.append([len(t) for _, t in items]), real_step(items))[1]
    try:
        decoding, reading = engine.open_session(), engine.open_session()
        stream = decoding.generate([5, 6, 7], greedy(30))
        next(stream)  # decoding has its first token
        long = reading.generate(list(range(100, 260)), greedy(2))  # 160 tokens: 10 chunks of 16
        progress = [c.prefill for c in long if c.prefill is not None]
        got = alone[:1] + token_ids(stream)
    finally:
        del worker.backend.step
    assert got == alone  # its tokens do not depend on who shared the decode
    assert progress == [(16 * i, 160) for i in range(1, 10)]
    mixed = [c for c in calls if 1 in c and 16 in c]
    assert len(mixed) >= 5, calls  # decode tokens and prompt chunks in one llama_decode
    decoding.close()
    reading.close()


def test_two_engines_side_by_side_each_keep_their_own_context(make_engine, tiny_models, tiny_llama_other_seed):
    first = make_engine(tiny_models["llama"], "llamacpp")
    second = make_engine(tiny_llama_other_seed, "llamacpp")
    results: dict[str, list[int]] = {}

    def run(name: str, engine: Engine) -> None:
        with engine.open_session() as s:
            results[name] = token_ids(s.generate([5, 6, 7], greedy(40)))

    threads = [threading.Thread(target=run, args=(n, e)) for n, e in (("first", first), ("second", second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with first.open_session() as s:
        assert token_ids(s.generate([5, 6, 7], greedy(40))) == results["first"]
    assert results["first"] != results["second"]


def test_chat_command_says_it_runs_on_llamacpp_and_why(tiny_models, gguf_source):
    from tests.engine.test_cli import run

    out = run("chat", "--model", str(gguf_source(tiny_models["llama"])), "--temperature", "0", "--max-tokens", "6",
              stdin="Hello\nAnd again\n/quit\n")
    assert out.returncode == 0, out.stderr
    assert "on llamacpp/" in out.stderr and "llama.cpp: a GGUF file runs as stored" in out.stderr
    assert out.stderr.count("6 tokens") == 2


def test_a_truncated_gguf_is_refused_by_name(tiny_models, gguf_source, tmp_path):
    source = gguf_source(tiny_models["llama"])
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(source.read_bytes()[: source.stat().st_size // 2])
    with pytest.raises(ModelLoadError, match="broken.gguf"):
        Engine.load(str(broken), EngineConfig(backend="llamacpp"))


def test_bench_reports_llamacpp_figures_against_the_library(tiny_models, gguf_source):
    import json

    from tests.engine.test_cli import run

    out = run("bench", "--backend", "llamacpp", "--model", str(gguf_source(tiny_models["llama"])),
              "--sessions", "1,8", "--tokens", "8", "--prefill-tokens", "64", "--json")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    assert figures["backend"] == "llamacpp" and figures["backend_reason"] == "llama.cpp: asked for"
    for key in ("decode_tok_s", "library_decode_tok_s", "decode_vs_library", "aggregate8_vs_1", "ttft_busy8_vs_idle",
                "kv_8x500_vs_4000", "state_files_8x500_vs_4000", "restore_vs_prefill", "bytes_per_session"):
        assert figures[key] > 0, key
    assert figures["kv_bytes_8x500"] == 8 * 500 * PER_TOKEN and figures["kv_bytes_4000"] == 4000 * PER_TOKEN


def test_a_reply_stops_at_a_stop_token(make_engine, tiny_models):
    engine = make_engine(tiny_models["llama"], "llamacpp")
    with engine.open_session() as s:
        reply = token_ids(s.generate([5, 6, 7], greedy(8)))
        s.reset()
        i = next(i for i in range(1, 8) if reply[i] not in reply[:i])  # a token not sampled before it
        engine._worker.codec.stop_ids = frozenset({reply[i]})  # now ends the turn
        chunks = list(s.generate([5, 6, 7], SamplingParams(temperature=0, max_tokens=8)))
    assert chunks[-1].finish_reason == "stop" and chunks[-1].token_ids == (reply[i],)
    assert [t for c in chunks for t in c.token_ids] == reply[: i + 1]
