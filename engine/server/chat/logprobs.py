"""Log probabilities in OpenAI's shapes: chat's `logprobs.content` list and completions' parallel lists."""

from __future__ import annotations

import math
from typing import Iterable, Optional

from ... import TokenLogprob

FLOOR = -9999.0
"""What OpenAI reports for a token with no probability left (JSON has no -inf)."""


class Tokens:
    """Token id -> its text, cached (a reply repeats tokens, and decode is the slow part)."""

    def __init__(self, tokenizer) -> None:
        self._tokenizer = tokenizer
        self._text: dict[int, str] = {}

    def text(self, token_id: int) -> str:
        if token_id not in self._text:
            self._text[token_id] = self._tokenizer.decode([token_id])
        return self._text[token_id]


def _finite(x: float) -> float:
    return x if math.isfinite(x) else FLOOR


def chat_entries(tokens: Tokens, logprobs: Iterable[TokenLogprob]) -> list[dict]:
    def one(token_id: int, logprob: float) -> dict:
        text = tokens.text(token_id)
        return {"token": text, "logprob": _finite(logprob), "bytes": list(text.encode("utf-8"))}

    return [{**one(lp.token_id, lp.logprob), "top_logprobs": [one(i, x) for i, x in lp.top]} for lp in logprobs]


def chat_logprobs(tokens: Tokens, logprobs: Iterable[TokenLogprob], asked: bool) -> Optional[dict]:
    return {"content": chat_entries(tokens, logprobs), "refusal": None} if asked else None


def completion_logprobs(tokens: Tokens, logprobs: Iterable[TokenLogprob], asked: bool, offset: int = 0) -> Optional[dict]:
    """{"tokens", "token_logprobs", "top_logprobs", "text_offset"}; `offset`: characters sent before."""
    if not asked:
        return None
    out: dict = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
    for lp in logprobs:
        text = tokens.text(lp.token_id)
        out["tokens"].append(text)
        out["token_logprobs"].append(_finite(lp.logprob))
        out["top_logprobs"].append({tokens.text(i): _finite(x) for i, x in lp.top})
        out["text_offset"].append(offset)
        offset += len(text)
    return out
