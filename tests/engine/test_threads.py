"""Torch's thread count and OpenMP wait policy: set before torch loads, CONFAB_THREADS overrides; llama.cpp's
threads as asked, and a change of its count mid-reply changes no token."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engine.backends.torch_threads import thread_count


def test_confab_threads_overrides_the_count():
    assert thread_count("3") == 3


@pytest.mark.parametrize("bad", ["0", "-1", "many"])
def test_bad_confab_threads_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="CONFAB_THREADS must be a positive integer"):
        thread_count(bad)


def test_default_count_is_the_usable_cores():
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert 1 <= thread_count("") <= usable


def _run(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "CONFAB_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True,
                         check=True, cwd=os.getcwd())
    return out.stdout.strip()


def test_importing_the_engine_first_sets_a_passive_wait_policy():
    code = "import os, engine, torch; print(os.environ.get('OMP_WAIT_POLICY'))"
    assert _run(code) == "PASSIVE"


def test_the_users_own_policy_and_a_torch_imported_earlier_are_left_alone():
    assert _run("import os, engine; print(os.environ['OMP_WAIT_POLICY'])", OMP_WAIT_POLICY="ACTIVE") == "ACTIVE"
    assert _run("import os, torch, engine; print(os.environ.get('OMP_WAIT_POLICY'))") == "None"


def test_engine_applies_confab_threads(tiny_models):
    code = (
        "import torch\nfrom engine import Engine, EngineConfig\n"
        f"e = Engine.load({str(tiny_models['llama'])!r}, EngineConfig(backend='torch', dtype='float32'))\n"
        "print(torch.get_num_threads()); e.close()"
    )
    assert _run(code, CONFAB_THREADS="1") == "1"


def test_engine_refuses_a_bad_confab_threads(tiny_models):
    code = (
        "from engine import Engine, EngineConfig\nfrom engine.errors import ModelLoadError\n"
        "try:\n"
        f"    Engine.load({str(tiny_models['llama'])!r}, EngineConfig(backend='torch'))\n"
        "except ModelLoadError as e:\n    print(e)"
    )
    assert "CONFAB_THREADS must be a positive integer" in _run(code, CONFAB_THREADS="zero")


def test_the_configs_threads_win_over_confab_threads(tiny_models):
    code = (
        "import torch\nfrom engine import Engine, EngineConfig\n"
        f"e = Engine.load({str(tiny_models['llama'])!r}, EngineConfig(backend='torch', dtype='float32', threads=1))\n"
        "print(torch.get_num_threads()); e.close()"
    )
    assert _run(code, CONFAB_THREADS="2") == "1"


def test_llama_cpp_computes_on_the_threads_asked_for(make_engine, tiny_models):
    pytest.importorskip("llama_cpp")
    engine = make_engine(tiny_models["llama"], "llamacpp", threads=1)
    assert engine._worker.backend.threads == 1


def test_replies_keep_their_tokens_when_llama_cpp_changes_its_threads_mid_reply(make_engine, tiny_models,
                                                                              monkeypatch):
    """The thread policy drops or adds a decode thread mid-reply when a neighbour takes a core (another
    test worker, say): every reply must still be the one a fixed count gives (ggml splits an op's rows
    among its threads, never one row's sum; the bundled model's logits were bitwise equal too)."""
    pytest.importorskip("llama_cpp")
    from engine import SamplingParams
    from engine.backends.thread_policy import ThreadPolicy
    from tests.engine.helpers import token_ids

    params = SamplingParams(temperature=0, max_tokens=48, ignore_stop=True)
    prompts = [list(range(100 + 7 * i, 130 + 7 * i)) for i in range(4)]

    def replies(engine) -> list[list[int]]:
        sessions = [engine.open_session() for _ in prompts]
        streams = [s.generate(p, params) for s, p in zip(sessions, prompts)]  # decoded in joint rounds
        return [token_ids(stream) for stream in streams]

    fixed = replies(make_engine(tiny_models["llama"], "llamacpp", threads=2))
    calls = []
    monkeypatch.setattr(ThreadPolicy, "record", lambda self, seconds, tokens, cpu_seconds=None, context=0: calls.append(tokens) or 1 + len(calls) % 2)
    assert replies(make_engine(tiny_models["llama"], "llamacpp", threads=2)) == fixed
    assert len(calls) > 20, "the count changed after every decode call"


def test_a_prompt_is_read_on_the_count_before_a_drop_still_being_judged(make_engine, tiny_models, monkeypatch):
    """A drop decided on a few slow calls at the end of one reply, not judged yet, doubled the time of
    the next cold prompt (1,500 tokens: 15.3 s instead of 7.9) when it stayed for the prompt read."""
    pytest.importorskip("llama_cpp")
    import llama_cpp

    from engine import SamplingParams

    engine = make_engine(tiny_models["llama"], "llamacpp", threads=2)
    backend = engine._worker.backend
    policy = backend.thread_policy
    policy._dropped_from, policy.threads = (2, 0.01), 1  # a drop the next calls were to judge
    counts: list[int] = []
    real = llama_cpp.llama_set_n_threads
    monkeypatch.setattr(llama_cpp, "llama_set_n_threads", lambda ctx, n, n_batch: counts.append(n) or real(ctx, n, n_batch))
    session = engine.open_session()
    list(session.generate(list(range(100, 160)), SamplingParams(temperature=0, max_tokens=1)))
    assert counts[:1] == [2] and policy.threads == 2, "back to the count before the drop, before the prompt"


@pytest.mark.parametrize("bad", [0, -2, 1.5, "2"])
def test_a_bad_thread_count_is_named(bad):
    from engine import EngineConfig, InvalidRequestError

    with pytest.raises(InvalidRequestError, match="threads must be a whole number"):
        EngineConfig(threads=bad)
