"""A conversation longer than the model's context, under its own policy (conversation settings):
refused (the default: "This conversation is full"), or cut by dropping the middle or the oldest
messages; a cut is noted on the reply, where the window shows it. The policy itself is the
engine's (`engine.truncation`), the same as the local server's.
"""

from __future__ import annotations

from typing import Optional

from app.store import CONTEXT_FULL, Store
from engine import AnyEngine, Chunk, SamplingParams, truncation

KEY = "context_policy"
"""Where a conversation keeps its policy: a key of its settings (`Conversation.sampling`)."""


def policy_of(sampling: dict) -> str:
    """The conversation's policy; the default for a missing or unknown value."""
    value = sampling.get(KEY) if isinstance(sampling, dict) else None
    return value if value in truncation.POLICIES else truncation.DEFAULT_POLICY


def fit(engine: AnyEngine, store: Store, conversation_id: int, message_id: int, messages: list[dict],
        params: Optional[SamplingParams], extra: dict) -> list[dict]:
    """The messages the model reads for reply `message_id`; when some are left out, the reply gets a
    notice saying so. Runs on the store's thread (it tokenizes the history: no compute).

    A remote engine counts no tokens here: the policy applies to local models only, and the server
    behind a remote engine decides (Confab's refuses, unless asked for a policy)."""
    policy = policy_of(store.get_conversation(conversation_id).sampling)
    if policy == "refuse" or not hasattr(engine, "chat_tokens"):
        return messages  # the engine refuses a prompt that does not fit (ContextOverflowError)
    limit = engine.max_context

    def count(candidate: list[dict]) -> int:
        return len(engine.chat_tokens(candidate, continue_final=extra.get("continue_final", False),
                                      thinking=extra.get("thinking")))

    room = truncation.reply_room(limit, params.max_tokens if params is not None else None)
    fitted, cut = truncation.fit_messages(messages, count, limit, policy, room)
    if cut is not None:  # a continued reply keeps the notice of its first part
        store.set_notice(message_id, cut.note())
    return fitted


def stored_reason(chunk: Chunk, limit: int) -> Optional[str]:
    """The finish reason to store for the reply's last chunk: "length" becomes `CONTEXT_FULL` when
    the prompt and the reply filled the model's context of `limit` tokens (0: unknown)."""
    stats = chunk.stats
    if chunk.finish_reason == "length" and limit and stats is not None \
            and stats.prompt_tokens + stats.generated_tokens >= limit:
        return CONTEXT_FULL
    return chunk.finish_reason
