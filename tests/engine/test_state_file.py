"""save_state / restore_from round-trip a session, and refuse another model's state by name."""

from __future__ import annotations

import pytest

from engine import SamplingParams
from engine.errors import SessionBusyError, StateFileError
from tests.engine.helpers import prompt_ids, token_ids

PARAMS = SamplingParams(temperature=0, max_tokens=24, ignore_stop=True)


def test_restored_session_continues_like_the_original(make_engine, tiny_models, backend, tmp_path):
    engine = make_engine(tiny_models["llama"], backend)
    path = tmp_path / "a.state"
    with engine.open_session() as original:
        token_ids(original.generate(prompt_ids(engine, "Once upon a time there was"), PARAMS))
        original.save_state(path)
        tokens = original.tokens
        follow_up = tokens + prompt_ids(engine, " and then")
        expected = token_ids(original.generate(follow_up, PARAMS))
    with engine.open_session(restore_from=path) as restored:
        assert restored.tokens == tokens
        assert restored.state_nbytes > 0
        chunks = list(restored.generate(follow_up, PARAMS))
        assert [t for c in chunks for t in c.token_ids] == expected
        assert chunks[-1].stats.prefilled_tokens == len(follow_up) - len(tokens) + 1  # warm, not re-prefilled


def test_restored_chat_keeps_its_warm_resume(make_engine, tiny_models, backend, tmp_path):
    engine = make_engine(tiny_models["qwen3"], backend)
    messages = [{"role": "user", "content": "hello"}]
    with engine.open_session() as s:
        reply = "".join(c.text for c in s.chat(messages, SamplingParams(temperature=0, max_tokens=8)))
        s.save_state(tmp_path / "c.state")
    messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": "again"}]
    with engine.open_session(restore_from=tmp_path / "c.state") as s:
        last = list(s.chat(messages, SamplingParams(temperature=0, max_tokens=4)))[-1]
        assert last.stats.prefilled_tokens < 20


def test_state_from_another_model_is_refused(make_engine, tiny_models, tiny_llama_other_seed, backend, tmp_path):
    first = make_engine(tiny_models["llama"], backend)
    other = make_engine(tiny_llama_other_seed, backend)
    assert first.model_fingerprint != other.model_fingerprint
    with first.open_session() as s:
        token_ids(s.generate([5, 6, 7], PARAMS))
        s.save_state(tmp_path / "x.state")
    with pytest.raises(StateFileError, match="was saved from another model"):
        other.open_session(restore_from=tmp_path / "x.state")
    assert other.capacity().live_sessions == 0


@pytest.mark.parametrize(
    "content, message",
    [(None, "no saved state at"), (b"not a state file", "is not a readable session state")],
)
def test_missing_or_damaged_state_file(tiny_engine, tmp_path, content, message):
    path = tmp_path / "bad.state"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(StateFileError, match=message):
        tiny_engine.open_session(restore_from=path)
    assert tiny_engine.capacity().live_sessions == 0


def test_state_of_the_other_backend_is_refused_by_name(make_engine, tiny_models, tmp_path):
    torch_engine = make_engine(tiny_models["llama"], "torch")
    mlx_engine = make_engine(tiny_models["llama"], "mlx")
    with torch_engine.open_session() as s:
        token_ids(s.generate([5, 6, 7], PARAMS))
        s.save_state(tmp_path / "t.state")
    with pytest.raises(StateFileError, match="saved by the torch backend; this engine runs mlx"):
        mlx_engine.open_session(restore_from=tmp_path / "t.state")


def test_saving_while_generating_is_refused(tiny_engine, tmp_path):
    with tiny_engine.open_session() as s:
        stream = s.generate([5, 6], SamplingParams(temperature=0, max_tokens=500, ignore_stop=True))
        with pytest.raises(SessionBusyError, match="save its state when it is done"):
            s.save_state(tmp_path / "busy.state")
        stream.close()
