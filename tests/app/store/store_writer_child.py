"""Child process of test_store_two_writers.py: appends messages to one conversation as fast as it can.

    python tests/app/store/store_writer_child.py HOME CONVERSATION_ID COUNT

Opens the store with `open_store` (like a second copy of the app would; commits without fsync, to
keep the test short: it is about locks), prints `READY`, waits for
a line on stdin so that both writers start together, appends COUNT user messages, prints `DONE`.
Any exception goes to stderr with a non-zero exit.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from app.store import open_store  # noqa: E402


def main(home: str, conversation_id: int, count: int) -> None:
    store = open_store(Path(home)).store
    store.db.execute("PRAGMA synchronous = NORMAL")  # about locks, not durability: no fsync per commit
    print("READY", flush=True)
    sys.stdin.readline()
    for i in range(count):
        store.append_message(conversation_id, "user", f"writer {conversation_id} message {i}")
    store.close()
    print("DONE", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
