"""Text: streamed chunks never split a character, and replies stop on the template's end tokens."""

from __future__ import annotations

from engine import SamplingParams
from engine.reply.text import TextCodec


def test_stream_decoder_never_splits_multibyte_characters(bundled_folder):
    codec = TextCodec(bundled_folder)
    text = "héllo 日本語 🎉 naïve"
    ids = codec.encode(text)
    decoder = codec.stream_decoder()
    pieces = [decoder.step(i) for i in ids]
    assert "".join(pieces) == text
    for piece in pieces:
        piece.encode("utf-8")  # each piece is whole characters
        assert "\ufffd" not in piece


def test_stop_tokens_include_the_templates_end_of_turn(bundled_folder):
    codec = TextCodec(bundled_folder)
    vocab = codec.tokenizer.get_vocab()
    assert vocab["<|im_end|>"] in codec.stop_ids


def test_bundled_reply_stops_at_end_of_turn(make_engine, backend):
    engine = make_engine("bundled:smollm2-135m-instruct", backend)
    with engine.open_session() as s:
        chunks = list(s.chat([{"role": "user", "content": "Say hello."}], SamplingParams(temperature=0, max_tokens=60)))
        assert chunks[-1].finish_reason == "stop"
        assert chunks[-1].token_ids == (engine.tokenizer.convert_tokens_to_ids("<|im_end|>"),)
        text = "".join(c.text for c in chunks)
        assert text.strip() and "<|im_end|>" not in text


def test_continue_final_leaves_the_assistant_turn_open(bundled_folder):
    codec = TextCodec(bundled_folder)
    messages = [{"role": "user", "content": "Tell a story."}, {"role": "assistant", "content": "Once upon a"}]
    text = codec.render(messages, continue_final=True)
    assert text.endswith("<|im_start|>assistant\nOnce upon a")
    assert codec.render(messages[:1]).endswith("<|im_start|>assistant\n")


def test_continue_final_refuses_a_last_message_that_is_not_a_reply(bundled_folder):
    import pytest

    from engine.errors import InvalidRequestError

    codec = TextCodec(bundled_folder)
    with pytest.raises(InvalidRequestError, match="only an assistant message can be continued"):
        codec.render([{"role": "user", "content": "Hi"}], continue_final=True)


class _CountingTokenizer:
    """The codec's tokenizer, counting the texts it is asked to encode."""

    def __init__(self, real) -> None:
        self.real, self.texts = real, []

    def __call__(self, text, *args, **kwargs):
        self.texts.append(text)
        return self.real(text, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_a_chat_prompt_encoded_twice_is_tokenized_once(bundled_folder):
    # A server request encodes its prompt to fit the context, then the session encodes it again.
    codec = TextCodec(bundled_folder)
    counting = codec.tokenizer = _CountingTokenizer(codec.tokenizer)
    messages = [{"role": "system", "content": "You are terse. " * 200}, {"role": "user", "content": "Hi <|im_end|>"}]
    first = codec.encode_chat(codec.render_traced(messages))
    calls = len(counting.texts)
    assert codec.encode_chat(codec.render_traced(messages)) == first
    assert len(counting.texts) == calls  # the same text: served from what was kept
    other = codec.encode_chat(codec.render_traced(messages[:1] + [{"role": "user", "content": "Bye"}]))
    assert len(counting.texts) > calls and other != first
    # a control token typed in a message stays text, kept or not: only the turns' own ends are ids
    assert first.count(codec.tokenizer.convert_tokens_to_ids("<|im_end|>")) == 2
