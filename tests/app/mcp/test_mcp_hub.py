"""The hub against the FastMCP test server over both transports, without Qt or a model: tools
listed, a call answered, an error result, and mcp.json read and written in Cursor's format."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.mcp.config import ConfigError, McpConfig, ServerConfig, load_config, parse_server
from app.mcp.config_edit import remove_server, set_limits
from app.mcp.hub import McpHub

SERVER = Path(__file__).with_name("tool_server.py")


@pytest.fixture
def hub(tmp_path):
    h = McpHub(tmp_path / "logs")
    yield h
    h.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_stdio_server_lists_tools_and_answers_calls(hub):
    hub.configure((ServerConfig("t", sys.executable, (str(SERVER), "add", "fail")),))
    assert [t.name for t in hub.connect("t").result(90)] == ["add", "fail"]
    assert hub.status("t") == "running"
    outcome = hub.call("t", "add", {"a": 2, "b": 40}, 30).result(90)
    assert (outcome.status, outcome.text) == ("done", "42")
    failed = hub.call("t", "fail", {}, 30).result(90)
    assert failed.status == "failed" and "the disk is on fire" in failed.text
    assert "test-tools server starting" in hub.log_text("t")  # the server's stderr


def test_a_server_that_cannot_start_says_why(hub, tmp_path):
    hub.configure((ServerConfig("gone", str(tmp_path / "no-such-program")),))
    outcome = hub.call("gone", "anything", {}, 5).result(90)
    assert outcome.status == "failed" and "could not start" in outcome.text
    assert hub.status("gone").startswith("stopped")


def test_streamable_http_server(hub):
    port = _free_port()
    process = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, "the HTTP server did not start"
                time.sleep(0.2)
        hub.configure((ServerConfig("web", url=f"http://127.0.0.1:{port}/mcp"),))
        assert "lookup" in [t.name for t in hub.connect("web").result(90)]
        outcome = hub.call("web", "lookup", {}, 30).result(90)
        assert (outcome.status, outcome.text) == ("done", "The word is periwinkle.")
    finally:
        hub.close()
        process.terminate()
        process.wait(10)


def test_mcp_json_in_cursors_format_round_trips_keeping_unknown_keys(tmp_path):
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "server-files", "~/notes"], "env": {"DEBUG": "1"}, "type": "stdio"},
        "search": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}}}, "other": 1}))
    config = load_config(tmp_path)
    files, search = config.servers
    assert (files.transport, files.command, files.args, files.env) == ("stdio", "npx", ("-y", "server-files", "~/notes"), {"DEBUG": "1"})
    assert (search.transport, search.headers) == ("http", {"Authorization": "Bearer x"})
    remove_server(tmp_path, "search")
    set_limits(tmp_path, 7, 12)
    raw = json.loads((tmp_path / "mcp.json").read_text())
    assert raw["other"] == 1 and raw["mcpServers"]["files"]["type"] == "stdio" and "search" not in raw["mcpServers"]
    again = load_config(tmp_path)
    assert again.servers == (files,) and (again.step_limit, again.timeout_s) == (7, 12.0)


def test_no_file_means_no_servers(tmp_path):
    assert load_config(tmp_path) == McpConfig()


@pytest.mark.parametrize("entry, message", [
    ({}, 'needs exactly one of "command" or "url"'),
    ({"command": "a", "url": "http://x"}, 'needs exactly one of "command" or "url"'),
    ({"command": "a", "args": "b"}, "args must be a list of text"),
    ({"command": "a", "env": {"X": 1}}, "env must map names to text"),
    ({"url": "ftp://x"}, "url must start with http:// or https://"),
    ("npx", "must be an object"),
])
def test_bad_server_entries_are_named(entry, message):
    with pytest.raises(ConfigError, match="server 'x'.*" + message.replace("(", r"\(")):
        parse_server("x", entry)


@pytest.mark.parametrize("text, message", [
    ("{", "not valid JSON at line 1, column 2"),
    ('{\n  "mcpServers": {}\n  "other": 1\n}', "not valid JSON at line 3, column 3: Expecting ','"),
    ("[]", "must hold a JSON object"),
    ('{"mcpServers": []}', "must be an object of servers"),
    ('{"confab": {"stepLimit": 0}}', "stepLimit"),
    ('{"confab": {"requireToolCall": "yes"}}', "requireToolCall must be true or false"),
])
def test_a_bad_file_is_refused_with_the_reason(tmp_path, text, message):
    (tmp_path / "mcp.json").write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path)
