"""Request bodies as pydantic models: what the OpenAI API sends, and nothing we would silently ignore.

Fields are strict (a string is not a number) and unknown fields are refused (`extra="forbid"`): a
parameter this server does not implement and that would change the result (logit_bias, n > 1)
must fail with 400, never be dropped. Besides OpenAI's sampling fields, llama.cpp server's names
(top_k, min_p, repeat_penalty, repeat_last_n) and vLLM's repetition_penalty are taken, as clients
written for those servers send them. Fields that change nothing (user, metadata,
store, null fields, cache_control on parts) are accepted and ignored, as OpenAI accepts what its
own SDK sends back. Tools, tool choices and response formats are typed in `tool_schemas`.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..errors import bad_request
from ..image_input import from_data_url
from .tool_schemas import ResponseFormat, Tool, ToolCallIn, ToolChoice

MAX_STOP = 4


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        """A field sent as null means "not set" (the SDK's `model_dump()` sends many): only a field
        set to a value that would change the result is refused."""
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None or k == "content"}
        return data


class TextPart(_Strict):
    """One part of a message's content; only text is understood by a text model."""

    type: Literal["text"]
    text: str
    cache_control: Optional[dict[str, Any]] = None
    """A prompt-caching hint some clients add (Anthropic's form); caching here is automatic."""


class ImageURL(_Strict):
    url: str
    """A data URL (data:image/png;base64,…); web addresses are refused (engine/server/image_input.py)."""
    detail: Optional[Literal["auto", "low", "high"]] = None
    """Accepted and ignored: the model's own preprocessor decides the size it sees."""


class ImagePart(_Strict):
    """An image in a user message, for a model that reads images (its mmproj loaded)."""

    type: Literal["image_url"]
    image_url: ImageURL


class ChatMessage(_Strict):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Union[str, list[Union[TextPart, ImagePart]], None] = None
    name: Optional[str] = None
    tool_calls: Optional[list[ToolCallIn]] = None
    tool_call_id: Optional[str] = Field(default=None, max_length=200)
    reasoning_content: Optional[str] = None
    """An earlier reply's reasoning, as this server returns it; the chat template decides whether
    the model sees it again."""
    # What the SDK's `model_dump()` of its own reply carries: accepted when empty, as OpenAI does.
    refusal: Optional[str] = None
    function_call: Optional[Any] = None
    audio: Optional[Any] = None
    annotations: Optional[list[Any]] = None

    @model_validator(mode="after")
    def _message(self) -> "ChatMessage":
        if self.content is None and self.role != "assistant":
            raise ValueError(f"a {self.role} message needs content")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id of the call it answers")
        if self.function_call is not None or self.audio is not None:
            raise ValueError("messages with function_call (use tool_calls) or audio are not supported")
        return self

    def as_engine(self, index: int = 0) -> dict:
        """{"role", "content"} as the chat template expects (developer is the newer name of system),
        with `tool_calls` / `tool_call_id` where the message has them, and "reasoning" for an
        assistant message that carries its reasoning. Content with images stays a list of parts,
        each image as the engine's image part (its bytes)."""
        content = self.content or ""
        if isinstance(content, list) and not any(isinstance(p, ImagePart) for p in content):
            content = "".join(p.text for p in content)
        elif isinstance(content, list):
            if self.role != "user":
                raise bad_request(f"messages[{index}]: images go in user messages, not {self.role} ones",
                                  "invalid_image")
            content = [from_data_url(p.image_url.url, f"messages[{index}].content[{j}]") if isinstance(p, ImagePart)
                       else {"type": "text", "text": p.text} for j, p in enumerate(content)]
        message = {"role": "system" if self.role == "developer" else self.role, "content": content}
        if self.tool_calls:
            message["tool_calls"] = [c.model_dump() for c in self.tool_calls]
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        if self.role == "assistant" and self.reasoning_content:
            message["reasoning"] = self.reasoning_content
        return message


class StreamOptions(_Strict):
    include_usage: bool = False


class _Sampling(_Strict):
    """What both endpoints share: model, sampling, stop strings, streaming and the session."""

    model: Optional[str] = None
    stream: bool = False
    stream_options: Optional[StreamOptions] = None
    temperature: Optional[float] = Field(default=None, ge=0, le=2)
    top_p: Optional[float] = Field(default=None, ge=0, le=1)
    """0 keeps only the likeliest token (OpenAI accepts it): sampled as greedy."""
    max_tokens: Optional[int] = Field(default=None, ge=1)
    stop: Optional[Union[str, list[str]]] = None
    seed: Optional[int] = None
    n: Optional[int] = None
    session_id: Optional[str] = Field(default=None, min_length=1, max_length=200)
    ignore_eos: bool = False
    """vLLM's extension: generate max_tokens even past end tokens (benchmarks, fixed-length tests)."""
    context_policy: Optional[Literal["refuse", "middle", "rolling"]] = None
    """A prompt longer than the context: refused (the default), or cut (engine.reply.truncation), said in
    the reply's `truncated` field and X-Confab-Truncated header."""
    speculative: bool = True
    """Confab's extension: false never drafts tokens for this reply (the same text either way)."""
    frequency_penalty: Optional[float] = Field(default=None, ge=-2, le=2)
    presence_penalty: Optional[float] = Field(default=None, ge=-2, le=2)
    # llama.cpp server's names (and vLLM's repetition_penalty): engine.SamplingParams says what each does.
    top_k: Optional[int] = Field(default=None, ge=0)
    min_p: Optional[float] = Field(default=None, ge=0, lt=1)
    repeat_penalty: Optional[float] = Field(default=None, gt=0, le=10)
    repetition_penalty: Optional[float] = Field(default=None, gt=0, le=10)
    repeat_last_n: Optional[int] = Field(default=None, ge=-1)
    """How many of the session's last tokens the penalties look at: -1 all, 0 none (default 64)."""
    # Accepted because they change nothing here.
    user: Optional[str] = None
    metadata: Optional[dict[str, Any]] = None
    store: Optional[bool] = None
    # Accepted only at its no-op value: anything else would change the result.
    logit_bias: Optional[dict[str, Any]] = None

    @field_validator("n")
    @classmethod
    def _one_choice(cls, n: Optional[int]) -> Optional[int]:
        if n is not None and n != 1:
            raise ValueError("only n=1 is supported")
        return n

    @field_validator("stop")
    @classmethod
    def _stops(cls, stop):
        stops = [stop] if isinstance(stop, str) else (stop or [])
        if len(stops) > MAX_STOP or any(not s for s in stops):
            raise ValueError(f"stop takes at most {MAX_STOP} non-empty strings")
        return stop

    @model_validator(mode="after")
    def _one_repeat_penalty(self) -> "_Sampling":
        both = (self.repeat_penalty, self.repetition_penalty)
        if None not in both and both[0] != both[1]:
            raise ValueError("repeat_penalty and repetition_penalty name one setting: send one of them")
        return self

    @field_validator("logit_bias")
    @classmethod
    def _no_bias(cls, value):
        if value:
            raise ValueError("logit_bias is not supported")
        return value

    @property
    def stops(self) -> list[str]:
        return [self.stop] if isinstance(self.stop, str) else list(self.stop or [])

    @property
    def penalty(self) -> Optional[float]:
        """The repeat penalty, under either name."""
        return self.repeat_penalty if self.repeat_penalty is not None else self.repetition_penalty

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)


