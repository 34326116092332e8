"""`python -m engine bench --vs-server URL`: Confab's server beside another OpenAI-compatible server
(llama.cpp's own `llama-server`, Ollama, LM Studio, vLLM…), driven by the same HTTP client in one run.

    python -m engine bench --vs-server http://127.0.0.1:8080 --model model.gguf [--json]

For each server, with the same requests in the same order:
- decode: completion tokens per second of 1 and of 8 clients at once (`--tokens` each, greedy,
  `ignore_eos`), over the wall time from the first request to the last token;
- prompt reading: time to the first token of an agent-shaped prompt (a system prompt of tool
  definitions and a file, then a task) of 1,500 and 4,000 tokens, cold (a prefix no server has
  seen: a fresh nonce on its first line) and warm (the same prefix again, another task).
Confab's server is `python -m engine serve` on `--model` in a process of its own, as a user runs it;
the other is whatever answers at URL: start it on the same file with the same threads to compare
like with like (README: "Beside llama-server"). Ratios are Confab's ÷ the other's: above 1 is faster
for tokens per second, below 1 is faster for time to first token.

Each figure is taken from both servers back to back, `--rounds` times, the order swapped every round
(other, Confab; then Confab, other). Why: on a shared machine the speed of the same build drifts by
30-40 % within minutes; one server measured after the other compared two machines. A figure is the
median over the rounds, a ratio the median of each round's own ratio (`confab_vs_other`), and every
round's ratio is kept (`rounds`) so the spread shows beside the figure.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
import uuid
from typing import Callable, Optional

import httpx

TASKS = ("Rename the function parse_rows to read_rows everywhere in the file.",
         "Add type hints to every function in the file.",
         "Explain what parse_rows_0 returns for an empty line.",
         "Write a unit test for parse_rows_1.")
"""The cold request's task, then the warm ones': each begins with another word, so each warm request
reads its whole task after the known prefix, as the first did."""
TOOL = {"type": "function", "function": {"name": "edit_file", "description": "Replace a span of a file with new text.",
                                         "parameters": {"type": "object", "properties": {
                                             "path": {"type": "string"}, "old": {"type": "string"},
                                             "new": {"type": "string"}}, "required": ["path", "old", "new"]}}}
CODE = ("def parse_rows(text: str):\n    rows = []\n    for line in text.splitlines():\n        if not line.strip():\n"
        "            continue\n        rows.append([cell.strip() for cell in line.split(',')])\n    return rows\n\n")


def agent_messages(tokens: int, count: Callable[[str], int], nonce: str, task: str) -> list[dict]:
    """A system prompt of about `tokens` tokens (up to 8 tool definitions, a third of it at most, then a
    source file) whose first line is `nonce`, then `task` as the user's message: the shape of a coding
    agent's request."""
    head = f"Session {nonce}. You are a coding agent. Use the tools to edit files.\n"
    tools: list[str] = []
    while len(tools) < 8 and count(head + "\n".join(tools)) < tokens // 3:
        tools.append(json.dumps({**TOOL, "function": {**TOOL["function"], "name": f"tool_{len(tools)}"}}))
    body, n = "", 0
    while True:
        text = f"{head}Tools:\n" + "\n".join(tools) + f"\nFile src/rows.py:\n```python\n{body}```\n"
        if count(text) >= tokens:
            return [{"role": "system", "content": text}, {"role": "user", "content": task}]
        body += CODE.replace("parse_rows", f"parse_rows_{n}")
        n += 1


