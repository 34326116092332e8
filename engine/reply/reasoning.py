"""Reasoning apart from the answer: which format a model thinks in, and a streaming splitter.

Models that think before they answer write their reasoning inline: Qwen3, DeepSeek-R1 distills and
SmolLM3 between `<think>` and `</think>` (DeepSeek-R1's template opens the block in the prompt, so
the reply starts inside it), gpt-oss in "channels" (`<|channel|>analysis<|message|>…<|end|>` then
`<|start|>assistant<|channel|>final<|message|>…`). The format is read from the chat template, the
one place that knows how the model was trained to write.

The splitter is written by hand (a few states over a text buffer): the tags must be found in a
stream cut at any character, which no parsing library here does incrementally, and llama.cpp's and
vLLM's reasoning parsers live inside their servers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
CHANNEL, MESSAGE = "<|channel|>", "<|message|>"
_CHANNEL_ENDS = ("<|end|>", "<|return|>", "<|call|>", "<|start|>")
CHANNEL_MARKERS = (CHANNEL, MESSAGE, "<|constrain|>") + _CHANNEL_ENDS
"""gpt-oss's control tokens: special tokens a decoder must keep for the splitter to see them."""

Start = Literal["start", "reasoning", "answer"]
"""Where a reply begins: "start" (it may open a think block), "reasoning" (the prompt opened one),
"answer" (the prompt closed one, or the model does not think)."""


@dataclass(frozen=True)
class ReasoningFormat:
    """How one model's chat template lays out reasoning."""

    kind: Literal["none", "think", "channels"]
    """"think": `<think>…</think>` tags; "channels": gpt-oss's analysis/final channels; "none"."""
    switch: Optional[str] = None
    """The template variable that turns thinking on or off ("enable_thinking") or sets its effort
    ("reasoning_effort"); None when the template has no such switch."""
    history_field: Optional[str] = None
    """The message field through which the template reads an earlier reply's reasoning
    ("reasoning_content", "thinking"); None: earlier reasoning is never sent back."""

    @property
    def markers(self) -> tuple[str, ...]:
        """Tag texts the splitter looks for (special tokens among them must be decoded, not skipped)."""
        return {"think": (THINK_OPEN, THINK_CLOSE), "channels": CHANNEL_MARKERS}.get(self.kind, ())

    def template_kwargs(self, thinking: Optional[bool]) -> dict:
        """Extra template variables for the Think switch: None leaves the template's default.
        gpt-oss cannot stop reasoning; off asks for the least of it ("low")."""
        if thinking is None or self.switch is None:
            return {}
        if self.switch == "reasoning_effort":
            return {} if thinking else {"reasoning_effort": "low"}
        return {self.switch: bool(thinking)}

    def splitter(self, start: Start = "start") -> "Splitter":
        if self.kind == "think":
            return ThinkSplitter(start)
        if self.kind == "channels":
            return ChannelSplitter(start)
        return Splitter()


NO_REASONING = ReasoningFormat("none")


def detect(template: Optional[str]) -> ReasoningFormat:
    """The reasoning format a chat template uses (NO_REASONING for templates that never mention one)."""
    if not template:
        return NO_REASONING
    if CHANNEL in template and "analysis" in template:
        return ReasoningFormat("channels", "reasoning_effort" if "reasoning_effort" in template else None,
                               "thinking" if "thinking" in template else None)
    if THINK_CLOSE in template or THINK_OPEN in template:
        return ReasoningFormat("think", "enable_thinking" if "enable_thinking" in template else None,
                               "reasoning_content" if "reasoning_content" in template else None)
    return NO_REASONING


def start_of(generation_prompt: str, fmt: ReasoningFormat) -> Start:
    """Where a reply begins, from the text the template appends to ask for it (its generation
    prompt): DeepSeek-R1's `<｜Assistant｜><think>\\n` starts it inside the reasoning, Qwen3's
    `<think>\\n\\n</think>\\n\\n` (thinking off) starts it at the answer."""
    if fmt.kind != "think":
        return "start"
    opened, closed = generation_prompt.rfind(THINK_OPEN), generation_prompt.rfind(THINK_CLOSE)
    if opened > closed:
        return "reasoning"
    return "answer" if closed >= 0 else "start"


def _held(buffer: str, markers: tuple[str, ...]) -> int:
    """Length of the longest end of `buffer` that could be the start of one of `markers`."""
    longest = 0
    for marker in markers:
        for n in range(min(len(marker) - 1, len(buffer)), longest, -1):
            if buffer.endswith(marker[:n]):
                longest = n
                break
    return longest


class Splitter:
    """Text in, (reasoning, answer) out, chunk by chunk; a model that does not think: all answer."""

    def feed(self, text: str) -> tuple[str, str]:
        """The new reasoning and answer text in `text` (a tag cut across chunks waits for its rest)."""
        return "", text

    def flush(self) -> tuple[str, str]:
        """What was held back, at the end of the reply."""
        return "", ""


