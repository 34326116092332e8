"""A request's prompt fitted to the context under its policy (engine.reply.truncation), for every API.

    messages, prompt, cut = fit_chat(engine, messages, tools, "rolling", max_tokens=256)

Refusals come back as APIError 400 `context_length_exceeded` with the numbers; each API turns that
into its own error shape. What was cut goes into the response with `truncation_fields(cut)`.
"""

from __future__ import annotations

from typing import Optional

from .. import Engine
from ..errors import ContextOverflowError, InvalidRequestError
from ..reply.truncation import Cut, fit_messages, fit_tokens, reply_room
from . import generation, limits
from .errors import APIError, bad_request


def fit_chat(engine: Engine, messages: list[dict], tools: Optional[list[dict]], policy: Optional[str],
             max_tokens: Optional[int], thinking: Optional[bool] = None) -> tuple[list[dict], list[int], Optional[Cut]]:
    """(messages the model reads, their prompt token ids, what was cut or None)."""
    limit = engine.config.max_context
    if policy in (None, "refuse"):  # as before policies: one tokenization, refused with the numbers
        prompt = _chat_tokens(engine, messages, tools, thinking)
        generation.check_context(engine, prompt)
        return messages, prompt, None
    bound = limit * limits.longest_token_chars(engine)
    counted: dict[int, list[int]] = {}  # by message count: each candidate keeps a different number

    def count(candidate: list[dict]) -> int:
        chars = sum(len(m.get("content") or "") for m in candidate)
        if chars > bound:  # cannot fit whatever its tokens: not worth tokenizing
            return limit + chars
        counted[len(candidate)] = _chat_tokens(engine, candidate, tools, thinking)
        return len(counted[len(candidate)])

    try:
        fitted, cut = fit_messages(messages, count, limit, policy, reply_room(limit, max_tokens))
    except ContextOverflowError as e:
        raise APIError(400, str(e), "context_length_exceeded") from None
    except InvalidRequestError as e:
        raise bad_request(str(e), "invalid_context_policy") from None
    return fitted, counted[len(fitted)], cut


def fit_prompt(engine: Engine, prompt: list[int], policy: Optional[str],
               max_tokens: Optional[int]) -> tuple[list[int], Optional[Cut]]:
    """A completions prompt (token ids) fitted to the context."""
    limit = engine.config.max_context
    try:
        return fit_tokens(prompt, limit, policy or "refuse", reply_room(limit, max_tokens))
    except ContextOverflowError as e:
        raise APIError(400, str(e), "context_length_exceeded") from None


def _chat_tokens(engine: Engine, messages: list[dict], tools, thinking) -> list[int]:
    if thinking is None:
        return generation.chat_prompt(engine, messages, tools)
    if not getattr(engine.tokenizer, "chat_template", None):
        raise bad_request("this model has no chat template; use /v1/completions", "no_chat_template")
    limits.check_chars(engine, sum(len(m["content"] or "") for m in messages))
    return engine.chat_tokens(messages, tools=tools, thinking=thinking)