class Client:
    """The one HTTP client both servers get."""

    def __init__(self, url: str, model: str) -> None:
        self.url, self.model = url.rstrip("/"), model

    def stream(self, messages: list[dict], max_tokens: int) -> tuple[float, int]:
        """(seconds to the first streamed token, completion tokens as the server counts them)."""
        body = {"model": self.model, "messages": messages, "max_tokens": max_tokens, "temperature": 0,
                "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}
        began, first, tokens = time.perf_counter(), None, 0
        with httpx.stream("POST", f"{self.url}/chat/completions", json=body, timeout=900) as reply:
            reply.raise_for_status()
            for line in reply.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if first is None and any(c.get("delta", {}).get("content") for c in chunk.get("choices") or []):
                    first = time.perf_counter() - began
                if chunk.get("usage"):
                    tokens = chunk["usage"]["completion_tokens"]
        return (first if first is not None else time.perf_counter() - began), tokens

    def aggregate(self, clients: int, max_tokens: int) -> float:
        """Completion tokens per second of `clients` streams at once."""
        counts: list[int] = []
        messages = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
        threads = [threading.Thread(target=lambda: counts.append(self.stream(messages, max_tokens)[1]))
                   for _ in range(clients)]
        began = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(counts) / (time.perf_counter() - began)


def decode_figure(client: Client, clients: int, tokens: int) -> float:
    return round(client.aggregate(clients, tokens), 1)


def prompt_figures(client: Client, count: Callable[[str], int], size: int) -> tuple[float, float]:
    """(seconds to the first token cold, then the median of three requests with the same prefix and
    another task each): a fresh nonce each call, so no server has seen the prefix before. Three, not
    one: a warm first token takes a few tenths of a second, and one request's time moved by ±20 %
    from one request to the next on the same server (a 2-core EPYC: 0.29, 0.36, 0.34 s)."""
    nonce = uuid.uuid4().hex
    cold, _ = client.stream(agent_messages(size, count, nonce, TASKS[0]), 4)
    warm = [client.stream(agent_messages(size, count, nonce, task), 4)[0] for task in TASKS[1:]]
    return round(cold, 3), round(statistics.median(warm), 3)


def measure_both(sides: dict[str, Client], count: Callable[[str], int], sessions: list[int], tokens: int,
                 prompt_sizes: list[int], rounds: int, say: Callable[[str], None]) -> dict[str, list[dict]]:
    """Every figure of both servers, each taken from one right after the other, `rounds` times with
    the order swapped each round: side name -> one dict of figures per round."""
    for client in sides.values():
        client.stream([{"role": "user", "content": "Hello"}], 8)  # warm-up: first-request costs apart
    taken: dict[str, list[dict]] = {name: [] for name in sides}
    for r in range(rounds):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        now = {name: {"decode_tok_s": {}, "ttft_cold_s": {}, "ttft_warm_s": {}} for name in sides}
        for n in sessions:
            for name in order:
                now[name]["decode_tok_s"][str(n)] = decode_figure(sides[name], n, tokens)
            say(f"  round {r + 1}, {n} client{'s' * (n > 1)}: "
                + ", ".join(f"{name} {now[name]['decode_tok_s'][str(n)]} tok/s" for name in sides))
        for size in prompt_sizes:
            for name in order:
                now[name]["ttft_cold_s"][str(size)], now[name]["ttft_warm_s"][str(size)] = prompt_figures(
                    sides[name], count, size)
            times = {name: (now[name]["ttft_cold_s"][str(size)], now[name]["ttft_warm_s"][str(size)]) for name in sides}
            say(f"  round {r + 1}, {size}-token agent prompt, first token cold / with its prefix known: "
                + ", ".join(f"{name} {cold:.2f} / {warm:.2f} s" for name, (cold, warm) in times.items()))
        for name in sides:
            taken[name].append(now[name])
    return taken


def ratios(ours: dict, theirs: dict) -> dict:
    return {kind: {k: round(v / theirs[kind][k], 3) for k, v in ours[kind].items() if theirs[kind].get(k)}
            for kind in ours}


def median_of(rounds: list[dict]) -> dict:
    """Each figure's median over the rounds (same keys as one round's)."""
    return {kind: {k: round(statistics.median(r[kind][k] for r in rounds), 3)
                   for k in rounds[0][kind]}
            for kind in rounds[0]}


def start_confab(model: str, max_context: int, port: int, extra: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "engine", "serve", "--model", model, "--port", str(port),
                             "--max-context", str(max_context), *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(process: subprocess.Popen) -> None:
    """Ask a server to stop, then make it."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


def wait_ready(url: str, process: Optional[subprocess.Popen] = None, limit_s: float = 300) -> bool:
    end = time.monotonic() + limit_s
    while time.monotonic() < end and (process is None or process.poll() is None):
        try:
            if httpx.get(f"{url.rstrip('/')}/models", timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return False


def token_counter(model: str) -> Callable[[str], int]:
    """Counts tokens as the model does (its tokenizer, read as the engine reads it)."""
    from transformers import AutoTokenizer

    from ..models import resolve

    tokenizer = AutoTokenizer.from_pretrained(str(resolve(model, as_stored=True).tokenizer_folder))
    return lambda text: len(tokenizer(text, add_special_tokens=False).input_ids)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vs_server(url: str, model: str, other_model: Optional[str], sessions: list[int], tokens: int,
              prompt_sizes: list[int], say: Callable[[str], None], serve_args: Optional[list[str]] = None,
              rounds: int = 3, context: Optional[int] = None) -> dict:
    """The figures of both servers and their ratios (raises RuntimeError when either does not answer).
    context: Confab's --max-context (None: the longest prompt + tokens + 512). Its pool holds four such
    contexts; one smaller than the other server's cells makes Confab park idle sessions that the other
    keeps (a 1.7B model's eight clients lost a sixth of their speed in a pool of 2,560 against 16,384)."""
    if rounds < 1:
        raise ValueError(f"--rounds must be at least 1, not {rounds}")
    needed = max(prompt_sizes, default=0) + tokens + 512
    if context is not None and context < needed:
        raise ValueError(f"--vs-context {context} is shorter than the longest prompt with its reply ({needed} tokens)")
    count = token_counter(model)
    url = url.rstrip("/") + ("" if url.rstrip("/").endswith("/v1") else "/v1")
    if not wait_ready(url, limit_s=10):
        raise RuntimeError(f"nothing answers at {url}/models")
    if other_model is None:
        other_model = httpx.get(f"{url}/models", timeout=10).json()["data"][0]["id"]
    port = free_port()
    ours_url = f"http://127.0.0.1:{port}/v1"
    process = start_confab(model, context or needed, port, serve_args or [])
    try:
        if not wait_ready(ours_url, process):
            raise RuntimeError("Confab's server did not start (python -m engine serve)")
        say(f"the other server at {url} ({other_model}) and Confab's on {model}, {rounds} round(s), "
            "each figure from both back to back:")
        taken = measure_both({"other": Client(url, other_model), "confab": Client(ours_url, model)}, count,
                             sessions, tokens, prompt_sizes, rounds, say)
    finally:
        stop(process)
    per_round = [ratios(ours, theirs) for ours, theirs in zip(taken["confab"], taken["other"])]
    return {"model": model, "other": {"url": url, "model": other_model, **median_of(taken["other"])},
            "confab": median_of(taken["confab"]), "confab_vs_other": median_of(per_round),
            "rounds": per_round, "tokens": tokens}
