"""Files attached to a message: the record, and the table functions the `Store` calls.

An attachment belongs to one message (deleted with it). The store keeps what the model was sent —
the file's name, media type, size and text (only the part that fit, when `truncated`) — and, when
the user asked for it, a copy of the original bytes. Its text is searchable (FTS5 over name and
text). A new version of an edited message gets copies of the old version's attachments.

An image (media type image/…) is sent to the model as pixels, not text: its bytes are always kept
(they are what the model read) and come with the message when it is read, since the window shows
the image and every turn sends it again; its size in pixels is kept beside them.

These are functions over a sqlite-utils `Database` so the `Store` stays small; callers hold the
transaction.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional

from sqlite_utils import Database

from .errors import InvalidValueError
from .records import check_text


@dataclass(frozen=True)
class Attachment:
    """One attached file, as stored with its message (or about to be)."""

    name: str
    """The file's name without its folder, e.g. "notes.md"."""
    media_type: str
    """What the file holds, e.g. "text/markdown", "application/pdf"."""
    size: int
    """Bytes of the original file."""
    text: str
    """The text the model is sent (from a PDF: its extracted text)."""
    truncated: bool = False
    """Only the first part of the text was attached (the whole did not fit the context)."""
    tokens: Optional[int] = None
    """Tokens of `text` as the composer counted them when the file was sent (None: not recorded,
    e.g. sent by an older version; shown as the estimate then)."""
    tokens_exact: bool = False
    """`tokens` is the model's own count (False: an estimate, shown with "~")."""
    data: Optional[bytes] = field(default=None, repr=False, compare=False)
    """A copy of the original bytes, kept only when the user asked for it (a setting); an image's
    bytes as sent, always. Messages read from the store leave it out but for images (see
    `has_data`); `Store.attachment_data` reads it."""
    has_data: bool = False
    """The store holds the original bytes of this file."""
    id: Optional[int] = None
    """The store's id (None before it is stored)."""
    width: Optional[int] = None
    """An image's width in pixels as sent (None: not an image)."""
    height: Optional[int] = None
    """An image's height in pixels as sent (None: not an image)."""
    scaled_from: Optional[tuple[int, int]] = None
    """An image's (width, height) before Confab scaled it down to send it; None: sent as it was."""
    thumbnail: Optional[bytes] = field(default=None, repr=False, compare=False)
    """A small PNG of an image, made when it was attached (None: make one from `data`); not exported."""

    @property
    def is_image(self) -> bool:
        """An image: the model reads its pixels (`data`), not `text`."""
        return self.media_type.startswith("image/")

    @classmethod
    def from_row(cls, row: dict) -> "Attachment":
        image = row["media_type"].startswith("image/")
        source = (row["source_width"], row["source_height"])
        return cls(name=row["name"], media_type=row["media_type"], size=row["size"], text=row["text"],
                   truncated=bool(row["truncated"]), tokens=row["tokens"], tokens_exact=bool(row["tokens_exact"]),
                   data=row["image_data"] if image else None, has_data=bool(row["has_data"]), id=row["id"],
                   width=row["width"], height=row["height"], scaled_from=source if None not in source else None,
                   thumbnail=row["thumbnail"])

    def as_dict(self, data: Optional[bytes] = None) -> dict[str, Any]:
        """The export form: plain JSON values; the bytes (when kept) as base64."""
        out: dict[str, Any] = {"name": self.name, "media_type": self.media_type, "size": self.size,
                               "text": self.text, "truncated": self.truncated}
        if self.tokens is not None:
            out.update(tokens=self.tokens, tokens_exact=self.tokens_exact)
        if self.width is not None and self.height is not None:
            out.update(width=self.width, height=self.height)
        if self.scaled_from is not None:
            out["scaled_from"] = list(self.scaled_from)
        if data is not None:
            out["data_base64"] = base64.b64encode(data).decode("ascii")
        return out

    @classmethod
    def from_dict(cls, d: Any) -> "Attachment":
        """From the export form; raises InvalidValueError naming the bad field."""
        if not isinstance(d, dict):
            raise InvalidValueError("an attachment must be an object")
        for name in ("name", "media_type", "text"):
            check_text(f"attachment {name}", d.get(name))
        size = d.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise InvalidValueError("attachment size must be a whole number of bytes")
        data = d.get("data_base64")
        try:
            raw = base64.b64decode(data, validate=True) if data is not None else None
        except (ValueError, TypeError):
            raise InvalidValueError("attachment data_base64 is not base64") from None
        tokens = d.get("tokens")
        if tokens is not None and (not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0):
            raise InvalidValueError("attachment tokens must be a whole number")
        width, height, scaled = d.get("width"), d.get("height"), d.get("scaled_from")
        if not all(_pixels(v) for v in (width, height) if v is not None) or (width is None) != (height is None):
            raise InvalidValueError("attachment width and height must both be whole numbers of pixels")
        if scaled is not None and not (isinstance(scaled, list) and len(scaled) == 2 and all(map(_pixels, scaled))):
            raise InvalidValueError("attachment scaled_from must be [width, height] in pixels")
        if d["media_type"].startswith("image/") and raw is None:
            raise InvalidValueError("an attached image needs its data_base64")
        return cls(name=d["name"], media_type=d["media_type"], size=size, text=d["text"],
                   truncated=bool(d.get("truncated", False)), tokens=tokens,
                   tokens_exact=bool(d.get("tokens_exact", False)) and tokens is not None, data=raw,
                   width=width, height=height, scaled_from=tuple(scaled) if scaled is not None else None)


