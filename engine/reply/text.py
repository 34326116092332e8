"""Tokens ⇄ text: chat template, end tokens and streaming detokenizing, shared by both backends.

Both backends use the same Hugging Face tokenizer so that a conversation tokenizes identically
whichever library computes it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Optional

from . import reasoning
from ..errors import InvalidRequestError, ModelLoadError
from .toolcalls import check_tools, detect_format, template_messages

# End-of-turn markers of common chat templates; used as stop tokens when the template uses them.
_TURN_ENDS = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>")

ENCODINGS_KEPT = 4
"""Chat texts whose ids are kept: a server request encodes its prompt once to fit it to the context
and the session encodes the same text again to start it (a 4,000-token agent prompt: 7 ms each on
two EPYC cores, a tenth of reading its last 16 tokens), so the second is served from here."""

ROLES = ("system", "user", "assistant", "tool")
"""Message roles chat templates understand."""


def clean(text: str) -> str:
    """`text` with lone surrogates (valid in JSON and Python strings, not in UTF-8) as U+FFFD, as
    the store writes them; the tokenizer cannot encode them. Surrogate pairs are joined."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@dataclass(frozen=True)
class Rendered:
    """A rendered conversation and where in it the messages' own content lies."""

    text: str
    content: Optional[tuple[tuple[int, int], ...]]
    """(start, end) character spans of message content; None when the template changed the content
    in a way that could not be traced (then the text is encoded as a whole)."""


