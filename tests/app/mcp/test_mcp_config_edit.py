"""Confab's changes to mcp.json are made in the file's text: each touches only its own member, in
the file's own layout, and a file that does not parse is never written."""

from __future__ import annotations

import pytest

from app.mcp.config import ConfigError, ServerConfig, load_config
from app.mcp.config_edit import add_server, check_writable, remove_server, set_limits, set_require_call

NEW = ServerConfig("new", "prog", ("a",), {"K": "v"})


def written(tmp_path, text: str | None) -> str:
    """The file after adding NEW to `text` (None: no file)."""
    if text is not None:
        (tmp_path / "mcp.json").write_text(text)
    add_server(tmp_path, NEW)
    return (tmp_path / "mcp.json").read_text()


def test_no_file_gets_an_indented_one(tmp_path):
    assert written(tmp_path, None) == (
        '{\n  "mcpServers": {\n    "new": {\n      "command": "prog",\n      "args": [\n        "a"\n'
        '      ],\n      "env": {\n        "K": "v"\n      }\n    }\n  }\n}\n')


@pytest.mark.parametrize("text, expected", [
    ('{"other": 1}', '{"other": 1, "mcpServers": {"new": {"command": "prog", "args": ["a"], "env": {"K": "v"}}}}'),
    ('{"mcpServers": {}}', '{"mcpServers": {"new": {"command": "prog", "args": ["a"], "env": {"K": "v"}}}}'),
    ('{"mcpServers": {"a": {"url": "http://x"}}}\n',
     '{"mcpServers": {"a": {"url": "http://x"}, "new": {"command": "prog", "args": ["a"], "env": {"K": "v"}}}}\n'),
    ('{\n\t"mcpServers": {}\n}\n',
     '{\n\t"mcpServers": {\n\t\t"new": {\n\t\t\t"command": "prog",\n\t\t\t"args": [\n\t\t\t\t"a"\n\t\t\t],\n'
     '\t\t\t"env": {\n\t\t\t\t"K": "v"\n\t\t\t}\n\t\t}\n\t}\n}\n'),
])
def test_a_server_is_added_in_the_files_own_layout(tmp_path, text, expected):
    assert written(tmp_path, text) == expected
    assert load_config(tmp_path).server("new") == NEW


def test_a_name_already_in_the_file_is_refused(tmp_path):
    text = '{"mcpServers": {"new": {"command": "theirs", "note": 1}}}'
    (tmp_path / "mcp.json").write_text(text)
    with pytest.raises(ConfigError, match="a server named 'new' already"):
        add_server(tmp_path, NEW)
    assert (tmp_path / "mcp.json").read_text() == text


@pytest.mark.parametrize("text, expected", [
    ('{"mcpServers": {"a": {"url": "http://x"}, "b": {"url": "http://y"}, "c": {"url": "http://z"}}}',
     '{"mcpServers": {"a": {"url": "http://x"}, "c": {"url": "http://z"}}}'),
    ('{"mcpServers": {"b": {"url": "http://y"}, "c": {"url": "http://z"}}}', '{"mcpServers": {"c": {"url": "http://z"}}}'),
    ('{"mcpServers": {\n  "b": {"url": "http://y"}\n}, "x": 1}', '{"mcpServers": {}, "x": 1}'),
    ('{"x": 1}', '{"x": 1}'),
])
def test_remove_takes_out_only_that_server(tmp_path, text, expected):
    (tmp_path / "mcp.json").write_text(text)
    remove_server(tmp_path, "b")
    assert (tmp_path / "mcp.json").read_text() == expected


def test_the_tool_call_rule_is_kept_in_place(tmp_path):
    (tmp_path / "mcp.json").write_text('{"confab": {"stepLimit": 3, "theirs": true}, "mcpServers": {}}')
    set_require_call(tmp_path, True)
    assert (tmp_path / "mcp.json").read_text() == (
        '{"confab": {"stepLimit": 3, "theirs": true, "requireToolCall": true}, "mcpServers": {}}')
    assert load_config(tmp_path).require_call


def test_the_limits_change_in_place(tmp_path):
    (tmp_path / "mcp.json").write_text('{"confab": {"timeoutSeconds": 5, "theirs": true}, "mcpServers": {}}')
    set_limits(tmp_path, 7, 12.0)
    assert (tmp_path / "mcp.json").read_text() == (
        '{"confab": {"timeoutSeconds": 12.0, "theirs": true, "stepLimit": 7}, "mcpServers": {}}')


@pytest.mark.parametrize("text, message", [
    ('{"mcpServers": {"a": {}},\n}', "line 2, column 1"),
    ('{"mcpServers": []}', "must be an object of servers"),
    ("[]", "must hold a JSON object"),
])
def test_a_file_that_cannot_be_changed_is_left_as_it_is(tmp_path, text, message):
    (tmp_path / "mcp.json").write_text(text)
    for change in (lambda: check_writable(tmp_path), lambda: add_server(tmp_path, NEW),
                   lambda: remove_server(tmp_path, "a"), lambda: set_limits(tmp_path, 7, 12.0)):
        with pytest.raises(ConfigError, match=message):
            change()
    assert (tmp_path / "mcp.json").read_text() == text
