"""Reasoning apart: each thinking family's real chat template (tests/engine/data/templates, copies
of the published templates) is detected, its replies split into reasoning and answer however the
stream is cut, its Think switch reaches the template, and earlier reasoning is not sent back."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from engine import SamplingParams
from engine.reply.reasoning import ReasoningFormat, detect
from engine.reply.text import TextCodec
from tests.engine.helpers import TEMPLATES, with_template

GPT_OSS_MARKERS = ["<|channel|>", "<|message|>", "<|end|>", "<|start|>", "<|return|>", "<|call|>", "<|constrain|>"]

# What each family's model writes after its template's generation prompt, and how it splits.
REPLIES = {
    "qwen3": ("<think>\nThe user asks 2+2. That is 4; a < b </thinker> aside.\n</think>\n\nIt is **4**.",
              "The user asks 2+2. That is 4; a < b </thinker> aside.", "It is **4**."),
    "deepseek-r1-distill": ("Okay, 2+2: add them.\nSo 4.\n</think>\n\nThe answer is 4.",
                            "Okay, 2+2: add them.\nSo 4.", "The answer is 4."),
    "smollm3": ("<think>\nSimple sum. ✓ 日本\n</think>\nFour.", "Simple sum. ✓ 日本", "Four."),
    "gpt-oss": ("<|channel|>analysis<|message|>User wants 2+2. Answer 4.<|end|>"
                "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.",
                "User wants 2+2. Answer 4.", "2 + 2 = 4."),
}


def codec_with(folder: Path, tmp_path: Path, name: str, special: list[str] = ()) -> TextCodec:
    """The bundled tokenizer with a family's real chat template (and its tags as special tokens)."""
    out = tmp_path / name
    out.mkdir()
    if special:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(folder)
        tokenizer.add_special_tokens({"additional_special_tokens": list(special)})
        tokenizer.save_pretrained(out)
    else:
        for file in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(folder / file, out / file)
    (out / "chat_template.jinja").write_text((TEMPLATES / f"{name}.jinja").read_text())
    return TextCodec(out)


def split_all(fmt: ReasoningFormat, start: str, pieces) -> tuple[str, str]:
    splitter = fmt.splitter(start)
    reasoning, answer = [], []
    for piece in pieces:
        r, a = splitter.feed(piece)
        reasoning.append(r)
        answer.append(a)
    r, a = splitter.flush()
    return "".join(reasoning) + r, "".join(answer) + a


@pytest.mark.parametrize("name, kind, switch, history", [
    ("qwen3", "think", "enable_thinking", "reasoning_content"),
    ("deepseek-r1-distill", "think", None, None),
    ("smollm3", "think", "enable_thinking", None),
    ("gpt-oss", "channels", "reasoning_effort", "thinking"),
])
def test_the_format_is_read_from_each_familys_template(name, kind, switch, history):
    assert detect((TEMPLATES / f"{name}.jinja").read_text()) == ReasoningFormat(kind, switch, history)


def test_a_model_that_does_not_think_passes_everything_as_answer(bundled_folder):
    codec = TextCodec(bundled_folder)
    assert codec.reasoning.kind == "none"
    assert split_all(codec.reasoning, codec.reply_start(), ["<think>hi", "</think> there"]) == (
        "", "<think>hi</think> there")


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_each_familys_reply_splits_the_same_at_every_cut(name, bundled_folder, tmp_path):
    codec = codec_with(bundled_folder, tmp_path, name)
    text, reasoning, answer = REPLIES[name]
    start = codec.reply_start()
    assert split_all(codec.reasoning, start, [text]) == (reasoning, answer)
    assert split_all(codec.reasoning, start, list(text)) == (reasoning, answer)  # a character a chunk
    for i in range(len(text) + 1):  # one cut at every position
        assert split_all(codec.reasoning, start, [text[:i], text[i:]]) == (reasoning, answer), i
    for i in range(0, len(text), 3):  # two cuts: a tag split three ways
        for j in range(i, min(i + 12, len(text))):
            assert split_all(codec.reasoning, start, [text[:i], text[i:j], text[j:]]) == (reasoning, answer)