class ChatCompletionRequest(_Sampling):
    """POST /v1/chat/completions."""

    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: Optional[int] = Field(default=None, ge=1)
    logprobs: Optional[bool] = None
    top_logprobs: Optional[int] = Field(default=None, ge=0, le=20)
    response_format: Optional[ResponseFormat] = None
    tools: Optional[list[Tool]] = None
    tool_choice: Optional[ToolChoice] = None
    parallel_tool_calls: Optional[bool] = None

    @property
    def token_limit(self) -> Optional[int]:
        return self.max_completion_tokens or self.max_tokens

    def engine_messages(self) -> list[dict]:
        return [m.as_engine(i) for i, m in enumerate(self.messages)]


class CompletionRequest(_Sampling):
    """POST /v1/completions: a raw prompt (text, one text in a list, or token ids)."""

    prompt: Union[str, list[str], list[int]]
    echo: Optional[bool] = None
    suffix: Optional[str] = None
    best_of: Optional[int] = None
    logprobs: Optional[int] = Field(default=None, ge=0, le=20)

    @model_validator(mode="after")
    def _supported(self) -> "CompletionRequest":
        if isinstance(self.prompt, list):
            if not self.prompt:
                raise ValueError("prompt must not be empty")
            if isinstance(self.prompt[0], str) and len(self.prompt) != 1:
                raise ValueError("only one prompt per request is supported")
        if self.prompt == "":
            raise ValueError("prompt must not be empty")
        if self.echo:
            raise ValueError("echo is not supported")
        if self.suffix:
            raise ValueError("suffix is not supported")
        if self.best_of not in (None, 1):
            raise ValueError("only best_of=1 is supported")
        return self

    @property
    def token_limit(self) -> int:
        return self.max_tokens or 16  # the OpenAI default for completions
