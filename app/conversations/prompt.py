"""The chat messages sent to the engine for a conversation, built from the store.

The store is the single source of truth, so every turn re-reads it rather than keeping a copy:
an edit or a truncation is seen at once, and the engine's warm resume reuses whatever prefix
still matches.
"""

from __future__ import annotations

from app.store import Message, Store

HISTORY_STATUSES: tuple[str, ...] = ("complete", "interrupted", "cancelled")
"""Statuses whose messages the model sees. `error` rows hold no real reply and `streaming` is the
row being written now; sending either would show the model text it never produced."""


def chat_messages(store: Store, conversation_id: int) -> list[dict]:
    """System prompt (when set) plus the conversation's usable history, as engine messages."""
    conversation = store.get_conversation(conversation_id)
    messages: list[dict] = []
    if conversation.system_prompt:
        messages.append({"role": "system", "content": conversation.system_prompt})
    branch = store.messages(conversation_id)
    messages.extend(_as_chat(m) for i, m in enumerate(branch) if _usable(m, last=i == len(branch) - 1))
    return messages


def _usable(message: Message, last: bool = False) -> bool:
    if message.status not in HISTORY_STATUSES:
        return False
    # A reply stopped before its first character says nothing; templates may also reject it. One
    # stopped while still thinking is kept when it is the last message, so it can be continued.
    return not (message.role == "assistant" and message.content == "" and not (last and message.reasoning))


def _as_chat(message: Message) -> dict:
    """The engine's message; a reply's reasoning goes along apart, and the model's chat template
    decides whether the model sees it again (most never do)."""
    chat = {"role": message.role, "content": message.content}
    if message.reasoning:
        chat["reasoning"] = message.reasoning
    return chat
