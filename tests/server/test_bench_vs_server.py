"""`python -m engine bench --vs-server URL`: Confab's server beside another, the same client for both.
Here the other is Confab's own server on the same tiny model, so the two must agree on what was asked."""

from __future__ import annotations

import json

import pytest

from engine.bench.vs_server import agent_messages, measure_both, prompt_figures, token_counter, vs_server


def test_an_agent_prompt_has_the_length_asked_and_its_prefix_repeats(tiny_models):
    count = token_counter(str(tiny_models["llama"]))
    first = agent_messages(300, count, "n1", "Rename it.")
    again = agent_messages(300, count, "n1", "Add type hints.")
    other = agent_messages(300, count, "n2", "Rename it.")
    assert 300 <= count(first[0]["content"]) < 420
    assert first[0] == again[0] and first[1] != again[1], "warm: the same prefix, another task"
    assert first[0]["content"].startswith("Session n1.") and other[0] != first[0], "cold: a prefix not seen"
    assert '"name": "tool_0"' in first[0]["content"] and "```python" in first[0]["content"]
    assert '"name": "tool_7"' in agent_messages(4000, count, "n3", "Go.")[0]["content"]


def test_both_servers_are_measured_the_same_way(serve, tiny_engine, tiny_models):
    other = serve(tiny_engine)
    said: list[str] = []
    figures = vs_server(other.url, str(tiny_models["llama"]), None, [1, 2], 4, [120], said.append,
                        serve_args=["--backend", "torch", "--dtype", "float32"], rounds=2)
    json.dumps(figures)  # what --json prints
    for side in (figures["confab"], figures["other"]):
        assert set(side["decode_tok_s"]) == {"1", "2"} and all(v > 0 for v in side["decode_tok_s"].values())
        assert side["ttft_cold_s"]["120"] > 0 and side["ttft_warm_s"]["120"] > 0
    assert figures["other"]["url"] == other.url and figures["other"]["model"]
    assert set(figures["confab_vs_other"]["decode_tok_s"]) == {"1", "2"}
    assert any("agent prompt" in line for line in said)
    assert len(figures["rounds"]) == 2 and all(set(r["decode_tok_s"]) == {"1", "2"} for r in figures["rounds"])
    assert sum("round 2" in line for line in said) == 3, "each figure of round 2 said as it is taken"


class _Timed:
    """A client whose figures are its speed times a machine that slows down with every call."""

    def __init__(self, name: str, speed: float, calls: list) -> None:
        self.name, self.speed, self.calls = name, speed, calls

    def _drift(self) -> float:
        self.calls.append(self.name)
        return 1.0 - 0.02 * len(self.calls)

    def stream(self, messages, max_tokens):
        if len(messages) == 1 and messages[0]["content"] == "Hello":  # the warm-up
            return 0.0, max_tokens
        return 1.0 / (self.speed * self._drift()), max_tokens

    def aggregate(self, clients, max_tokens):
        return self.speed * self._drift()


def test_each_figure_is_taken_from_both_back_to_back_the_order_swapped_each_round():
    calls: list[str] = []
    sides = {"other": _Timed("other", 10.0, calls), "confab": _Timed("confab", 10.0, calls)}
    taken = measure_both(sides, lambda text: len(text.split()), [8], 4, [], 4, lambda line: None)
    assert calls == ["other", "confab", "confab", "other", "other", "confab", "confab", "other"]
    ratios = [c["decode_tok_s"]["8"] / o["decode_tok_s"]["8"] for c, o in zip(taken["confab"], taken["other"])]
    assert ratios[0] < 1 < ratios[1], "the drift favours whoever goes first"
    assert abs(sum(ratios) / len(ratios) - 1) < 0.01, "and swapping the order cancels it out"


class _Asked:
    """A client that answers each request in a given time and keeps what it was asked."""

    def __init__(self, times: list[float]) -> None:
        self.times, self.asked = times, []

    def stream(self, messages, max_tokens):
        self.asked.append(messages)
        return self.times[len(self.asked) - 1], max_tokens


def test_the_warm_figure_is_the_median_of_three_tasks_on_the_cold_prefix():
    """One warm request takes a few tenths of a second and moved by ±20 % between requests: one
    request per round made a ratio of noise."""
    client = _Asked([9.0, 0.30, 0.90, 0.31])
    cold, warm = prompt_figures(client, lambda text: len(text.split()), 200)
    assert (cold, warm) == (9.0, 0.31)
    systems = {m[0]["content"] for m in client.asked}
    tasks = [m[1]["content"] for m in client.asked]
    assert len(systems) == 1, "every warm request shares the cold one's prefix"
    assert len({t.split()[0] for t in tasks}) == 4, "each task starts with another word: each is read whole"


def _no_servers(monkeypatch, started: list) -> None:
    """vs_server's servers and clients replaced: what it would start Confab's server with is recorded."""
    import engine.bench.vs_server as vs

    monkeypatch.setattr(vs, "token_counter", lambda model: lambda text: len(text.split()))
    monkeypatch.setattr(vs, "wait_ready", lambda url, process=None, limit_s=300: True)
    monkeypatch.setattr(vs, "start_confab", lambda model, context, port, extra: started.append(context) or object())
    monkeypatch.setattr(vs, "stop", lambda process: None)
    figures = {"decode_tok_s": {"1": 1.0}, "ttft_cold_s": {}, "ttft_warm_s": {}}
    monkeypatch.setattr(vs, "measure_both", lambda *a: {"other": [figures], "confab": [figures]})


def test_confab_gets_the_context_asked_so_its_pool_can_match_the_other_servers(monkeypatch):
    """Beside `llama-server -c 16384`, the default context (prompt + reply + 512) gave Confab a pool of
    2,560 tokens in a decode-only run: it parked idle sessions that llama-server kept, and its eight
    clients lost a sixth of their speed from the third round on."""
    started: list = []
    _no_servers(monkeypatch, started)
    vs_server("http://127.0.0.1:1", "m.gguf", "other", [1], 128, [], lambda line: None, context=4096)
    vs_server("http://127.0.0.1:1", "m.gguf", "other", [1], 128, [1500], lambda line: None)
    assert started == [4096, 1500 + 128 + 512]


def test_a_context_too_short_for_the_prompts_is_refused_before_any_server_starts(monkeypatch):
    started: list = []
    _no_servers(monkeypatch, started)
    with pytest.raises(ValueError, match=r"--vs-context 4096 is shorter .* \(4640 tokens\)"):
        vs_server("http://127.0.0.1:1", "m.gguf", "other", [1], 128, [4000], lambda line: None, context=4096)
    assert started == []
