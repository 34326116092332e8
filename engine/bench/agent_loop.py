"""`python -m engine bench --agent-loop --json`: a 20-request agent loop replayed against `engine
serve`'s chat API, with the prefix machinery of this turn and without it, in the same run (issue 39).

The loop is scripted, not sampled, so every run sends the same bytes: a coding agent with a long
system prompt and tool list works on a task, reading files and running tests (its replies and the
tools' outputs are written here); after 7 turns it starts a sub-agent with the same system prompt on
a task of its own, and the two alternate, as Claude Code's and Codex's sub-agents do. Each request
asks for a short reply (greedy), which the loop does not keep: the next request carries the script's
reply instead, as a replayed recording would.

Figures: wall time of the whole loop and time to first token per request, with prefix sharing
(engine/prefix_share.py) and without; `identical`: every reply the same either way.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from typing import Callable

REQUESTS = 20
SUB_AGENT_AFTER = 7
REPLY_TOKENS = 16
TOOL_NAMES = ("read_file", "write_file", "edit_file", "list_dir", "search", "run", "run_tests", "git_diff",
              "git_commit", "web_fetch", "ask_user", "spawn_agent")


def system_prompt() -> str:
    """About 3,400 tokens (SmolLM2's tokenizer) of rules and tool schemas, as agent clients send on every call."""
    rules = ("You are a careful coding agent working in a Python repository. Explain your plan in one line, "
             "then call one tool at a time, read what it returns, and report what changed. Never invent a "
             "file's content; read it first. Keep edits small and run the tests after each. ") * 6
    tools = []
    for i, name in enumerate(TOOL_NAMES):
        params = {f"{name}_arg{j}": {"type": "string", "description": f"argument {j} of {name}: what it names, "
                                      f"where it applies, and the default when it is left out ({i}.{j})"}
                  for j in range(4)}
        tools.append({"type": "function", "function": {"name": name, "description": (
            f"{name.replace('_', ' ')}: use it when the task needs it; it returns text, or an error that says "
            "why, which you read before the next step. "), "parameters": {"type": "object",
                                                                           "properties": params}}})
    return rules + "\nTools:\n" + json.dumps(tools)


def _code(rng: random.Random, lines: int) -> str:
    """A Python file's worth of text, the same for the same generator state."""
    out = []
    for n in range(lines // 4):
        name = f"step_{rng.randrange(1000)}"
        out += [f"def {name}(value, limit={rng.randrange(2, 99)}):",
                f"    \"\"\"Clamp value for stage {n}.\"\"\"",
                f"    return min(value + {rng.randrange(10)}, limit)", ""]
    return "\n".join(out)


def script() -> list[list[dict]]:
    """The 20 requests, each the whole conversation of its agent so far (OpenAI chat messages)."""
    rng = random.Random(39)
    system = {"role": "system", "content": system_prompt()}
    agents = {"main": [system, {"role": "user", "content": "Fix the failing test in parser.py and add a test "
                                                           "for empty input."}],
              "sub": [system, {"role": "user", "content": "Sub-agent: find every caller of parse_header and "
                                                          "list them with their files."}]}
    order = ["main"] * SUB_AGENT_AFTER + ["sub", "main"] * ((REQUESTS - SUB_AGENT_AFTER) // 2 + 1)
    requests = []
    for turn, who in enumerate(order[:REQUESTS]):
        history = agents[who]
        requests.append([dict(m) for m in history])
        tool = TOOL_NAMES[rng.randrange(len(TOOL_NAMES) - 2)]
        history.append({"role": "assistant", "content": f"Step {turn}: I will call {tool} next.\n"
                                                         f"{{\"tool\": \"{tool}\", \"path\": \"pkg/mod_{turn}.py\"}}"})
        history.append({"role": "user", "content": f"[{tool} returned]\n{_code(rng, 12 + rng.randrange(12))}"})
    return requests


def agent_loop_figures(model: str, say: Callable[..., None]) -> dict:
    from ..engine import Engine
    from ..types import EngineConfig

    requests = script()
    runs = {}
    for share in (True, False):
        say(f"{REQUESTS}-request agent loop, prefix sharing {'on' if share else 'off'}…")
        engine = Engine.load(model, EngineConfig(backend="llamacpp", max_context=16384, share_prefixes=share,
                                                 speculative=False))
        try:
            runs[share] = _replay(engine, requests, say)
        finally:
            engine.close()
    on, off = runs[True], runs[False]
    return {
        "model": model, "requests": REQUESTS, "reply_tokens": REPLY_TOKENS,
        "prompt_tokens_first_last": [on["prompt_tokens"][0], on["prompt_tokens"][-1]],
        "wall_s": round(on["wall"], 2), "wall_s_without_sharing": round(off["wall"], 2),
        "wall_ratio": round(on["wall"] / off["wall"], 3),
        "ttft_median_s": round(statistics.median(on["ttft"]), 3),
        "ttft_median_s_without_sharing": round(statistics.median(off["ttft"]), 3),
        "sub_agent_first_ttft_s": round(on["ttft"][SUB_AGENT_AFTER], 3),
        "sub_agent_first_ttft_s_without_sharing": round(off["ttft"][SUB_AGENT_AFTER], 3),
        "prefilled_tokens": sum(on["prefilled"]), "prefilled_tokens_without_sharing": sum(off["prefilled"]),
        "identical": on["replies"] == off["replies"],
    }


def _replay(engine, requests: list[list[dict]], say: Callable[..., None]) -> dict:
    """Every request through `engine serve`'s chat API on a loopback port, one after another."""
    import openai

    from ..server import BackgroundServer, EngineHost, ServerSettings

    server = BackgroundServer(EngineHost(engine), ServerSettings(), port=0).start()
    client = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0)
    out: dict[str, list] = {"ttft": [], "replies": [], "prompt_tokens": [], "prefilled": []}
    try:
        began = time.perf_counter()
        for messages in requests:
            sent = time.perf_counter()
            first, text, usage = None, [], None
            for event in client.chat.completions.create(
                    model=engine.source, messages=messages, max_tokens=REPLY_TOKENS, temperature=0, stream=True,
                    stream_options={"include_usage": True}, extra_body={"ignore_eos": True}):
                for choice in event.choices:
                    if choice.delta.content:
                        first = first or time.perf_counter()
                        text.append(choice.delta.content)
                usage = event.usage or usage
            out["ttft"].append((first or time.perf_counter()) - sent)
            out["replies"].append("".join(text))
            out["prompt_tokens"].append(usage.prompt_tokens if usage else 0)
            cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", 0) or 0
            out["prefilled"].append((usage.prompt_tokens if usage else 0) - cached)
            say(f"  request {len(out['ttft'])}/{len(requests)}: {out['prompt_tokens'][-1]:,} prompt tokens, "
                f"{out['prefilled'][-1]:,} read, first token in {out['ttft'][-1]:.2f} s")
        out["wall"] = time.perf_counter() - began
        return out
    finally:
        client.close()
        server.stop()
