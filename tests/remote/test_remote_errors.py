"""Each way a server can be unusable has its own message (the Connect dialog and the CLI show it)."""

from __future__ import annotations

import pytest

from engine import RemoteEngine, SamplingParams
from engine.remote import (AuthenticationFailedError, NotOpenAIServerError, RemoteError, ServerUnreachableError,
                           list_models)
from engine.remote.session import request_options
from tests.remote.serving import free_port
from tests.remote.stubs import http_stub, silent_socket


def test_refused_and_timeout_are_unreachable():
    with pytest.raises(ServerUnreachableError, match="connection refused"):
        list_models(f"http://127.0.0.1:{free_port()}/v1")
    with silent_socket() as url, pytest.raises(ServerUnreachableError, match="timeout"):
        list_models(url, timeout_s=0.5)


def test_a_404_without_an_openai_error_body_is_not_an_openai_api():
    with http_stub(404, b"<html>nothing here</html>") as url, pytest.raises(NotOpenAIServerError, match="404"):
        list_models(url)


def test_an_unknown_model_on_a_real_server_says_so_not_not_openai(bundled_server):
    with pytest.raises(RemoteError, match="no model 'gpt-9'"):
        RemoteEngine.connect(bundled_server.url, model="gpt-9")
    engine = RemoteEngine(bundled_server.url, None, "gpt-9", 2)  # skip the check: the server says it
    try:
        with engine.open_session() as s, pytest.raises(RemoteError) as caught:
            s.chat([{"role": "user", "content": "hi"}], SamplingParams(max_tokens=2)).text()
        assert not isinstance(caught.value, (NotOpenAIServerError, AuthenticationFailedError))
        assert "gpt-9" in str(caught.value)
    finally:
        engine.close()


def test_only_neutral_free_extensions_are_sent():
    assert request_options(SamplingParams(temperature=0, max_tokens=5)) == {"temperature": 0, "max_tokens": 5}
    options = request_options(SamplingParams(top_k=40, min_p=0.05, seed=3, ignore_stop=True))
    assert options["seed"] == 3
    assert options["extra_body"] == {"top_k": 40, "min_p": 0.05, "ignore_eos": True}
    penalized = request_options(SamplingParams(presence_penalty=0.5, frequency_penalty=0.25,
                                               repetition_penalty=1.1, repeat_last_n=128))
    assert (penalized["presence_penalty"], penalized["frequency_penalty"]) == (0.5, 0.25)
    assert penalized["extra_body"] == {"repetition_penalty": 1.1, "repeat_last_n": 128}
