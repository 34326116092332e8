"""A conversation as JSON (lossless: import(export(c)) exports identically) or as Markdown.

The JSON holds the conversation's settings and the messages of the branch shown (other versions
of regenerated or edited messages are not exported) with their status, exact token ids, stats,
times, tool calls with their results, attached files (name, type, size, text, and the original
bytes as base64 when they were kept; an image always, with its size in pixels), and for replies the model that wrote them, why they ended, a thinking model's reasoning
(with how long it thought) and the library passages they read (their sources: name, where, text);
ids, saved states and libraries are not exported (ids are the database's, states a cache, a
library the user's files, indexed again from them). The Markdown shows the reasoning apart, above its answer, in a collapsed
`<details>` block ("Thought for 12 s"), so a reader sees the answer first and can open it. Attached
images are shown in place as data URLs, so the Markdown file is whole on its own.

    text = export_json(store, conversation_id)
    copy = import_json(store, text)          # a new conversation
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from . import attachments as attached
from . import tool_calls as called
from .attachments import Attachment
from .library import Source
from .errors import ImportFormatError, StoreError
from .records import ROLES, STATUSES, Conversation, Message, sampling_json, token_ids_json
from .store import Store
from app.chat.labels import thought_label  # the words the window shows ("Thought for 12 s")

FORMAT = "confab.conversation"
FORMAT_VERSION = 1
_CONVERSATION_KEYS = ("title", "created_at", "updated_at", "pinned", "model", "system_prompt", "sampling")
_OPTIONAL_CONVERSATION_KEYS = ("thinking",)
_MESSAGE_KEYS = ("role", "content", "status", "token_ids", "error", "ttft_s", "tok_s", "prompt_tokens",
                 "completion_tokens", "created_at", "updated_at")
_OPTIONAL_MESSAGE_KEYS = ("model", "finish_reason")
"""Added later; an older export without them imports with None."""
_REASONING_KEYS = ("reasoning", "reasoning_s")
"""Added with thinking models; an older export imports with "" and None."""
_LABELS = {"system": "System", "user": "User", "assistant": "Assistant"}
_STATUS_NOTES = {"streaming": "still being written", "interrupted": "reply interrupted",
                 "cancelled": "reply stopped", "error": "reply failed"}


def export_dict(store: Store, conversation_id: int) -> dict[str, Any]:
    """The export as a JSON-ready dict."""
    c = store.get_conversation(conversation_id)
    return {"format": FORMAT, "version": FORMAT_VERSION,
            "conversation": {k: getattr(c, k) for k in _CONVERSATION_KEYS + _OPTIONAL_CONVERSATION_KEYS},
            "messages": [_message_dict(store, m) for m in store.messages(conversation_id)]}


def export_json(store: Store, conversation_id: int) -> str:
    """The conversation as JSON text (UTF-8 safe, indented)."""
    return json.dumps(export_dict(store, conversation_id), ensure_ascii=False, indent=2)


def import_json(store: Store, data: str | bytes | dict, *, title_mark: str = "") -> Conversation:
    """Create a new conversation from an export (text or dict), in one transaction. A reply that
    was still `streaming` when exported is imported as `interrupted`; `title_mark` ("(imported)")
    is added to its title, once, so the copy is told from the original. Raises ImportFormatError."""
    if not isinstance(data, dict):
        try:
            data = json.loads(data)
        except (ValueError, TypeError) as e:
            raise ImportFormatError(f"Not a Confab conversation: the file is not valid JSON ({e}).") from None
    conversation, messages = _validated(data)
    if title_mark and not conversation["title"].endswith(title_mark):
        conversation["title"] = f"{conversation['title']} {title_mark}".strip()
    with store.db.atomic():
        table = store.db["conversations"].insert(
            {**conversation, "pinned": int(conversation["pinned"]),
             "thinking": None if conversation["thinking"] is None else int(conversation["thinking"]),
             "sampling": sampling_json(conversation["sampling"])})
        conversation_id = table.last_pk
        parent_id = None
        for i, m in enumerate(messages):  # one branch: each message follows the one before
            files = m.pop("attachments")
            calls = m.pop("tool_calls")
            sources = m.pop("sources")
            parent_id = store.db["messages"].insert(
                {**m, "conversation_id": conversation_id, "position": i, "parent_id": parent_id,
                 "chosen": i + 1, "status": "interrupted" if m["status"] == "streaming" else m["status"],
                 "token_ids": token_ids_json(m["token_ids"])}).last_pk
            attached.insert(store.db, parent_id, files, m["created_at"])
            called.insert(store.db, parent_id, calls, m["created_at"])
            if sources:
                store.library.add_sources(parent_id, sources)
    return store.get_conversation(conversation_id)


def export_markdown(store: Store, conversation_id: int) -> str:
    """The conversation as Markdown for reading or sharing (not for import)."""
    c = store.get_conversation(conversation_id)
    created = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(c.created_at))
    lines = [f"# {c.title or 'Untitled conversation'}", "",
             f"*{'Model: ' + c.model + ' · ' if c.model else ''}Started {created}*", ""]
    if c.system_prompt:
        lines += ["**System prompt**", ""] + [f"> {line}" for line in c.system_prompt.splitlines()] + [""]
    for m in store.messages(conversation_id):
        lines += [f"## {_LABELS[m.role]}", ""] + _reasoning_markdown(m) + [m.content, ""]
        lines += _tool_calls_markdown(m)
        images = [_image_markdown(a) for a in m.attachments if a.is_image and a.data]
        if images:
            lines += images + [""]
        if m.attachments:
            lines += [f"*Attached: {', '.join(a.name for a in m.attachments)}*", ""]
        if m.sources:
            lines += ["*Sources: " + ", ".join(f"[{n}] {x.label}" for n, x in enumerate(m.sources, 1)) + "*", ""]
        if m.notice:
            lines += [f"*(✂ {m.notice})*", ""]
        note = _STATUS_NOTES.get(m.status)
        if note:
            lines += [f"*({note}{': ' + m.error if m.error else ''})*", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _reasoning_markdown(m: Message) -> list[str]:
    if not m.reasoning:
        return []
    quoted = [f"> {line}" if line else ">" for line in m.reasoning.splitlines()]
    return ["<details>", f"<summary>{thought_label(m.reasoning_s)}</summary>", ""] + quoted + ["", "</details>", ""]


def _image_markdown(a: Attachment) -> str:
    """The image in place (a data URL: the file needs nothing beside it), its name as the alt text."""
    alt = a.name.replace("[", "(").replace("]", ")")
    return f"![{alt}](data:{a.media_type};base64,{base64.b64encode(a.data or b'').decode('ascii')})"


def _tool_calls_markdown(m: Message) -> list[str]:
    """Each call as a collapsed block: the tool and its arguments, then what came back."""
    out: list[str] = []
    for c in m.tool_calls:
        quoted = [f"> {line}" if line else ">" for line in (c.result or "(no result)").splitlines()]
        out += ["<details>", f"<summary>Tool {c.tool} ({c.server}): {c.status}</summary>", "",
                f"Arguments: `{c.arguments}`", ""] + quoted + ["", "</details>", ""]
    return out


def _message_dict(store: Store, m: Message) -> dict[str, Any]:
    stats = m.stats.columns() if m.stats else dict.fromkeys(("ttft_s", "tok_s", "prompt_tokens", "completion_tokens"))
    return {"role": m.role, "content": m.content, "status": m.status,
            "token_ids": list(m.token_ids) if m.token_ids is not None else None, "error": m.error,
            **stats, "created_at": m.created_at, "updated_at": m.updated_at, "model": m.model,
            "finish_reason": m.finish_reason, "reasoning": m.reasoning, "reasoning_s": m.reasoning_s,
            "notice": m.notice, "attachments": [a.as_dict(a.data if a.data is not None else
                                                     attached.data(store.db, a.id) if a.has_data else None)
                                           for a in m.attachments],
            "tool_calls": [c.as_dict() for c in m.tool_calls], "sources": [x.as_dict() for x in m.sources]}


def _validated(data: Any) -> tuple[dict, list[dict]]:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ImportFormatError(f"Not a Confab conversation export (format is {found!r}).")
    version = data.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ImportFormatError(f"This export was made by a newer Confab (format version {version!r}; "
                                f"this one reads up to {FORMAT_VERSION}).")
    conversation = _fields(data.get("conversation"), _CONVERSATION_KEYS, "conversation")
    conversation["thinking"] = data["conversation"].get("thinking")
    if conversation["thinking"] is not None and not isinstance(conversation["thinking"], bool):
        raise ImportFormatError("Bad export: conversation: thinking must be true, false or null.")
    for name, allowed in (("title", (str,)), ("system_prompt", (str,)), ("model", (str, type(None)))):
        if not isinstance(conversation[name], allowed):
            raise ImportFormatError(f"Bad export: conversation: {name} must be text"
                                    f"{' or null' if len(allowed) > 1 else ''}.")
    try:
        sampling_json(conversation["sampling"])
    except StoreError:
        raise ImportFormatError("Bad export: conversation: sampling must be an object of JSON values.") from None
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise ImportFormatError("Bad export: 'messages' must be a list.")
    checked = [_fields(m, _MESSAGE_KEYS, f"message {i + 1}") for i, m in enumerate(messages)]
    for i, (m, given) in enumerate(zip(checked, messages)):
        for key in _OPTIONAL_MESSAGE_KEYS:
            m[key] = given.get(key)
            if m[key] is not None and not isinstance(m[key], str):
                raise ImportFormatError(f"Bad export: message {i + 1}: {key} must be text.")
        m["reasoning"], m["reasoning_s"] = given.get("reasoning") or "", given.get("reasoning_s")
        m["notice"] = given.get("notice") or ""  # older exports have none
        if not isinstance(m["notice"], str):
            raise ImportFormatError(f"Bad export: message {i + 1}: notice must be text.")
        if not isinstance(m["reasoning"], str):
            raise ImportFormatError(f"Bad export: message {i + 1}: reasoning must be text.")
        seconds = m["reasoning_s"]
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))):
            raise ImportFormatError(f"Bad export: message {i + 1}: reasoning_s must be a number or null.")
    for i, (m, given) in enumerate(zip(checked, messages)):
        files = given.get("attachments") or []  # older exports have none
        try:
            if not isinstance(files, list):
                raise StoreError("attachments must be a list")
            m["attachments"] = [Attachment.from_dict(f) for f in files]
            calls = given.get("tool_calls") or []  # older exports have none
            if not isinstance(calls, list):
                raise StoreError("tool_calls must be a list")
            m["tool_calls"] = [called.ToolCallRecord.from_dict(c) for c in calls]
            sources = given.get("sources") or []  # older exports have none
            if not isinstance(sources, list):
                raise StoreError("sources must be a list")
            m["sources"] = [Source.from_dict(x) for x in sources]
        except StoreError as e:
            raise ImportFormatError(f"Bad export: message {i + 1}: {e}.") from None
        for name, allowed in (("role", ROLES), ("status", STATUSES)):
            if m[name] not in allowed:
                raise ImportFormatError(f"Bad export: message {i + 1}: {name} must be one of "
                                        f"{', '.join(allowed)}, not {m[name]!r}.")
        if not isinstance(m["content"], str):
            raise ImportFormatError(f"Bad export: message {i + 1}: content must be text.")
        if not isinstance(m["error"], (str, type(None))):
            raise ImportFormatError(f"Bad export: message {i + 1}: error must be text or null.")
        try:
            token_ids_json(m["token_ids"])
        except (StoreError, TypeError):
            raise ImportFormatError(f"Bad export: message {i + 1}: token_ids must be a list of integers.") from None
    return conversation, checked


def _fields(value: Any, keys: tuple[str, ...], where: str) -> dict:
    if not isinstance(value, dict):
        raise ImportFormatError(f"Bad export: {where} must be an object.")
    missing = [k for k in keys if k not in value]
    if missing:
        raise ImportFormatError(f"Bad export: {where} is missing {', '.join(repr(k) for k in missing)}.")
    return {k: value[k] for k in keys}
