"""Message versions: a conversation's messages form a tree, and one branch of it is shown.

Regenerating a reply or editing and resending a message never deletes anything: the new message is
a sibling of the old one (same `parent_id`), and the conversation after it follows whichever
sibling is shown, as in ChatGPT and LM Studio. Each message row has

- `parent_id`: the message it follows (None for a first message);
- `chosen`: a per-conversation counter stamped when the row is created or picked; among siblings
  the highest is the one shown. Picking a sibling re-stamps it, so the branch below it comes back
  exactly as it was last seen (each parent remembers its own shown child).

`position` stays the insertion order (unique per conversation); along any branch it increases, so a
branch read by parent links is also in position order.

A deleted message (`deleted` = 1: the user deleted it and may still undo it) is see-through: its
children stand where it stood, beside its siblings, so the turns after it stay on the branch. Undo
clears the flag and the tree is as it was; `purge` makes the delete final the same way, linking
its children to its parent. These are functions over a sqlite-utils
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


def _children(db: Database, conversation_id: int) -> dict[Optional[int], list[dict]]:
    rows = db["messages"].rows_where("conversation_id = ?", [conversation_id], order_by="position")
    children: dict[Optional[int], list[dict]] = defaultdict(list)
    for row in rows:
        children[row["parent_id"]].append(row)
    return children


def _visible(children: dict[Optional[int], list[dict]], parent: Optional[int]) -> list[dict]:
    """`parent`'s children, each deleted one replaced by its own visible children, in creation order."""
    out: list[dict] = []
    for row in children.get(parent, []):
        out.extend(_visible(children, row["id"]) if row.get("deleted") else [row])
    return sorted(out, key=lambda r: r["position"])


def shown_branch(db: Database, conversation_id: int) -> list[BranchRow]:
    """The shown branch of a conversation, first message first (deleted messages left out)."""
    children = _children(db, conversation_id)
    branch: list[BranchRow] = []
    parent: Optional[int] = None
    while siblings := _visible(children, parent):
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
    """`message` and its other versions (what stands beside it once deleted messages are seen
    through), in creation order; a deleted message is alone."""
    if message.get("deleted"):
        return [message]
    parent = message["parent_id"]
    while parent is not None and (row := db["messages"].get(parent)).get("deleted"):
        parent = row["parent_id"]
    return _visible(_children(db, message["conversation_id"]), parent)


def next_chosen(db: Database, conversation_id: int) -> int:
    """A `chosen` stamp above every other in the conversation (the newest pick wins)."""
    return db.execute("select coalesce(max(chosen), 0) + 1 from messages where conversation_id = ?",
                      [conversation_id]).fetchone()[0]


def choose(db: Database, message_id: int, conversation_id: int) -> None:
    """Show this message in place of its siblings (and the branch below it as last seen)."""
    db.execute("update messages set chosen = ? where id = ?", [next_chosen(db, conversation_id), message_id])


def purge(db: Database, conversation_id: Optional[int] = None) -> int:
    """Make deletes final (of one conversation, or all): each deleted message's children are linked
    to its parent, then it goes (its files and tool calls with it). Returns how many went."""
    where, args = ("deleted = 1", []) if conversation_id is None else (
        "deleted = 1 and conversation_id = ?", [conversation_id])
    gone = list(db["messages"].rows_where(where, args, order_by="position desc"))
    for row in gone:  # newest first: a chain of deleted messages links through to the first one kept
        db.execute("update messages set parent_id = ? where parent_id = ?", [row["parent_id"], row["id"]])
        db.execute("delete from messages where id = ?", [row["id"]])
    return len(gone)
