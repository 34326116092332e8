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
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from typing import Callable, Optional

import httpx

TASKS = ("Rename the function parse_rows to read_rows everywhere in the file.",
         "Add type hints to every function in the file.")
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


def measure(client: Client, count: Callable[[str], int], sessions: list[int], tokens: int,
            prompt_sizes: list[int], say: Callable[[str], None]) -> dict:
    """Every figure of one server (the module's docstring)."""
    client.stream([{"role": "user", "content": "Hello"}], 8)  # warm-up: first-request costs apart
    figures: dict = {"decode_tok_s": {}, "ttft_cold_s": {}, "ttft_warm_s": {}}
    for n in sessions:
        figures["decode_tok_s"][str(n)] = round(client.aggregate(n, tokens), 1)
        say(f"  {n} client{'s' * (n > 1)}: {figures['decode_tok_s'][str(n)]} tok/s")
    for size in prompt_sizes:
        nonce = uuid.uuid4().hex
        cold, _ = client.stream(agent_messages(size, count, nonce, TASKS[0]), 4)
        warm, _ = client.stream(agent_messages(size, count, nonce, TASKS[1]), 4)
        figures["ttft_cold_s"][str(size)], figures["ttft_warm_s"][str(size)] = round(cold, 3), round(warm, 3)
        say(f"  {size}-token agent prompt: first token after {cold:.2f} s cold, {warm:.2f} s with its prefix known")
    return figures


def ratios(ours: dict, theirs: dict) -> dict:
    return {kind: {k: round(v / theirs[kind][k], 3) for k, v in ours[kind].items() if theirs[kind].get(k)}
            for kind in ours}


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
              prompt_sizes: list[int], say: Callable[[str], None], serve_args: Optional[list[str]] = None) -> dict:
    """The figures of both servers and their ratios (raises RuntimeError when either does not answer)."""
    count = token_counter(model)
    url = url.rstrip("/") + ("" if url.rstrip("/").endswith("/v1") else "/v1")
    if not wait_ready(url, limit_s=10):
        raise RuntimeError(f"nothing answers at {url}/models")
    if other_model is None:
        other_model = httpx.get(f"{url}/models", timeout=10).json()["data"][0]["id"]
    port = free_port()
    ours_url = f"http://127.0.0.1:{port}/v1"
    process = start_confab(model, max(prompt_sizes) + tokens + 512, port, serve_args or [])
    try:
        if not wait_ready(ours_url, process):
            raise RuntimeError("Confab's server did not start (python -m engine serve)")
        say(f"the other server at {url} ({other_model}):")
        theirs = measure(Client(url, other_model), count, sessions, tokens, prompt_sizes, say)
        say(f"Confab's server on {model}:")
        ours = measure(Client(ours_url, model), count, sessions, tokens, prompt_sizes, say)
    finally:
        stop(process)
    return {"model": model, "other": {"url": url, "model": other_model, **theirs}, "confab": ours,
            "confab_vs_other": ratios(ours, theirs), "tokens": tokens}