@pytest.mark.parametrize("name, thinking, start", [
    ("qwen3", None, "start"), ("qwen3", True, "start"), ("qwen3", False, "answer"),
    ("deepseek-r1-distill", None, "reasoning"),
    ("smollm3", None, "start"), ("smollm3", False, "answer"),
    ("gpt-oss", None, "start"),
])
def test_where_a_reply_starts_comes_from_the_generation_prompt(name, thinking, start, bundled_folder, tmp_path):
    assert codec_with(bundled_folder, tmp_path, name).reply_start(thinking) == start


@pytest.mark.parametrize("name, off_marker", [
    ("qwen3", "<think>\n\n</think>\n\n"), ("smollm3", "Reasoning Mode: /no_think"), ("gpt-oss", "Reasoning: low"),
])
def test_the_think_switch_reaches_the_template(name, off_marker, bundled_folder, tmp_path):
    codec = codec_with(bundled_folder, tmp_path, name)
    messages = [{"role": "user", "content": "2+2?"}]
    assert off_marker in codec.render(messages, thinking=False)
    assert off_marker not in codec.render(messages, thinking=True)
    assert off_marker not in codec.render(messages)


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_earlier_reasoning_is_not_sent_back(name, bundled_folder, tmp_path):
    codec = codec_with(bundled_folder, tmp_path, name)
    messages = [{"role": "user", "content": "2+2?"},
                {"role": "assistant", "content": "It is 4.", "reasoning": "SECRET-THOUGHT adding"},
                {"role": "user", "content": "And 3+3?"}]
    prompt = codec.render(messages)
    assert "It is 4." in prompt and "SECRET-THOUGHT" not in prompt


def test_qwen3_sees_reasoning_where_its_template_asks_for_it(bundled_folder, tmp_path):
    """Qwen3's template shows the reasoning of replies after the last user message (tool flows)."""
    codec = codec_with(bundled_folder, tmp_path, "qwen3")
    messages = [{"role": "user", "content": "2+2?"},
                {"role": "assistant", "content": "It is 4.", "reasoning": "SECRET-THOUGHT adding"}]
    assert "<think>\nSECRET-THOUGHT adding\n</think>\n\nIt is 4." in codec.render(messages, continue_final=True)


@pytest.mark.parametrize("name, tail", [
    ("deepseek-r1-distill", "<｜Assistant｜><think>\nAdding two"),
    # Qwen3's template renders reasoning from its own field and always closes it: one open block,
    # not an empty closed one before it
    ("qwen3", "<|im_start|>assistant\n<think>\nAdding two"),
])
def test_a_reply_cut_while_thinking_continues_inside_its_reasoning(name, tail, bundled_folder, tmp_path):
    codec = codec_with(bundled_folder, tmp_path, name)
    messages = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "", "reasoning": "Adding two"}]
    text = codec.render(messages, continue_final=True)
    assert text.endswith(tail) and text.count("<think>") == 1


def test_gpt_oss_channel_tokens_reach_the_splitter_through_the_decoder(bundled_folder, tmp_path):
    """gpt-oss's tags are special tokens, which decoding skips; the splitter must see them, and
    <|end|> (the end of a channel's message) must not end the reply."""
    codec = codec_with(bundled_folder, tmp_path, "gpt-oss", special=GPT_OSS_MARKERS)
    text, reasoning, answer = REPLIES["gpt-oss"]
    ids = codec.encode(text)
    assert codec.tokenizer.convert_tokens_to_ids("<|channel|>") in ids
    assert codec.tokenizer.convert_tokens_to_ids("<|end|>") not in codec.stop_ids
    decoder = codec.stream_decoder()
    assert split_all(codec.reasoning, codec.reply_start(), [decoder.step(i) for i in ids]) == (reasoning, answer)


def _tiny_with_template(tiny_models, tmp_path: Path, name: str) -> Path:
    return with_template(tiny_models["llama"], tmp_path / f"tiny-{name}", name)