class TextCodec:
    """Chat template rendering, encoding, stop tokens and a streaming decoder for one model.

    `encode` is safe from any thread (the engine thread, a server's threads, the app's file readers
    counting tokens): it holds `_lock`. A Hugging Face fast tokenizer's call is not purely a read:
    transformers first sets the Rust tokenizer's truncation and padding to what the call asks for,
    and older tokenizers releases failed such a change made while another thread encoded ("Already
    borrowed"). With tokenizers 0.23 a truncating call during another thread's long encode raised
    nothing, but `Engine.tokenizer` is public and a backend may bring its own tokenizer, so the
    lock keeps the promise whatever the library. Encoding goes through transformers' call, whose
    batch encode releases the GIL, so other Python threads (the GUI's) go on meanwhile; the Rust
    tokenizer's single `encode` holds the GIL throughout (counting 500k characters stalled every
    other thread for 0.45-0.8 s on a 2-core machine).
    """

    def __init__(self, folder: Path) -> None:
        from transformers import AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False, local_files_only=True)
        except Exception as e:
            raise ModelLoadError(f"could not load the tokenizer of {folder.name}: {e}") from e
        if not getattr(self.tokenizer, "is_fast", False):
            raise ModelLoadError(f"{folder.name}: only fast (tokenizers) tokenizers are supported")
        self.chat_template: Optional[str] = getattr(self.tokenizer, "chat_template", None)
        self.reasoning = reasoning.detect(self.chat_template)
        """How this model's replies lay out reasoning (engine/reply/reasoning.py)."""
        self._markers = self._special_markers()
        self._starts: dict[Optional[bool], reasoning.Start] = {}
        self.stop_ids = frozenset(self._stop_ids(folder))
        self.template_fingerprint = hashlib.sha256((self.chat_template or "").encode()).hexdigest()[:32]
        self.tool_format, self._native_tools = detect_format(self.chat_template)
        self._lock = threading.Lock()
        self._encoded: OrderedDict[tuple, tuple[int, ...]] = OrderedDict()  # under _lock

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
            if marker == "<|end|>" and self.reasoning.kind == "channels":
                continue  # gpt-oss ends each channel's message with it; <|return|> ends the reply
            if marker in vocab and (self.chat_template is None or marker in self.chat_template):
                ids.add(vocab[marker])
        return ids

    def _special_markers(self) -> dict[int, str]:
        """Ids of the reasoning format's tags that are special tokens (a decoder skipping special
        tokens would hide them from the splitter), e.g. gpt-oss's <|channel|>."""
        wanted = set(self.reasoning.markers)
        return {i: t.content for i, t in self.tokenizer.added_tokens_decoder.items()
                if t.special and t.content in wanted}

    def render(self, messages: list[dict], continue_final: bool = False, tools: Optional[list[dict]] = None,
               thinking: Optional[bool] = None) -> str:
        """The chat template applied to `messages`, ending with the assistant's generation prompt;
        with `continue_final`, ending inside the last (assistant) message instead, left open so
        the model writes more of it (a reply cut by the token limit or stopped).

        `tools` (OpenAI's function tools) and messages with `tool_calls` or role "tool" are rendered
        by the template where it knows tools, else the Hermes way (engine.reply.toolcalls).

        An assistant message may carry its `reasoning` (text) beside its answer (`content`): it is
        passed to the template only through the field the template reads earlier reasoning from
        (Qwen3's `reasoning_content`, gpt-oss's `thinking`), so the template decides what the model
        sees again; templates without one never see it. `thinking` sets the template's Think switch
        (`enable_thinking`, or gpt-oss's `reasoning_effort`); None keeps its default."""
        return self.render_traced(messages, continue_final, tools, thinking).text

    def render_traced(self, messages: list[dict], continue_final: bool = False,
                      tools: Optional[list[dict]] = None, thinking: Optional[bool] = None) -> Rendered:
        """`render`, and where each message's content landed in the text (so `encode_chat` can
        tokenize content as text while the template's own markers stay control tokens). A tool
        result is content like any other; an assistant message's calls are not traced."""
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, dict) and "role" in m and "content" in m for m in messages):
            raise InvalidRequestError("messages must be a non-empty list of {'role': ..., 'content': ...}")
        for i, m in enumerate(messages):
            if m["role"] not in ROLES:
                raise InvalidRequestError(f"message {i}: role must be one of {', '.join(ROLES)}, not {m['role']!r}")
            if not isinstance(m["content"], str) and not (m["content"] is None and m.get("tool_calls")):
                raise InvalidRequestError(f"message {i}: content must be a string, not {type(m['content']).__name__}")
            if not isinstance(m.get("reasoning") or "", str):
                raise InvalidRequestError(f"message {i}: reasoning must be a string")
        if thinking is not None and not isinstance(thinking, bool):
            raise InvalidRequestError(f"thinking must be True, False or None, not {thinking!r}")
        if not self.chat_template:
            raise InvalidRequestError("this model has no chat template; use generate() with token ids")
        if continue_final and messages[-1]["role"] != "assistant":
            raise InvalidRequestError("only an assistant message can be continued; the last message is "
                                      f"{messages[-1]['role']!r}")
        if tools is not None:
            check_tools(tools)
        messages = [m if m["content"] is None else {**m, "content": clean(m["content"])} for m in messages]
        messages = [{**m, "reasoning": clean(m["reasoning"])} if m.get("reasoning") else m for m in messages]
        try:
            return self._traced(messages, continue_final, tools, thinking, inline=True)
        except InvalidRequestError:
            last = messages[-1]
            if not (continue_final and last.get("reasoning") and last["content"]):
                raise
            # A template that rewrites a reply's inline reasoning (DeepSeek-R1's drops it) cannot
            # continue it as it stands: the answer goes on, its reasoning passed as for history.
            return self._traced(messages, continue_final, tools, thinking, inline=False)

    def _traced(self, messages: list[dict], continue_final: bool, tools: Optional[list[dict]],
                thinking: Optional[bool], inline: bool) -> Rendered:
        last = len(messages) - 1
        shown = [self._for_template(m, inline and continue_final and i == last) for i, m in enumerate(messages)]
        if inline and continue_final:
            shown[-1] = self._open_in_field(messages[-1], shown[-1], shown[:-1], thinking)
        text = self._apply(shown, continue_final, tools, thinking)
        # The same template over placeholders shows which characters are content: the text between
        # placeholders is the template's. Placeholders are random so no content can contain one.
        # They go in before the tool shaping (engine.reply.toolcalls), so a tool result the Hermes way
        # traces as its own content inside the <tool_response> markers. Empty content (a call's is
        # often null; a reply cut inside its reasoning renders its reasoning open) is left as it is:
        # it holds nothing to protect, and templates test it.
        nonce = uuid.uuid4().hex
        marks = [f"@{nonce}:{i}@" if m["content"] else "" for i, m in enumerate(messages)]
        marked = [self._for_template({**m, "content": mark} if mark else m, inline and continue_final and i == last)
                  for i, (m, mark) in enumerate(zip(messages, marks))]
        if not marks[-1]:
            marked[-1] = shown[-1]  # no content to mark: rendered exactly as in the text
        traced = self._apply(marked, continue_final, tools, thinking)
        return Rendered(text, _trace(traced, marks, [m["content"] for m in messages], text))

    def _apply(self, shown: list[dict], continue_final: bool, tools: Optional[list[dict]],
               thinking: Optional[bool]) -> str:
        cut = shown[-1].get(_OPEN_CUT) if continue_final else None
        if cut is not None:
            shown = shown[:-1] + [{k: v for k, v in shown[-1].items() if k != _OPEN_CUT}]
        shown, tools = template_messages(shown, tools, self.tool_format, self._native_tools)
        try:
            text = self.tokenizer.apply_chat_template(
                shown, tools=tools, tokenize=False, add_generation_prompt=not continue_final,
                continue_final_message=continue_final, **self.reasoning.template_kwargs(thinking))
        except Exception as e:
            raise InvalidRequestError(f"the chat template rejected these messages: {e}") from e
        if cut is not None:  # the text ends where the reasoning stopped (see _open_in_field)
            text = text[:text.rindex(cut[1], 0, text.rindex(cut[0])) + len(cut[1])]
        return text

    def _open_in_field(self, message: dict, shown: dict, before: list[dict], thinking: Optional[bool]) -> dict:
        """A reply cut inside its reasoning, for a template that renders reasoning from its own
        field (Qwen3's `reasoning_content`): such a template always closes the block and, given
        the reasoning inline instead, adds an empty block before it. So the reasoning goes in the
        field with a placeholder answer, and the text is cut right after the reasoning. Any other
        message, or a template that does not render the reasoning there, is left as it was."""
        thought = (message.get("reasoning") or "").strip("\n")
        field = self.reasoning.history_field
        if (message["role"] != "assistant" or message["content"] or not thought or not field
                or self.reasoning.kind != "think"):
            return shown
        placeholder = f"@{uuid.uuid4().hex}@"
        trial = {**shown, "content": placeholder, field: thought}
        try:
            text = self.tokenizer.apply_chat_template(
                before + [trial], tokenize=False, continue_final_message=True,
                **self.reasoning.template_kwargs(thinking))
        except Exception:
            return shown
        end = text.rfind(placeholder)
        if end < 0 or text.rfind(thought, 0, end) < 0:
            return shown
        return {**trial, _OPEN_CUT: (placeholder, thought)}

    def _for_template(self, message: dict, open_reply: bool) -> dict:
        """A message as the template takes it: reasoning in the template's own field, or dropped.
        A reply left open to be continued keeps its reasoning inline (`<think>` format), so the
        model goes on where it stopped, even inside its reasoning."""
        shown = {k: v for k, v in message.items() if k != "reasoning"}
        thought = message.get("reasoning") or ""
        if not thought or message["role"] != "assistant":
            return shown
        if open_reply and self.reasoning.kind == "think":
            closed = f"\n{reasoning.THINK_CLOSE}\n\n{message['content']}" if message["content"] else ""
            shown["content"] = f"{reasoning.THINK_OPEN}\n{thought}{closed}"
        elif self.reasoning.history_field:
            shown[self.reasoning.history_field] = thought
        return shown

    def reply_start(self, thinking: Optional[bool] = None) -> reasoning.Start:
        """Where a new reply begins for the splitter: the template's generation prompt may open the
        reasoning (DeepSeek-R1) or close it (Qwen3 with thinking off). Worked out once per switch
        value from a one-message conversation: the generation prompt does not depend on the rest."""
        if thinking not in self._starts:
            probe = [{"role": "user", "content": "?"}]
            kwargs = self.reasoning.template_kwargs(thinking)
            try:
                asked = self.tokenizer.apply_chat_template(probe, tokenize=False, add_generation_prompt=True, **kwargs)
                plain = self.tokenizer.apply_chat_template(probe, tokenize=False, **kwargs)
            except Exception:  # a template that cannot render the probe: assume nothing
                asked = plain = ""
            tail = asked[len(plain):] if asked.startswith(plain) else asked[-64:]
            self._starts[thinking] = reasoning.start_of(tail, self.reasoning)
        return self._starts[thinking]

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`; special-token text maps to its ids, nothing is added. Any thread."""
        with self._lock:
            return list(self.tokenizer(clean(text), add_special_tokens=False).input_ids)

    def encode_chat(self, rendered: Rendered, start: int = 0) -> list[int]:
        """Token ids of `rendered.text[start:]` where a control token typed inside message content is
        tokenized as the text it is (a message cannot forge a turn); the template's markers stay
        control tokens.

        The text is tokenized whole first: when no control token falls inside content (nearly
        always) those are the ids, exactly as before. Otherwise template and content pieces are
        tokenized apart, content with `split_special_tokens`."""
        with self._lock:
            return self._encode_chat_kept(rendered.text[start:], start, rendered)

    def encode_chat_range(self, rendered: Rendered, start: int, end: int) -> list[int]:
        """`encode_chat` of `rendered.text[start:end]` alone (the text between two images)."""
        with self._lock:
            return self._encode_chat_kept(rendered.text[start:end], start, rendered) if end > start else []

    def _encode_chat_kept(self, text: str, start: int, rendered: Rendered) -> list[int]:
        """`_encode_chat`, served from the last ENCODINGS_KEPT encodings when it is the same text."""
        key = (text, start, rendered.content)
        ids = self._encoded.get(key)
        if ids is None:
            ids = self._encoded[key] = tuple(self._encode_chat(text, start, rendered))
            while len(self._encoded) > ENCODINGS_KEPT:
                self._encoded.popitem(last=False)
        else:
            self._encoded.move_to_end(key)
        return list(ids)

    def _encode_chat(self, text: str, start: int, rendered: Rendered) -> list[int]:
        spans = [(max(a - start, 0), b - start) for a, b in (rendered.content or ()) if b > start]
        whole = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        special = self._special_ids
        if not any(i in special and _inside(span, spans) for i, span in zip(whole.input_ids, whole.offset_mapping)):
            return list(whole.input_ids)
        ids: list[int] = []
        at = 0
        for a, b in spans:
            if a > at:
                ids += self.tokenizer(text[at:a], add_special_tokens=False).input_ids
            ids += self.tokenizer(text[a:b], add_special_tokens=False, split_special_tokens=True).input_ids
            at = b
        if at < len(text):
            ids += self.tokenizer(text[at:], add_special_tokens=False).input_ids
        return ids

    @property
    def _special_ids(self) -> frozenset[int]:
        ids = getattr(self, "_special_cache", None)
        if ids is None:
            decoder = getattr(self.tokenizer, "added_tokens_decoder", {}) or {}
            ids = frozenset(self.tokenizer.all_special_ids) | frozenset(
                i for i, t in decoder.items() if getattr(t, "special", False))
            self._special_cache = ids
        return ids

    def decode(self, ids: list[int], keep_special: bool = False) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=not keep_special)

    def stream_decoder(self) -> "StreamDecoder":
        return StreamDecoder(self.tokenizer.backend_tokenizer, self._markers)


_OPEN_CUT = "\x00open-cut"
"""Key of a shown message whose rendered text is cut after its reasoning (`TextCodec._apply`)."""


_SHAPES = (lambda c: c, str.strip, lambda c: json.dumps(c, ensure_ascii=False)[1:-1])
"""How templates write content: as it is, trimmed, or as a JSON string's inside (`tojson`, as
Hermes-style templates write a tool result)."""


def _trace(traced: str, marks: list[str], contents: list[str], text: str) -> Optional[tuple[tuple[int, int], ...]]:
    """Content spans in `text`, found by putting each content where its placeholder is in `traced`,
    in the first of `_SHAPES` that the template text after it follows; None unless that rebuilds
    `text` exactly (a template that rewrites content another way: the text is then encoded whole).
    An empty mark ("") stands for empty content, which is not traced."""
    pieces, order, at = [], [], 0  # template text between placeholders, and which placeholder
    while True:
        found = [(pos, i) for pos, i in ((traced.find(m, at), i) for i, m in enumerate(marks) if m) if pos >= 0]
        if not found:
            break
        pos, i = min(found)
        pieces.append(traced[at:pos])
        order.append(i)
        at = pos + len(marks[i])
    pieces.append(traced[at:])
    spans, at = [], 0
    for k, i in enumerate(order):
        if not text.startswith(pieces[k], at):
            return None
        at += len(pieces[k])
        shaped = [c for c in (shape(contents[i]) for shape in _SHAPES)
                  if text.startswith(c, at) and text.startswith(pieces[k + 1], at + len(c))]
        if not shaped:
            return None
        spans.append((at, at + len(shaped[0])))
        at += len(shaped[0])
    return tuple(spans) if text[at:] == pieces[-1] else None


def _inside(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    a, b = span
    return any(s <= a and b <= e and a < b for s, e in spans)


class StreamDecoder:
    """Text of each new token, never splitting a multi-byte character (tokenizers' DecodeStream)."""

    def __init__(self, backend_tokenizer, markers: Optional[dict[int, str]] = None) -> None:
        from tokenizers.decoders import DecodeStream

        self._tokenizer = backend_tokenizer
        self._stream = DecodeStream(skip_special_tokens=True)
        self._markers = markers or {}

    def step(self, token_id: int) -> str:
        """Special tokens are skipped, except the reasoning format's tags (`markers`), which the
        reasoning splitter reads and removes."""
        text = self._stream.step(self._tokenizer, token_id) or ""
        return text + self._markers.get(token_id, "")
