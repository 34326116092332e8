"""A stdio MCP server that exits at start: the message says so with the end of its stderr, not
only "McpError: Connection closed" (issue 38, 6d)."""

from __future__ import annotations

import sys

import pytest

from app.mcp.config import ServerConfig
from app.mcp.hub import McpHub

CRASHING = '''\
import sys
print("starting the notes server", file=sys.stderr)
print("Error: NOTES_TOKEN is not set; export it or add it to env in mcp.json", file=sys.stderr)
sys.exit(1)
'''


@pytest.fixture
def hub(tmp_path):
    h = McpHub(tmp_path / "logs")
    yield h
    h.close()


def test_a_server_that_exits_at_start_shows_its_stderr(hub, tmp_path):
    script = tmp_path / "crashing_server.py"
    script.write_text(CRASHING)
    hub.configure((ServerConfig("notes", sys.executable, (str(script),)),))
    outcome = hub.call("notes", "search", {"q": "x"}, 10).result(90)  # the text stored as the tool result
    assert outcome.status == "failed"
    assert "notes exited at start: " in outcome.text and "NOTES_TOKEN is not set" in outcome.text
    assert "NOTES_TOKEN is not set" in hub.status("notes")  # what the tools dialog shows
    with pytest.raises(ConnectionError, match="NOTES_TOKEN is not set"):
        hub.connect("notes").result(90)  # a second start reads only its own part of the log
    assert hub.status("notes").count("NOTES_TOKEN") == 1