@pytest.mark.parametrize("backend", ["torch", "llamacpp"] if importlib.util.find_spec("llama_cpp") else ["torch"])
def test_a_reply_that_starts_inside_the_reasoning_streams_it_apart(make_engine, tiny_models, tmp_path, backend):
    """DeepSeek-R1's template opens <think> in the prompt: a random model that never closes it
    wrote only reasoning, chunk by chunk, and the stream's reply keeps both apart (on every backend:
    the split is the engine's, not the library's)."""
    folder = _tiny_with_template(tiny_models, tmp_path, "deepseek-r1-distill")
    if backend == "llamacpp":  # the GGUF carries the template, as a real one's metadata does
        from engine.models.sources import bundled_gguf
        from tests.engine.gguf_from_hf import write_gguf_from_folder

        folder = write_gguf_from_folder(folder, tmp_path / "r1.gguf", bundled_gguf("smollm2-135m-instruct"),
                                        chat_template=(TEMPLATES / "deepseek-r1-distill.jinja").read_text())
    engine = make_engine(folder, backend)
    assert engine.reasoning == "think" and not engine.thinking_switch
    params = SamplingParams(temperature=0, max_tokens=12, ignore_stop=True)
    with engine.open_session() as s:
        chunks = list(s.chat([{"role": "user", "content": "2+2?"}], params))
        ids = [t for c in chunks for t in c.token_ids]
        assert "".join(c.text for c in chunks) == ""
        assert "".join(c.reasoning for c in chunks) == engine.tokenizer.decode(ids, skip_special_tokens=True).strip()
        reply = s.chat([{"role": "user", "content": "2+2?"}], params).reply()
        assert reply.text == "" and reply.reasoning and reply.finish_reason == "length"


def test_the_think_switch_off_gives_all_answer(make_engine, tiny_models, tmp_path):
    engine = make_engine(_tiny_with_template(tiny_models, tmp_path, "qwen3"), "torch")
    assert engine.reasoning == "think" and engine.thinking_switch
    params = SamplingParams(temperature=0, max_tokens=8, ignore_stop=True)
    with engine.open_session() as s:
        reply = s.chat([{"role": "user", "content": "2+2?"}], params, thinking=False).reply()
        assert reply.reasoning == "" and reply.text
        # chat_tokens (the server's prompt) is what the session prefilled, switch included
        off = engine.chat_tokens([{"role": "user", "content": "2+2?"}], thinking=False)
        assert off != engine.chat_tokens([{"role": "user", "content": "2+2?"}])
        assert reply.stats.prompt_tokens == len(off)


def test_bundled_model_has_no_switch(make_engine):
    engine = make_engine("bundled:smollm2-135m-instruct", "torch")
    assert engine.reasoning == "none" and not engine.thinking_switch


R1_MARKERS = ["<｜User｜>", "<｜Assistant｜>", "<think>", "</think>"]


def test_a_reply_continued_inside_its_reasoning_keeps_typed_markers_as_text(bundled_folder, tmp_path):
    """The open reasoning is rendered inline, and the content is still traced: a marker the user
    typed stays text while the template's markers and the reasoning's tag stay control tokens."""
    codec = codec_with(bundled_folder, tmp_path, "deepseek-r1-distill", special=R1_MARKERS)
    messages = [{"role": "user", "content": "What does <｜Assistant｜> mean?"},
                {"role": "assistant", "content": "", "reasoning": "Adding two"}]
    rendered = codec.render_traced(messages, continue_final=True)
    assert rendered.text.endswith("<｜Assistant｜><think>\nAdding two")
    assert rendered.content is not None, "the content could not be traced"
    ids = codec.encode_chat(rendered)
    token = codec.tokenizer.convert_tokens_to_ids
    assert ids.count(token("<｜Assistant｜>")) == 1  # the template's; the typed one is text
    assert token("<think>") in ids


def test_a_reply_with_reasoning_cut_in_its_answer_continues_where_the_template_drops_reasoning(
        bundled_folder, tmp_path):
    """DeepSeek-R1's template cuts everything up to </think> out of a reply, so the reply cannot be
    continued with its reasoning inline: its answer is continued, the reasoning dropped as in history."""
    codec = codec_with(bundled_folder, tmp_path, "deepseek-r1-distill", special=R1_MARKERS)
    messages = [{"role": "user", "content": "2+2?"},
                {"role": "assistant", "content": "So far: 4", "reasoning": "Adding two"}]
    rendered = codec.render_traced(messages, continue_final=True)
    assert rendered.text.endswith("<｜Assistant｜>So far: 4") and "Adding two" not in rendered.text
    assert rendered.content is not None
    assert codec.render(messages, continue_final=True) == rendered.text
