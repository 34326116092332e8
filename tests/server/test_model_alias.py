"""Model names agent clients send: aliases (`serve --model-alias NAME=TARGET`) and `--any-model-name`,
through the official openai and anthropic clients; any other name is still 404 naming the served id."""

from __future__ import annotations

import anthropic
import openai
import pytest

from engine.__main__ import main
from engine.server.model_names import ModelNames
from tests.server.helpers import client, http

ASK = [{"role": "user", "content": "Hello"}]


def sdk(server) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url.removesuffix("/v1"), api_key="none", max_retries=0, timeout=120)


def _every_api_answers_as(server, name: str) -> None:
    chat = client(server).chat.completions.create(model=name, messages=ASK, max_tokens=2, temperature=0)
    assert chat.model == name and chat.usage.completion_tokens >= 1
    response = client(server).responses.create(model=name, input="Hello", max_output_tokens=2)
    assert response.model == name and response.usage.output_tokens >= 1
    message = sdk(server).messages.create(model=name, messages=ASK, max_tokens=2)
    assert message.model == name and message.usage.output_tokens >= 1


def test_an_alias_works_on_chat_responses_and_messages(serve, tiny_engine):
    server = serve(tiny_engine, model_names=ModelNames(("claude-sonnet-4-5", "gpt-5-codex")))
    _every_api_answers_as(server, "claude-sonnet-4-5")
    _every_api_answers_as(server, "gpt-5-codex")
    streamed = client(server).chat.completions.create(model="gpt-5-codex", messages=ASK, max_tokens=2, stream=True)
    assert {chunk.model for chunk in streamed} == {"gpt-5-codex"}


def test_models_lists_the_served_model_first_then_its_aliases(serve, tiny_engine):
    server = serve(tiny_engine, model_names=ModelNames(("claude-sonnet-4-5",)))
    data = http(server).get("/v1/models").json()["data"]
    assert [m["id"] for m in data] == [tiny_engine.source, "claude-sonnet-4-5"]
    assert "alias_of" not in data[0] and data[1]["alias_of"] == tiny_engine.source
    assert client(server).models.retrieve("claude-sonnet-4-5").id == "claude-sonnet-4-5"


def test_an_unknown_name_is_still_404_naming_the_served_model(serve, tiny_engine):
    server = serve(tiny_engine, model_names=ModelNames(("claude-sonnet-4-5",)))
    with pytest.raises(openai.NotFoundError) as caught:
        client(server).chat.completions.create(model="gpt-5-codex", messages=ASK, max_tokens=2)
    assert tiny_engine.source in str(caught.value)
    with pytest.raises(anthropic.NotFoundError) as caught:
        sdk(server).messages.create(model="claude-opus-4", messages=ASK, max_tokens=2)
    assert tiny_engine.source in caught.value.body["error"]["message"]
    plain = serve(tiny_engine)  # the default: only the model's own names
    with pytest.raises(openai.NotFoundError):
        client(plain).responses.create(model="claude-sonnet-4-5", input="Hello", max_output_tokens=2)


def test_any_model_name_accepts_whatever_a_client_sends(serve, tiny_engine):
    server = serve(tiny_engine, model_names=ModelNames(any_name=True))
    _every_api_answers_as(server, "gpt-5-codex")
    _every_api_answers_as(server, "claude-sonnet-4-5-20250929")
    assert [m["id"] for m in http(server).get("/v1/models").json()["data"]] == [tiny_engine.source]


@pytest.mark.parametrize("alias", ["claude-sonnet-4-5", "=bundled:x", "claude=", "a=b=c", " = "])
def test_bad_alias_syntax_is_a_usage_error(alias, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["serve", "--model-alias", alias])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "--model-alias" in err and "NAME=TARGET" in err


def test_an_alias_of_another_model_is_refused_after_loading(tiny_models, capsys):
    args = ["serve", "--model", str(tiny_models["llama"]), "--backend", "torch", "--dtype", "float32",
            "--max-context", "256", "--port", "0", "--model-alias", "gpt-5-codex=some-other-model"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "gpt-5-codex=some-other-model" in err and "served model" in err


def test_serve_help_names_the_switches(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert "--model-alias NAME=TARGET" in out and "--any-model-name" in out
    assert "--prefix-cache-dir DIR" in out and "--prefix-cache-size SIZE" in out and "(default 4G)" in out
