"""Every bad argument is a named error that says what is wrong, raised before anything is queued."""

from __future__ import annotations

import re
import threading

import pytest

from engine import Engine, EngineConfig, SamplingParams
from engine.errors import InvalidRequestError, SessionClosedError

USER = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def shared_engines(tiny_models, gguf_source):
    """One engine per backend for the whole table: bad requests leave nothing behind to isolate."""
    engines: dict[str, Engine] = {}

    def get(backend: str) -> Engine:
        if backend not in engines:
            config = EngineConfig(backend=backend, dtype="float32", max_context=256)
            source = gguf_source(tiny_models["llama"]) if backend == "llamacpp" else tiny_models["llama"]
            engines[backend] = Engine.load(str(source), config)
        return engines[backend]

    yield get
    for engine in engines.values():
        engine.close()


def _sampling(**kw):
    return lambda s: s.generate([5, 6, 7], SamplingParams(**kw))


@pytest.mark.parametrize(
    "call, message",
    [
        (_sampling(seed=-1), "seed must be in [0, 2**64)"),
        (_sampling(seed=True), "seed must be an integer or None"),
        (_sampling(temperature=1e-40), "temperature must be 0 (greedy) or at least 0.0001"),
        (_sampling(temperature=None), "temperature must be a number, not None"),
        (_sampling(temperature="0.5"), "temperature must be a number, not '0.5'"),
        (_sampling(top_p="1"), "top_p must be a number, not '1'"),
        (_sampling(max_tokens=True), "max_tokens must be an integer >= 1"),
        (_sampling(max_tokens=2.0), "max_tokens must be an integer >= 1"),
        (_sampling(ignore_stop="yes"), "ignore_stop must be True or False"),
        (lambda s: s.generate([5, 6.7]), "token ids must be integers; position 1 holds 6.7"),
        (lambda s: s.generate([True, 5]), "token ids must be integers; position 0 holds True"),
        (lambda s: s.generate("hello"), "prompt_token_ids must be a sequence of integers, not str"),
        (lambda s: s.generate([5, 6], {"temperature": 0}), "params must be a SamplingParams or None, not dict"),
        (lambda s: s.chat(USER, {"temperature": 0}), "params must be a SamplingParams or None, not dict"),
        (lambda s: s.chat([{"role": "banana", "content": "x"}]), "message 0: role must be one of system, user"),
        (lambda s: s.chat([{"role": "user", "content": None}]), "message 0: content must be a string, not NoneType"),
        (lambda s: s.chat({"role": "user", "content": "x"}), "messages must be a non-empty list"),
    ],
)
def test_bad_requests_are_named_before_anything_is_queued(shared_engines, backend, call, message):
    with shared_engines(backend).open_session() as s:
        with pytest.raises(InvalidRequestError, match=re.escape(message)):
            call(s)
        assert not s.busy and s.tokens == [] and s.state_nbytes == 0
        assert len(list(s.generate([5, 6], SamplingParams(temperature=0, max_tokens=2, ignore_stop=True)))) == 2


def test_tiny_temperatures_that_are_accepted_sample_without_nan(tiny_engine):
    with tiny_engine.open_session() as s:
        greedy = [t for c in s.generate([5, 6, 7], SamplingParams(temperature=0, max_tokens=4, ignore_stop=True))
                  for t in c.token_ids]
        s.reset()
        cold = [t for c in s.generate([5, 6, 7], SamplingParams(temperature=1e-4, seed=1, max_tokens=4,
                                                                 ignore_stop=True)) for t in c.token_ids]
        assert cold == greedy


@pytest.mark.parametrize(
    "config, message",
    [
        (dict(max_context="4096"), "max_context must be an integer, not '4096'"),
        (dict(max_context=4096.0), "max_context must be an integer, not 4096.0"),
        (dict(max_sessions="2"), "max_sessions must be an integer or None, not '2'"),
        (dict(memory_budget=1.5), "memory_budget must be an integer or None, not 1.5"),
        (dict(prefill_chunk=None), "prefill_chunk must be an integer, not None"),
        (dict(max_batch=True), "max_batch must be an integer, not True"),
        (dict(backend=None), "backend must be a string, not None"),
        (dict(deterministic="no"), "deterministic must be True or False, not 'no'"),
    ],
)
def test_bad_engine_config_types(config, message):
    with pytest.raises(InvalidRequestError, match=re.escape(message)):
        EngineConfig(**config)


def test_bad_load_and_open_arguments(tiny_engine, tiny_models):
    from engine import Engine

    with pytest.raises(InvalidRequestError, match="source must be a string or a path, not int"):
        Engine.load(42)
    with pytest.raises(InvalidRequestError, match="config must be an EngineConfig, not dict"):
        Engine.load(str(tiny_models["llama"]), {"backend": "torch"})
    with pytest.raises(InvalidRequestError, match="restore_from must be a path, not int"):
        tiny_engine.open_session(restore_from=3)


@pytest.mark.parametrize("request_", ["reset", "save_state"])
def test_reset_or_save_racing_close_is_a_closed_session(tiny_engine, tmp_path, request_):
    """The caller's check passed, then close() ran first on the engine thread: a named error, not KeyError."""
    s = tiny_engine.open_session()
    held, gate = threading.Event(), threading.Event()
    tiny_engine._post(lambda w: (held.set(), gate.wait(30)))  # hold the engine thread with an empty queue
    held.wait(30)
    closing = threading.Thread(target=s.close)
    closing.start()
    while tiny_engine._runner._requests.qsize() < 1:  # the close is queued first
        closing.join(0.01)
    queued = tiny_engine._post(
        (lambda w: w.reset(s)) if request_ == "reset" else (lambda w: w.save_state(s, tmp_path / "s.safetensors"))
    )
    gate.set()
    closing.join(30)
    with pytest.raises(SessionClosedError, match=f"session {s.id} is closed"):
        queued.result(30)
