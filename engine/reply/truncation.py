"""What to do with a conversation longer than the model's context: refuse, or cut it, and say so.

    messages, cut = fit_messages(messages, count, limit=4096, policy="rolling", reserve=512)
    if cut is not None:
        print(cut.note())        # "Dropped 6 earlier messages (5,210 → 3,480 tokens) to fit ..."

Policies (one per API request or per conversation):
- "refuse": nothing is cut; a prompt that leaves no room for a reply raises ContextOverflowError
  with the numbers (the API's default, and what the app did before policies existed).
- "middle": keep the system prompt, the first exchange and the latest turns; drop turns in between.
- "rolling": keep the system prompt and the latest turns; drop the oldest turns.

A turn is a user message and everything after it up to the next user message, so an assistant's
tool call is never separated from its tool results. The latest turn is never cut: when even it
does not fit, the request is refused with the numbers, whatever the policy.

Used by the server (every API) and the app (each conversation); no Qt, no HTTP here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from ..errors import ContextOverflowError, InvalidRequestError

POLICIES: tuple[str, ...] = ("refuse", "middle", "rolling")
DEFAULT_POLICY = "refuse"
HEADER = "X-Confab-Truncated"
"""Response header that says what was cut (absent when nothing was)."""

LABELS = {
    "refuse": "Refuse: say it is too long",
    "middle": "Drop the middle: keep the start and the latest messages",
    "rolling": "Rolling window: drop the oldest messages",
}
"""How each policy is named to a person (the app's conversation settings)."""


@dataclass(frozen=True)
class Cut:
    """What was cut from one prompt to fit the context."""

    policy: str
    dropped_messages: int
    """Messages left out (0 for a raw token prompt)."""
    prompt_tokens_before: int
    """Tokens the whole prompt would have taken."""
    prompt_tokens: int
    """Tokens of the prompt the model read."""
    context: int
    """The model's context, in tokens."""

    def as_json(self) -> dict:
        """The `truncated` field of an API response."""
        return {"policy": self.policy, "dropped_messages": self.dropped_messages,
                "prompt_tokens_before": self.prompt_tokens_before, "prompt_tokens": self.prompt_tokens,
                "context": self.context}

    def header(self) -> str:
        """The `X-Confab-Truncated` header's value."""
        return (f"policy={self.policy}; dropped_messages={self.dropped_messages}; "
                f"prompt_tokens_before={self.prompt_tokens_before}; prompt_tokens={self.prompt_tokens}; "
                f"context={self.context}")

    def note(self) -> str:
        """One sentence for a person, shown on the reply."""
        what = (f"{self.dropped_messages} earlier message{'s' if self.dropped_messages != 1 else ''}"
                if self.dropped_messages else "part of the prompt")
        where = "from the middle" if self.policy == "middle" else "from the start"
        return (f"The conversation was longer than the model's context of {self.context:,} tokens: "
                f"{what} {where} left out ({self.prompt_tokens_before:,} → {self.prompt_tokens:,} tokens). "
                "The model did not see them for this reply.")


def truncation_fields(cut: Optional[Cut]) -> tuple[dict, dict[str, str]]:
    """({"truncated": ...}, headers) for any API's response: the field is null when nothing was cut,
    and the header is only sent when something was. One function so every API says it the same way."""
    if cut is None:
        return {"truncated": None}, {}
    return {"truncated": cut.as_json()}, {HEADER: cut.header()}


def check_policy(policy: Optional[str]) -> str:
    """The policy, or InvalidRequestError naming the ones there are (None: the default)."""
    if policy is None:
        return DEFAULT_POLICY
    if policy not in POLICIES:
        raise InvalidRequestError(f"context policy must be one of {', '.join(POLICIES)}, not {policy!r}")
    return policy


def reply_room(limit: int, max_tokens: Optional[int]) -> int:
    """Tokens a cutting policy leaves for the reply: what was asked, at most half the context, and a
    quarter of it (at most 1,024) when nothing was asked."""
    wanted = max_tokens if max_tokens else min(limit // 4, 1024)
    return max(1, min(wanted, limit // 2))


def overflow(tokens: int, limit: int, latest_only: bool = False) -> ContextOverflowError:
    """The refusal, with the numbers."""
    if latest_only:
        return ContextOverflowError(
            f"the latest message (with the system prompt) takes {tokens} tokens; this model's context is "
            f"{limit} tokens (room is needed for the reply), so dropping earlier messages cannot fit it")
    return ContextOverflowError(
        f"the prompt has {tokens} tokens; this model's context is {limit} tokens (room is needed for "
        "the reply). Shorten it, or ask for context_policy \"middle\" or \"rolling\" to drop messages")


def fit_messages(messages: list[dict], count: Callable[[list[dict]], int], limit: int, policy: str,
                 reserve: int = 1) -> tuple[list[dict], Optional[Cut]]:
    """`messages` as the model will read them under `policy`, and what was cut (None: nothing).

    count(messages) -> prompt tokens (the chat template applied); limit: the context in tokens;
    reserve: tokens a cutting policy keeps free for the reply. "refuse" only needs one token free,
    as before. Raises ContextOverflowError when the prompt cannot fit."""
    policy = check_policy(policy)
    total = count(messages)
    if total < limit and (policy == "refuse" or total + reserve <= limit):
        return messages, None
    if policy == "refuse":
        raise overflow(total, limit)
    budget = limit - reserve
    pinned, turns = _turns(messages)
    keep_first = 1 if policy == "middle" and len(turns) > 2 else 0
    droppable = len(turns) - 1 - keep_first  # the latest turn is never dropped

    def kept(drop: int) -> list[dict]:
        chosen = turns[:keep_first] + turns[keep_first + drop:]
        return pinned + [m for turn in chosen for m in turn]

    # The fewest turns dropped that fit (tokens fall as more are dropped): a binary search.
    low, high, best = 1, droppable, None
    while low <= high:
        mid = (low + high) // 2
        tokens = count(kept(mid))
        if tokens <= budget:
            best, high = (mid, tokens), mid - 1
        else:
            low = mid + 1
    if best is None:  # even the latest turn alone leaves less than `reserve`: keep only it, if it fits
        tokens = count(pinned + turns[-1])
        if tokens >= limit:
            raise overflow(tokens, limit, latest_only=True)
        if len(turns) == 1:
            return messages, None
        best, keep_first = (len(turns) - 1, tokens), 0
    drop, tokens = best
    out = kept(drop)
    return out, Cut(policy, len(messages) - len(out), total, tokens, limit)


def fit_tokens(prompt: Sequence[int], limit: int, policy: str, reserve: int = 1,
               keep_start: int = 0) -> tuple[list[int], Optional[Cut]]:
    """A raw token prompt (completions) under `policy`: "rolling" keeps its end, "middle" its first
    `keep_start` tokens (default: a quarter of what fits) and its end."""
    policy = check_policy(policy)
    prompt = list(prompt)
    total = len(prompt)
    if total < limit and (policy == "refuse" or total + reserve <= limit):
        return prompt, None
    if policy == "refuse":
        raise overflow(total, limit)
    budget = max(1, limit - reserve)
    head = 0 if policy == "rolling" else min(keep_start or budget // 4, budget - 1)
    out = prompt[:head] + prompt[total - (budget - head):]
    return out, Cut(policy, 0, total, len(out), limit)


def _turns(messages: list[dict]) -> tuple[list[dict], list[list[dict]]]:
    """(leading system messages, turns): each turn starts at a user message; what comes before the
    first user message (a greeting) is a turn of its own."""
    start = 0
    while start < len(messages) and messages[start].get("role") in ("system", "developer"):
        start += 1
    turns: list[list[dict]] = []
    for message in messages[start:]:
        if not turns or message.get("role") == "user":
            turns.append([])
        turns[-1].append(message)
    return list(messages[:start]), turns
