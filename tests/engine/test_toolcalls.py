"""Reading tool calls back out of replies in each family's format, whole and streamed in pieces of
any size, and the grammar that forces a call."""

from __future__ import annotations

import json

import pytest

from engine.reply.toolcalls import call_constraint, detect_format, parse
from engine.reply.toolstream import CallStream, cut_reply

HERMES = ('Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
          '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>')
LLAMA = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
MISTRAL = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]'
CLOSING_TAG_IN_JSON = ('<tool_call>\n{"name": "write_file", "arguments": {"path": "a.md", "text": "use </tool_call> '
                       'to close"}}\n</tool_call>')  # a coding agent writing a file that mentions the tag
TWO = [("get_weather", {"city": "Paris"}), ("get_time", {})]


def _calls(calls):
    return [(c.name, json.loads(c.arguments)) for c in calls]


@pytest.mark.parametrize("fmt, text, content, calls", [
    ("hermes", HERMES, "Let me look.", TWO),
    ("llama3", LLAMA, "", TWO[:1]),
    ("llama3", "<|python_tag|>" + LLAMA, "", TWO[:1]),
    ("mistral", MISTRAL, "", TWO),
    ("mistral", MISTRAL.removeprefix("[TOOL_CALLS]"), "", TWO),  # the marker is a special token, dropped from text
    ("hermes", "Just text, no <tool_ call.", "Just text, no <tool_ call.", []),
    ("llama3", "{broken json", "{broken json", []),
    ("mistral", "[1, 2]", "[1, 2]", []),
    ("hermes", '<tool_call>\n{"arguments": {"a": 1}, "name": "f"}\n</tool_call>', "", [("f", {"a": 1})]),
    ("hermes", CLOSING_TAG_IN_JSON, "", [("write_file", {"path": "a.md", "text": "use </tool_call> to close"})]),
])
def test_parse_whole_reply(fmt, text, content, calls):
    got_content, got = parse(fmt, text)
    assert got_content == content and _calls(got) == calls
    assert all(len(c.id) == 9 and c.id.isalnum() for c in got)


@pytest.mark.parametrize("fmt, text", [("hermes", HERMES), ("llama3", LLAMA), ("mistral", MISTRAL),
                                       ("hermes", "plain <b>text</b> with <tool"), ("llama3", "Hello, world")])
@pytest.mark.parametrize("step", [1, 2, 5, 1000])
def _stream(fmt, text, step):
    """(content, [(name, arguments)], ids) of `text` fed in pieces of `step` characters."""
    stream = CallStream(fmt)
    content, deltas = "", []
    for i in range(0, len(text), step):
        piece, new = stream.feed(text[i:i + step])
        content, deltas = content + piece, deltas + new
    piece, new = stream.finish()
    calls: dict[int, list] = {}
    for d in deltas + new:
        if d.id is not None:
            assert d.index not in calls and d.name  # id and name once, on a call's first piece
            calls[d.index] = [d.name, "", d.id]
        calls[d.index][1] += d.arguments
    assert list(calls) == list(range(len(calls)))
    return content + piece, [(n, json.loads(a)) for n, a, _ in calls.values()], [i for _, _, i in calls.values()]


@pytest.mark.parametrize("fmt, text", [("hermes", HERMES), ("llama3", LLAMA), ("mistral", MISTRAL),
                                       ("mistral", MISTRAL.removeprefix("[TOOL_CALLS]")),
                                       ("hermes", '<tool_call>\n{"arguments": {"a": [1, "}"]}, "name": "f"}\n</tool_call>'),
                                       ("hermes", "plain <b>text</b> with <tool"), ("llama3", "Hello, world"),
                                       ("llama3", "{broken json"), ("mistral", "[1, 2]"),
                                       ("hermes", CLOSING_TAG_IN_JSON)])
@pytest.mark.parametrize("step", [1, 2, 5, 1000])
def test_streamed_in_any_pieces_gives_the_same_as_whole(fmt, text, step):
    content, calls, ids = _stream(fmt, text, step)
    whole_content, whole_calls = parse(fmt, text)
    assert calls == _calls(whole_calls)
    assert content.strip() == whole_content.strip()
    assert all(len(i) == 9 for i in ids)


