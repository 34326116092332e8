"""Tokens ⇄ text: chat template, end tokens and streaming detokenizing, shared by both backends.

Both backends use the same Hugging Face tokenizer so that a conversation tokenizes identically
whichever library computes it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

from .errors import InvalidRequestError, ModelLoadError
from .toolcalls import check_tools, detect_format, template_messages

# End-of-turn markers of common chat templates; used as stop tokens when the template uses them.
_TURN_ENDS = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>")

ROLES = ("system", "user", "assistant", "tool")
"""Message roles chat templates understand."""


class TextCodec:
    """Chat template rendering, encoding, stop tokens and a streaming decoder for one model."""

    def __init__(self, folder: Path) -> None:
        from transformers import AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False, local_files_only=True)
        except Exception as e:
            raise ModelLoadError(f"could not load the tokenizer of {folder.name}: {e}") from e
        if not getattr(self.tokenizer, "is_fast", False):
            raise ModelLoadError(f"{folder.name}: only fast (tokenizers) tokenizers are supported")
        self.chat_template: Optional[str] = getattr(self.tokenizer, "chat_template", None)
        self.stop_ids = frozenset(self._stop_ids(folder))
        self.template_fingerprint = hashlib.sha256((self.chat_template or "").encode()).hexdigest()[:32]
        self.tool_format, self._native_tools = detect_format(self.chat_template)

    def _stop_ids(self, folder: Path) -> set[int]:
        ids: set[int] = set()
        for name in ("config.json", "generation_config.json"):
            try:
                eos = json.loads((folder / name).read_text()).get("eos_token_id")
            except (OSError, ValueError):
                continue
            ids.update([eos] if isinstance(eos, int) else (eos or []))
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        vocab = self.tokenizer.get_vocab()
        for marker in _TURN_ENDS:
            if marker in vocab and (self.chat_template is None or marker in self.chat_template):
                ids.add(vocab[marker])
        return ids

    def render(self, messages: list[dict], continue_final: bool = False, tools: Optional[list[dict]] = None) -> str:
        """The chat template applied to `messages`, ending with the assistant's generation prompt;
        with `continue_final`, ending inside the last (assistant) message instead, left open so
        the model writes more of it (a reply cut by the token limit or stopped).

        `tools` (OpenAI's function tools) and messages with `tool_calls` or role "tool" are rendered
        by the template where it knows tools, else the Hermes way (engine.toolcalls)."""
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, dict) and "role" in m and "content" in m for m in messages):
            raise InvalidRequestError("messages must be a non-empty list of {'role': ..., 'content': ...}")
        for i, m in enumerate(messages):
            if m["role"] not in ROLES:
                raise InvalidRequestError(f"message {i}: role must be one of {', '.join(ROLES)}, not {m['role']!r}")
            if not isinstance(m["content"], str) and not (m["content"] is None and m.get("tool_calls")):
                raise InvalidRequestError(f"message {i}: content must be a string, not {type(m['content']).__name__}")
        if not self.chat_template:
            raise InvalidRequestError("this model has no chat template; use generate() with token ids")
        if continue_final and messages[-1]["role"] != "assistant":
            raise InvalidRequestError("only an assistant message can be continued; the last message is "
                                      f"{messages[-1]['role']!r}")
        if tools is not None:
            check_tools(tools)
        messages, tools = template_messages(messages, tools, self.tool_format, self._native_tools)
        try:
            return self.tokenizer.apply_chat_template(
                messages, tools=tools, tokenize=False, add_generation_prompt=not continue_final,
                continue_final_message=continue_final)
        except Exception as e:
            raise InvalidRequestError(f"the chat template rejected these messages: {e}") from e

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`; special-token text maps to its ids, nothing is added."""
        return list(self.tokenizer(text, add_special_tokens=False).input_ids)

    def decode(self, ids: list[int], keep_special: bool = False) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=not keep_special)

    def stream_decoder(self) -> "StreamDecoder":
        return StreamDecoder(self.tokenizer.backend_tokenizer)


class StreamDecoder:
    """Text of each new token, never splitting a multi-byte character (tokenizers' DecodeStream)."""

    def __init__(self, backend_tokenizer) -> None:
        from tokenizers.decoders import DecodeStream

        self._tokenizer = backend_tokenizer
        self._stream = DecodeStream(skip_special_tokens=True)

    def step(self, token_id: int) -> str:
        return self._stream.step(self._tokenizer, token_id) or ""
