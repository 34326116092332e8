"""Clients for server tests: the official openai client, and httpx for what it cannot send."""

from __future__ import annotations

import httpx
import openai

from engine.server import BackgroundServer

KEY = "test-key"


def client(server: BackgroundServer, api_key: str = "none") -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key=api_key, max_retries=0, timeout=120)


def http(server: BackgroundServer, **kwargs) -> httpx.Client:
    return httpx.Client(base_url=server.url.removesuffix("/v1"), timeout=120, **kwargs)


def chat_body(text: str = "Hello", **extra) -> dict:
    return {"messages": [{"role": "user", "content": text}], "temperature": 0,
            "max_tokens": 8, **extra}