def test_a_call_starts_streaming_as_soon_as_its_name_is_written():
    stream = CallStream("hermes")
    _, deltas = stream.feed('Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"ci')
    assert [(d.index, d.name, d.arguments) for d in deltas] == [(0, "get_weather", ""), (0, None, '{"ci')]
    _, deltas = stream.feed('ty": "Paris"}}\n</tool_call>')
    assert "".join(d.arguments for d in deltas) == 'ty": "Paris"}'


@pytest.mark.parametrize("fmt, text, content, calls", [
    ("hermes", "<tool_call>", "", []),
    ("hermes", "<tool_ca", "", []),
    ("hermes", "A <b>", "A <b>", []),
    ("llama3", "<|python", "", []),
    ("hermes", 'Sure.\n<tool_call>\n{"name": "get_wea', "Sure.", []),
    ("hermes", '<tool_call>\n{"name": "get_weather", "arguments": {"ci', "", [("get_weather", '{"ci')]),
    ("llama3", '<|python_tag|>{"name": "get', "", []),
    ("llama3", '{"nam', "", []),
    ("llama3", '{"a": 1', '{"a": 1', []),  # plain JSON text, not a call
    ("mistral", '[TOOL_CALLS][{"name": "f", "arguments": {}}, {"na', "", [("f", "{}")]),
])
def test_a_reply_cut_by_the_token_limit_never_gives_a_marker_as_text(fmt, text, content, calls):
    """A forced call cut by max_tokens: the calls begun (arguments maybe unfinished), or nothing."""
    got_content, got = cut_reply(fmt, text)
    assert got_content == content and [(c.name, c.arguments) for c in got] == calls


def test_unclosed_hermes_block_at_the_end_is_still_read():
    assert _stream("hermes", '<tool_call>\n{"name": "f", "arguments": {"x": 1}}', 3)[1] == [("f", {"x": 1})]


@pytest.mark.parametrize("template, expected", [
    ("{% for tool in tools %}<tool_call>{% endfor %}", ("hermes", True)),
    ("{{ '[TOOL_CALLS]' }}{{ tools }}", ("mistral", True)),
    ("{{ tools }} Environment: ipython {\"name\": ..., \"parameters\": ...}", ("llama3", True)),
    ("{% for m in messages %}{{ m.content }}{% endfor %}", ("hermes", False)),
    (None, ("hermes", False)),
])
def test_format_is_picked_by_the_template(template, expected):
    assert detect_format(template) == expected


@pytest.mark.parametrize("fmt", ["hermes", "llama3", "mistral"])
def test_forced_call_grammar_names_every_tool(fmt):
    tools = [{"type": "function", "function": {"name": "a", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}},
             {"type": "function", "function": {"name": "b"}}]
    source = call_constraint(fmt, tools, parallel=True, special={}).source
    assert '"const": "a"' in source and '"const": "b"' in source and '"additionalProperties": false' in source


@pytest.mark.parametrize("tools", ["get_weather", [{"type": "function"}], [{"function": {"name": 3}}],
                                   [{"function": {"name": "f", "parameters": "x"}}]])
def test_malformed_tools_are_refused_by_name(tools):
    from engine.errors import InvalidRequestError
    from engine.reply.toolcalls import check_tools

    with pytest.raises(InvalidRequestError, match="tools must be a list of"):
        check_tools(tools)


@pytest.mark.parametrize("fmt, marker, only", [("mistral", "[TOOL_CALLS]", True), ("hermes", "<tool_call>", True),
                                               ("llama3", "<|python_tag|>", False)])
def test_a_marker_that_is_one_special_token_is_written_as_that_token(bundled_folder, fmt, marker, only):
    """Real Mistral / Llama 3 vocabularies hold their markers as single special tokens: the forced
    grammar asks for that token (optional for Llama's python tag), not for its text spelled out."""
    import numpy as np
    from transformers import AutoTokenizer

    from engine.reply.constraint import Guides

    tokenizer = AutoTokenizer.from_pretrained(bundled_folder)
    special = tokenizer.convert_tokens_to_ids("<|im_start|>")  # stands in for the marker's token
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    guide = Guides(tokenizer, len(tokenizer)).start(call_constraint(fmt, tools, True, {marker: special}))
    allowed = np.flatnonzero(np.isfinite(guide.mask(np.zeros(len(tokenizer), dtype=np.float32))))
    assert special in allowed and (list(allowed) == [special]) == only