class ThinkSplitter(Splitter):
    """`<think>reasoning</think>answer`. A block opens only at the very start of a reply (after
    whitespace): a `<think>` later in an answer is text the model talks about. Whitespace around the
    reasoning and before the answer is dropped, as the templates drop it on the next turn."""

    def __init__(self, start: Start = "start") -> None:
        self._state: str = {"start": "start", "reasoning": "reasoning", "answer": "answer"}[start]
        self._buffer = ""
        self._reasoning_started = False

    def feed(self, text: str) -> tuple[str, str]:
        self._buffer += text
        reasoning: list[str] = []
        answer: list[str] = []
        while True:
            if self._state == "start":
                stripped = self._buffer.lstrip()
                if stripped.startswith(THINK_OPEN):
                    self._buffer, self._state = stripped[len(THINK_OPEN):], "reasoning"
                    continue
                if THINK_OPEN.startswith(stripped):  # "", "<", "<th", ...: wait for more
                    break
                self._state = "answer"
            elif self._state == "reasoning":
                end = self._buffer.find(THINK_CLOSE)
                if end >= 0:
                    reasoning.append(self._reasoning(self._buffer[:end].rstrip()))
                    self._buffer, self._state = self._buffer[end + len(THINK_CLOSE):], "after"
                    continue
                ready = self._buffer[: len(self._buffer) - _held(self._buffer, (THINK_CLOSE,))]
                ready = ready.rstrip()  # trailing whitespace waits: it may precede </think>
                reasoning.append(self._reasoning(ready))
                self._buffer = self._buffer[len(ready):]
                break
            elif self._state == "after":
                self._buffer = self._buffer.lstrip()
                if not self._buffer:
                    break
                self._state = "answer"
            else:  # answer: everything passes
                answer.append(self._buffer)
                self._buffer = ""
                break
        return "".join(reasoning), "".join(answer)

    def _reasoning(self, text: str) -> str:
        if not self._reasoning_started:
            text = text.lstrip()
            self._reasoning_started = bool(text)
        return text

    def flush(self) -> tuple[str, str]:
        rest, self._buffer = self._buffer, ""
        if self._state == "reasoning":  # cut off while thinking
            return self._reasoning(rest.rstrip()), ""
        return "", "" if self._state == "after" else rest


class ChannelSplitter(Splitter):
    """gpt-oss's channels: `<|channel|>NAME<|message|>text<|end|>` messages, one after another
    (`<|start|>assistant` between them). The analysis channel is reasoning; final and commentary
    are answer. A reply that opens with no channel header at all is taken as plain answer."""

    def __init__(self, start: Start = "start") -> None:
        self._state = "answer" if start == "answer" else "header"
        self._channel = "final"
        self._buffer = ""

    def feed(self, text: str) -> tuple[str, str]:
        self._buffer += text
        reasoning: list[str] = []
        answer: list[str] = []
        while self._buffer:
            if self._state == "header":
                head = self._buffer.lstrip()
                if head and not head.startswith("<|"[: len(head)]):
                    self._state, self._channel = "body", "final"  # no header: a plain answer
                    continue
                end = self._buffer.find(MESSAGE)
                if end < 0:
                    break
                header, self._buffer = self._buffer[:end], self._buffer[end + len(MESSAGE):]
                self._channel = _channel_name(header)
                self._state = "body"
            else:
                ends = [i for i in (self._buffer.find(m) for m in _CHANNEL_ENDS) if i >= 0]
                cut = min(ends) if ends else len(self._buffer) - _held(self._buffer, _CHANNEL_ENDS)
                (reasoning if self._channel == "analysis" else answer).append(self._buffer[:cut])
                if not ends:
                    self._buffer = self._buffer[cut:]
                    break
                rest = self._buffer[cut:]
                marker = next(m for m in _CHANNEL_ENDS if rest.startswith(m))
                # <|start|> begins the next message's header; the other ends are dropped
                self._buffer = rest if marker == "<|start|>" else rest[len(marker):]
                self._state = "header"
        return "".join(reasoning), "".join(answer)

    def flush(self) -> tuple[str, str]:
        rest, self._buffer = self._buffer, ""
        if self._state == "body":
            return (rest, "") if self._channel == "analysis" else ("", rest)
        return "", ""  # an unfinished header says nothing


def _channel_name(header: str) -> str:
    """"analysis" from "<|channel|>analysis", "<|start|>assistant<|channel|>final", ..."""
    if CHANNEL not in header:
        return "final"
    name = header.rsplit(CHANNEL, 1)[1].split("<|", 1)[0].strip()
    return name.split()[0] if name else "final"
