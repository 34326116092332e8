"""Context policies (engine.reply.truncation): refuse with the numbers, drop the middle, or a rolling window,
and what was cut is said. A fake token count (a fixed cost per message) makes the arithmetic plain."""

from __future__ import annotations

import pytest

from engine.errors import ContextOverflowError, InvalidRequestError
from engine.reply.truncation import (HEADER, fit_messages, fit_tokens, reply_room, truncation_fields)

PER_MESSAGE = 10


def count(messages: list[dict]) -> int:
    return PER_MESSAGE * len(messages) + 3  # +3: the template's opening


def conversation(turns: int, system: bool = True) -> list[dict]:
    out = [{"role": "system", "content": "sys"}] if system else []
    for i in range(turns):
        out += [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]
    return out + [{"role": "user", "content": "latest"}]


def contents(messages: list[dict]) -> list[str]:
    return [m["content"] for m in messages]


@pytest.mark.parametrize("policy", ["refuse", "middle", "rolling"])
def test_a_prompt_that_fits_is_left_alone(policy):
    messages = conversation(2)
    assert fit_messages(messages, count, 1000, policy, reserve=100) == (messages, None)


def test_refuse_says_the_numbers():
    with pytest.raises(ContextOverflowError, match=r"the prompt has 123 tokens; this model's context is 100 tokens"):
        fit_messages(conversation(5), count, 100, "refuse")


def test_refuse_only_needs_room_for_one_token():
    """As before policies existed: the reply gets what is left (and says "length" if cut)."""
    messages = conversation(4)  # 103 tokens
    assert fit_messages(messages, count, 104, "refuse", reserve=50) == (messages, None)


def test_rolling_drops_the_oldest_turns_and_keeps_the_system_prompt():
    messages = conversation(5)  # 12 messages, 123 tokens
    kept, cut = fit_messages(messages, count, 100, "rolling", reserve=20)
    assert contents(kept) == ["sys", "q3", "a3", "q4", "a4", "latest"]
    assert count(kept) <= 80
    assert (cut.policy, cut.dropped_messages, cut.prompt_tokens_before, cut.prompt_tokens, cut.context) == (
        "rolling", 6, 123, 63, 100)


def test_middle_keeps_the_first_exchange_and_the_latest():
    kept, cut = fit_messages(conversation(5), count, 100, "middle", reserve=20)
    assert contents(kept) == ["sys", "q0", "a0", "q4", "a4", "latest"]
    assert cut.policy == "middle" and cut.dropped_messages == 6


def test_a_tool_call_and_its_results_go_together():
    messages = [{"role": "user", "content": "weather?"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
                {"role": "tool", "content": "sunny", "tool_call_id": "c1"},
                {"role": "assistant", "content": "It is sunny."},
                {"role": "user", "content": "and tomorrow?"}]
    kept, cut = fit_messages(messages, count, 40, "rolling", reserve=10)
    assert contents(kept) == ["and tomorrow?"] and cut.dropped_messages == 4


def test_the_latest_turn_is_never_cut():
    long_turn = [{"role": "user", "content": "x"}] + [{"role": "tool", "content": "r"}] * 20
    with pytest.raises(ContextOverflowError, match=r"the latest message \(with the system prompt\) takes 223 tokens"):
        fit_messages(conversation(2) + long_turn, count, 100, "rolling")


def test_the_latest_turn_alone_is_kept_even_with_less_room_than_asked():
    kept, cut = fit_messages(conversation(3), count, 30, "rolling", reserve=25)
    assert contents(kept) == ["sys", "latest"] and cut.prompt_tokens == 23


def test_an_unknown_policy_is_refused():
    with pytest.raises(InvalidRequestError, match="context policy must be one of refuse, middle, rolling"):
        fit_messages(conversation(1), count, 1000, "shrink")


def test_token_prompts():
    prompt = list(range(100))
    assert fit_tokens(prompt, 200, "refuse") == (prompt, None)
    with pytest.raises(ContextOverflowError, match="the prompt has 100 tokens"):
        fit_tokens(prompt, 50, "refuse")
    kept, cut = fit_tokens(prompt, 50, "rolling", reserve=10)
    assert kept == list(range(60, 100)) and cut.prompt_tokens == 40
    kept, cut = fit_tokens(prompt, 50, "middle", reserve=10)
    assert kept == list(range(10)) + list(range(70, 100)) and cut.policy == "middle"


def test_reply_room():
    assert reply_room(4096, None) == 1024
    assert reply_room(4096, 100) == 100
    assert reply_room(4096, 10_000) == 2048


def test_the_api_field_and_header():
    assert truncation_fields(None) == ({"truncated": None}, {})
    _, cut = fit_messages(conversation(5), count, 100, "rolling", reserve=20)
    field, headers = truncation_fields(cut)
    assert field["truncated"] == {"policy": "rolling", "dropped_messages": 6, "prompt_tokens_before": 123,
                                  "prompt_tokens": 63, "context": 100}
    assert headers[HEADER] == ("policy=rolling; dropped_messages=6; prompt_tokens_before=123; prompt_tokens=63; "
                               "context=100")
    assert "6 earlier messages from the start left out (123 → 63 tokens)" in cut.note()
