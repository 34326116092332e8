"""Child process of test_store_kill.py: fills a conversation, then streams a reply until killed.

    python tests/app/store/store_kill_child.py HOME FLUSH_INTERVAL_S

Uses the app's own streaming API (`Store.start_reply` / `ReplyWriter`); no engine. Prints
`READY <conversation id> <reply message id>` once the earlier messages are committed, then
`FLUSHED <chars>` after every flush: that much reply text is committed and must survive a kill.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from app.store import ReplyStats, open_store  # noqa: E402

TITLE = "Kill test"
EARLIER = [
    ("user", "First question: what is a write-ahead log?"),
    ("assistant", "A file where changes are appended before they reach the database. 日本語 🎉"),
    ("user", "Second question: and a checkpoint?"),
    ("assistant", "Copying the log's pages back into the main database file."),
    ("user", "Now tell me a very long story."),
]
"""Messages committed before the reply starts: each must come back exactly."""


def earlier_token_ids(index: int) -> list[int]:
    return [index * 1000 + k for k in range(7)]


def piece(i: int) -> str:
    """The i-th chunk of the endless reply (a multi-byte character now and then)."""
    return f"word{i}{'é' if i % 7 == 0 else ''} "


def reply_prefix(n_chars: int) -> str:
    """The first n_chars of the reply text."""
    text, i = [], 0
    while sum(map(len, text)) < n_chars:
        text.append(piece(i))
        i += 1
    return "".join(text)[:n_chars]


def main(home: str, flush_interval: float) -> None:
    store = open_store(Path(home)).store
    conversation = store.create_conversation(TITLE)
    for index, (role, text) in enumerate(EARLIER):
        if role == "user":
            store.append_message(conversation.id, role, text)
        else:
            earlier = store.start_reply(conversation.id)
            earlier.append(text)
            earlier.finish("complete", token_ids=earlier_token_ids(index),
                           stats=ReplyStats(ttft_s=0.5, tok_s=30.0, prompt_tokens=index, completion_tokens=7))
    reply = store.start_reply(conversation.id, flush_interval=flush_interval)
    print(f"READY {conversation.id} {reply.message_id}", flush=True)
    i = 0
    while True:
        if reply.append(piece(i)):
            print(f"FLUSHED {reply.flushed_chars}", flush=True)
        i += 1
        if flush_interval:
            time.sleep(0.001)  # about a token a millisecond


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
