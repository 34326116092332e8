"""The chat messages sent to the engine for a conversation, built from the store.

The store is the single source of truth, so every turn re-reads it rather than keeping a copy:
an edit or a truncation is seen at once, and the engine's warm resume reuses whatever prefix
still matches.

An attached image goes to the model as an image part of the message (`engine.image_part`), before
the message's files and text. A model that reads text only gets a line naming the image instead,
so a conversation that held images goes on after the user loads a text model.
"""

from __future__ import annotations

from typing import Any

from app.store import Attachment, Message, Store
from engine import image_part

HISTORY_STATUSES: tuple[str, ...] = ("complete", "interrupted", "cancelled")
"""Statuses whose messages the model sees. `error` rows hold no real reply and `streaming` is the
row being written now; sending either would show the model text it never produced."""


def chat_messages(store: Store, conversation_id: int, images: bool = True) -> list[dict]:
    """System prompt (when set) plus the conversation's usable history, as engine messages; with
    `images` False (a text-only model) each image is a line of text that names it."""
    conversation = store.get_conversation(conversation_id)
    messages: list[dict] = []
    if conversation.system_prompt:
        messages.append({"role": "system", "content": conversation.system_prompt})
    branch = store.messages(conversation_id)
    for i, m in enumerate(branch):
        if _usable(m, last=i == len(branch) - 1):
            chat = _as_chat(m, images)
            messages.extend(with_tool_steps(m, chat) if m.tool_calls else [chat])
    return messages


def _usable(message: Message, last: bool = False) -> bool:
    if message.status not in HISTORY_STATUSES:
        return False
    # A reply stopped before its first character says nothing; templates may also reject it. One
    # stopped while still thinking is kept when it is the last message, so it can be continued.
    return not (message.role == "assistant" and message.content == "" and not message.tool_calls
                and not (last and message.reasoning))


def _as_chat(message: Message, images: bool = True) -> dict:
    """The engine's message (attached images, then files as blocks, before the text); a reply's
    reasoning goes along apart, and the model's chat template decides whether the model sees it
    again (most never do)."""
    chat = {"role": message.role, "content": content_of(message.content, message.attachments, images)}
    if message.reasoning:
        chat["reasoning"] = message.reasoning
    return chat


def with_tool_steps(message: Message, chat: dict) -> list[dict]:
    """A reply that called tools, as the model saw it: per step, its text and its calls, then each
    call's result as a `tool` message; the text after the last step ends it (dropped when empty and
    nothing follows the calls yet: the model is about to write it). A call never answered (the app
    quit while it waited) reads as not run, so the history stays well formed."""
    out: list[dict] = []
    start = 0
    steps = sorted({c.step for c in message.tool_calls})
    for step in steps:
        calls = [c for c in message.tool_calls if c.step == step]
        end = calls[0].offset
        out.append({"role": "assistant", "content": message.content[start:end],
                    "tool_calls": [{"id": c.call_id, "type": "function",
                                    "function": {"name": c.tool, "arguments": c.arguments}} for c in calls]})
        out.extend({"role": "tool", "tool_call_id": c.call_id,
                    "content": c.result if c.status != "pending" else "The call was not run."} for c in calls)
        start = end
    rest = message.content[start:]
    if rest:
        out.append({**chat, "content": rest})
    return out


def content_of(text: str, attachments: tuple[Attachment, ...] | list[Attachment], images: bool = True) -> Any:
    """A message's content: its text with its files (`with_attachments`), and before them its images
    as image parts (a list of parts then; a string when it has none). With `images` False, each
    image is a line that names it, so the model knows one was there."""
    pictures = [a for a in attachments if a.is_image]
    files = [a for a in attachments if not a.is_image]
    if not images:
        notes = [f"[image {a.name}: not shown, this model reads text only]" for a in pictures]
        return with_attachments("\n".join(notes + ([text] if text else [])), files)
    body = with_attachments(text, files)
    parts: list[dict] = [image_part(a.data) for a in pictures if a.data]
    if not parts:
        return body
    return parts + ([{"type": "text", "text": body}] if body else [])


def with_attachments(text: str, attachments: tuple[Attachment, ...] | list[Attachment]) -> str:
    """The message as the model reads it: each attached file as a block that names it, then the
    message. Tag-like delimiters rather than Markdown fences, because a file may hold fences of its
    own; the same text every turn, so a warm session's token prefix still matches."""
    blocks = [file_block(a) for a in attachments]
    return "\n\n".join([*blocks, text] if text else blocks)


def file_block(attachment: Attachment) -> str:
    """One file as the model reads it: `<file name="notes.md">…</file>`, saying when only its
    first part is included."""
    name = attachment.name.replace('"', "'")
    note = ' note="only the first part of the file"' if attachment.truncated else ""
    return f'<file name="{name}"{note}>\n{attachment.text.rstrip()}\n</file>'