def _pixels(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


_COLUMNS = ("id, message_id, name, media_type, size, text, truncated, tokens, tokens_exact, "
            "data is not null as has_data, width, height, source_width, source_height, thumbnail, "
            "case when media_type like 'image/%' then data end as image_data")


def insert(db: Database, message_id: int, attachments: Iterable[Attachment], now: float) -> None:
    """Store `attachments` with message `message_id`, in order."""
    rows = []
    for position, a in enumerate(attachments):
        if not isinstance(a, Attachment):
            raise InvalidValueError(f"attachments must be Attachment records, not {type(a).__name__}")
        for name in ("name", "media_type", "text"):
            check_text(f"attachment {name}", getattr(a, name))
        if a.is_image and not a.data:
            raise InvalidValueError(f"the image {a.name} has no bytes to store")
        source = a.scaled_from or (None, None)
        rows.append({"message_id": message_id, "position": position, "name": a.name,
                     "media_type": a.media_type, "size": int(a.size), "text": a.text,
                     "truncated": int(a.truncated), "tokens": a.tokens, "tokens_exact": int(a.tokens_exact),
                     "data": a.data, "created_at": now, "width": a.width, "height": a.height,
                     "source_width": source[0], "source_height": source[1], "thumbnail": a.thumbnail})
    if rows:
        db["attachments"].insert_all(rows)


def copy(db: Database, from_message: int, to_message: int, now: float) -> None:
    """Give `to_message` copies of `from_message`'s attachments (an edited message's new version)."""
    db.execute("""insert into attachments (message_id, position, name, media_type, size, text, truncated,
                                           tokens, tokens_exact, data, created_at, width, height,
                                           source_width, source_height, thumbnail)
                  select ?, position, name, media_type, size, text, truncated, tokens, tokens_exact, data, ?,
                         width, height, source_width, source_height, thumbnail
                  from attachments where message_id = ? order by position""",
               [to_message, now, from_message])


def for_messages(db: Database, message_ids: list[int]) -> dict[int, tuple[Attachment, ...]]:
    """Each message's attachments (without their bytes, but images with theirs), in order; messages
    with none are absent."""
    found: dict[int, list[Attachment]] = {}
    for start in range(0, len(message_ids), 500):  # SQLite's variable limit
        ids = message_ids[start:start + 500]
        cursor = db.execute(
            f"select {_COLUMNS} from attachments where message_id in ({', '.join('?' * len(ids))}) "
            "order by message_id, position", ids)
        names = [d[0] for d in cursor.description]
        for values in cursor:
            row = dict(zip(names, values))
            found.setdefault(row["message_id"], []).append(Attachment.from_row(row))
    return {k: tuple(v) for k, v in found.items()}


def data(db: Database, attachment_id: int) -> Optional[bytes]:
    """The original bytes of an attachment, or None when they were not kept."""
    row = db.execute("select data from attachments where id = ?", [attachment_id]).fetchone()
    return None if row is None else row[0]


def search(db: Database, match: str, mark: tuple[str, str], snippet_tokens: int) -> Iterator[tuple]:
    """Messages whose attachments match, best first: rows of (conversation id, message id, title,
    role, snippet, rank) with the snippet naming the file ("notes.md: …the [match]…")."""
    return db.execute(
        """select m.conversation_id, m.id, c.title, m.role,
                  a.name || ': ' || snippet(attachments_fts, 1, ?, ?, '…', ?) as snippet,
                  attachments_fts.rank
           from attachments_fts
           join attachments a on a.rowid = attachments_fts.rowid
           join messages m on m.id = a.message_id
           join conversations c on c.id = m.conversation_id
           where attachments_fts match ?
           order by attachments_fts.rank""",
        [mark[0], mark[1], snippet_tokens, match])
