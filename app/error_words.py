"""Errors in words: what happened and what to do, in one sentence a person reads; the class name and
the raw text kept apart, for a "Details" toggle (or a bug report).

    words = in_words(error)                     # an exception, or a stored "ClassName: text" string
    label.setText(words.sentence)               # "Nothing answers at 127.0.0.1:8799. Start the …"
    details.setText(words.details)              # "ServerUnreachableError: connection refused: …"

No Qt: the chat view, the dialogs and the status bar all use it. The engine's messages stay as they
are (precise, for logs and the API); this only chooses how the window says them. A message not
recognised here is shown as it is, without its class name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

_CLASS = re.compile(r"^([A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt|Stopped))(?::\s*(.*))?$", re.DOTALL)
_WHERE = (re.compile(r"nothing listens at (\S+?)(?:\s|$)"), re.compile(r"could not connect to (\S+?):"),
          re.compile(r"timeout: (\S+) did not answer"), re.compile(r"^(\S+:\d+) answered"))
_HOST = re.compile(r"host name '([^']+)'")
_OFFLINE = ("name or service not known", "[errno -2]", "[errno -3]", "[errno 8]", "[errno 11001]",
            "temporary failure in name resolution", "nodename nor servname", "getaddrinfo failed",
            "network is unreachable", "no address associated", "offline")


@dataclass(frozen=True)
class InWords:
    """One error as the window says it."""

    sentence: str
    """What happened and what to do, for a person."""
    details: str
    """The class name and the raw text ("" when the sentence is the raw text already)."""


def in_words(error: BaseException | str) -> InWords:
    """`error` (an exception, or the "ClassName: text" a failed reply stores) in words."""
    if isinstance(error, BaseException):
        names = {c.__name__ for c in type(error).__mro__}
        name, raw = type(error).__name__, str(error)
    else:
        match = _CLASS.match(error.strip())
        name, raw = (match.group(1), match.group(2) or "") if match else ("", error.strip())
        names = {name} if name else set()
    details = f"{name}: {raw}" if name else raw
    for test, say in _RULES:
        if test(names, raw.lower()):
            return InWords(say(raw), details)
    sentence = _as_sentence(raw) if raw else f"Something went wrong ({name or 'no reason given'})."
    return InWords(sentence, "" if sentence == _as_sentence(details) or not name else details)


def _as_sentence(text: str) -> str:
    """One line, a capital where it starts with a plain word (not a name such as "org/model"), a stop."""
    text = " ".join(text.split())
    if re.match(r"[a-z]+(?:[\s,;]|$)", text):
        text = text[:1].upper() + text[1:]
    return text + ("" if text.endswith((".", "!", "?", ")")) else ".")


def _where(raw: str, default: str = "the server") -> str:
    for pattern in _WHERE:
        if m := pattern.search(raw):
            return m.group(1)
    return default


def _offline(raw: str) -> bool:
    return any(s in raw for s in _OFFLINE) or "dns:" in raw


def _hub(raw: str) -> bool:
    return any(s in raw for s in ("hugging face", "huggingface", "search '", "the hub", "download"))


def _no_host(raw: str) -> str:
    if _hub(raw.lower()):
        return ("Could not reach Hugging Face: this computer seems to be offline. Check the network "
                "connection and try again.")
    host = m.group(1) if (m := _HOST.search(raw)) else "the server's address"
    return f"Could not find {host}: check the address, and that this computer is online."


Rule = tuple[Callable[[set, str], bool], Callable[[str], str]]
_RULES: list[Rule] = [
    (lambda n, r: "ContextOverflowError" in n,
     lambda r: "This conversation no longer fits in the model's context, so it cannot answer. Let it leave "
               "out earlier messages (Conversation settings, When too long), or start a new conversation "
               "(Ctrl+N) to go on."),
    (lambda n, r: bool(n & {"CapacityError", "AllSessionsBusyError"}),
     lambda r: "The model has no room for another conversation right now. Wait for a reply to finish, "
               "or stop one (Esc), and try again."),
    (lambda n, r: "stopped mid-reply" in r or "connection lost mid-reply" in r,  # the latter: older rows
     lambda r: "The server stopped in the middle of this reply (its connection closed). What arrived is "
               "kept; Continue writes the rest once the server is back."),
    (lambda n, r: "ConnectionLostError" in n,
     lambda r: "The connection to the server dropped during this reply. What arrived is kept; Continue "
               "writes the rest."),
    (lambda n, r: "ReplyCutError" in n,
     lambda r: "The server ended this reply before it finished. What arrived is kept; Continue writes the rest."),
    (lambda n, r: ("AuthenticationFailedError" in n or "refused the api key" in r) and "none was given" in r,
     lambda r: "The server asks for an API key: enter the one it expects."),
    (lambda n, r: "AuthenticationFailedError" in n or "refused the api key" in r or "refused this api key" in r,
     lambda r: "The server refused the API key: check it."),
    (lambda n, r: "NotOpenAIServerError" in n or r.startswith("not an openai api"),
     lambda r: "That address does not answer like an OpenAI-compatible API. Check the URL: it usually "
               "ends in /v1."),
    (lambda n, r: "NetworkError" in n and "resumes" in r,
     lambda r: "The download was cut off by a network error. Check the connection and try again: it "
               "resumes where it stopped."),
    (lambda n, r: "NetworkError" in n and "hugging face" in r and "resumes" not in r,
     lambda r: "Could not reach Hugging Face: check that this computer is online, then try again."),
    (lambda n, r: "refused" in r and ("nothing listens" in r or "connection refused" in r),
     lambda r: f"Nothing answers at {_where(r)}. Start the server there, or check the address and port."),
    (lambda n, r: _offline(r), _no_host),
    (lambda n, r: "timeout" in r or "timed out" in r or "did not answer in time" in r,
     lambda r: f"{_where(r, 'The server')} did not answer in time. Check that it is running and reachable, "
               "then try again."),
    (lambda n, r: "AccessDeniedError" in n,
     lambda r: "This model is gated or private on Hugging Face: accept its terms on huggingface.co and "
               "set a token (HF_TOKEN), then try again."),
    (lambda n, r: "RepoNotFoundError" in n,
     lambda r: "Hugging Face has no model by that name. Check the name, or search for it."),
    (lambda n, r: "DiskFullError" in n,
     lambda r: "There is not enough free disk space for this download. Free some space and try again."),
    (lambda n, r: bool(n & {"NetworkError", "ServerUnreachableError", "ConnectError", "ConnectionError"}),
     lambda r: "Could not connect. Check the network connection and the address, then try again."),
]


def sentence_of(error: Optional[BaseException | str]) -> str:
    """Just the sentence ("" for no error)."""
    return in_words(error).sentence if error else ""
