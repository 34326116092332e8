"""The scripted agent loop `bench --agent-loop` replays: the same requests every run, each agent's
request extending its previous one, a sub-agent on the same system prompt after 7 requests."""

from __future__ import annotations

from engine.bench.agent_loop import REQUESTS, SUB_AGENT_AFTER, script


def test_the_loop_is_the_same_every_run_and_grows_like_an_agents():
    requests = script()
    assert requests == script() and len(requests) == REQUESTS
    system = requests[0][0]
    assert all(r[0] == system for r in requests), "one system prompt for the agent and its sub-agent"
    sub_first = requests[SUB_AGENT_AFTER]
    assert sub_first[1] != requests[0][1] and len(sub_first) == 2
    by_agent: dict[str, list] = {}
    for r in requests:
        earlier = by_agent.setdefault(r[1]["content"], [])
        if earlier:
            assert r[: len(earlier[-1])] == earlier[-1], "each request extends that agent's previous one"
        earlier.append(r)
    assert sorted(len(v) for v in by_agent.values()) == [7, 13]
