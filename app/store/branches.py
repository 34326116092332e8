"""Message versions: a conversation's messages form a tree, and one branch of it is shown.

Regenerating a reply or editing and resending a message never deletes anything: the new message is
a sibling of the old one (same `parent_id`), and the conversation after it follows whichever
sibling is shown, as in ChatGPT and LM Studio. Each message row has

- `parent_id`: the message it follows (None for a first message);
- `chosen`: a per-conversation counter stamped when the row is created or picked; among siblings
  the highest is the one shown. Picking a sibling re-stamps it, so the branch below it comes back
  exactly as it was last seen (each parent remembers its own shown child).

`position` stays the insertion order (unique per conversation); along any branch it increases, so a
branch read by parent links is also in position order. These are functions over a sqlite-utils
`Database` so the `Store` stays small; callers hold the transaction.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Optional

from sqlite_utils import Database


@dataclass(frozen=True)
class BranchRow:
    """A row of the shown branch with its place among its versions."""

    row: dict
    version: int
    """1-based index of this row among its siblings (in creation order)."""
    versions: int
    """How many siblings (versions) there are, itself included."""


def shown_branch(db: Database, conversation_id: int) -> list[BranchRow]:
    """The shown branch of a conversation, first message first."""
    rows = db["messages"].rows_where("conversation_id = ?", [conversation_id], order_by="position")
    children: dict[Optional[int], list[dict]] = defaultdict(list)
    for row in rows:
        children[row["parent_id"]].append(row)
    branch: list[BranchRow] = []
    parent: Optional[int] = None
    while siblings := children.get(parent):
        pick = max(siblings, key=lambda r: (r["chosen"], r["position"]))
        branch.append(BranchRow(pick, siblings.index(pick) + 1, len(siblings)))
        parent = pick["id"]
    return branch


def leaf_id(db: Database, conversation_id: int) -> Optional[int]:
    """The last message of the shown branch (None for an empty conversation): where a new
    message goes by default."""
    branch = shown_branch(db, conversation_id)
    return branch[-1].row["id"] if branch else None


def siblings(db: Database, message: dict) -> list[dict]:
    """`message` and its other versions, in creation order."""
    parent = message["parent_id"]
    where = "conversation_id = ? and parent_id " + ("is null" if parent is None else "= ?")
    args = [message["conversation_id"]] + ([] if parent is None else [parent])
    return list(db["messages"].rows_where(where, args, order_by="position"))


def next_chosen(db: Database, conversation_id: int) -> int:
    """A `chosen` stamp above every other in the conversation (the newest pick wins)."""
    return db.execute("select coalesce(max(chosen), 0) + 1 from messages where conversation_id = ?",
                      [conversation_id]).fetchone()[0]


def choose(db: Database, message_id: int, conversation_id: int) -> None:
    """Show this message in place of its siblings (and the branch below it as last seen)."""
    db.execute("update messages set chosen = ? where id = ?", [next_chosen(db, conversation_id), message_id])
