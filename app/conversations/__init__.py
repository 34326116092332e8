"""Conversations ⇄ live engine sessions: find, restore or open one on demand; suspend the least
recently used idle one to disk when the engine is full.

    from app.conversations import ConversationManager

    manager = ConversationManager(engine, store)          # both owned by the store's thread
    for chunk in manager.reply(conversation_id, "Hi", SamplingParams(temperature=0)):
        show(chunk.text)
    manager.close()                                       # suspends every live session

Saved states are a cache (ARCHITECTURE.md): a missing, damaged or foreign state file only costs a
re-prefill from the stored text, never an error. Imports the engine only through `engine` and
`engine.errors`; never torch or mlx.
"""

from .errors import AllSessionsBusyError
from .manager import DEFAULT_STATE_BUDGET, ConversationManager
from .prompt import HISTORY_STATUSES, chat_messages
from .states import StateCache

__all__ = [
    "DEFAULT_STATE_BUDGET",
    "HISTORY_STATUSES",
    "AllSessionsBusyError",
    "ConversationManager",
    "StateCache",
    "chat_messages",
]
