"""`mcp.json` in the data folder, in Cursor's format (others' files can be copied in as they are):

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "~/notes"],
                  "env": {"DEBUG": "1"}},
        "search": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer …"}}}}

A server with `command` runs as a child process over stdio; one with `url` is reached over
streamable HTTP. The app changes the file only in place (`config_edit`): what the user wrote,
unknown keys (Cursor's, Claude's) included, stays as written. Also kept here: how many tool steps
one reply may take, how long a call may run, and whether a reply's first step must call a tool
(`confab` key: stepLimit, timeoutSeconds, requireToolCall).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

CONFIG_NAME = "mcp.json"
DEFAULT_STEP_LIMIT = 5
"""Tool steps one reply may take before the app stops asking and lets the reply end."""
DEFAULT_TIMEOUT_S = 60.0
"""Longest a tool call may take before it is given up as hung."""


class ConfigError(ValueError):
    """`mcp.json` cannot be read as a list of servers; the message says where."""


@dataclass(frozen=True)
class ServerConfig:
    """One server of `mcp.json`."""

    name: str
    command: str = ""
    """Program to run (stdio transport); "" for a URL server."""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict, hash=False)
    """Extra environment for the program (on top of a safe default set: PATH, HOME, ...)."""
    url: str = ""
    """Streamable-HTTP endpoint; "" for a command server."""
    headers: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def describe(self) -> str:
        return self.url if self.url else " ".join([self.command, *self.args])

    def as_json(self) -> dict[str, Any]:
        if self.url:
            return {"url": self.url, **({"headers": self.headers} if self.headers else {})}
        return {"command": self.command, "args": list(self.args), **({"env": self.env} if self.env else {})}


@dataclass(frozen=True)
class McpConfig:
    servers: tuple[ServerConfig, ...] = ()
    step_limit: int = DEFAULT_STEP_LIMIT
    timeout_s: float = DEFAULT_TIMEOUT_S
    require_call: bool = False
    """A reply's first step must call a tool (tool_choice "required"); else the model chooses."""

    def server(self, name: str) -> Optional[ServerConfig]:
        return next((s for s in self.servers if s.name == name), None)


def config_path(home: Path) -> Path:
    return Path(home) / CONFIG_NAME


def parse_server(name: str, value: Any) -> ServerConfig:
    """One entry of `mcpServers`; ConfigError names what is wrong with it."""
    where = f"mcp.json: server {name!r}"
    if not isinstance(name, str) or not name.strip():
        raise ConfigError("mcp.json: a server needs a name")
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object with a command or a url")
    command, url = value.get("command"), value.get("url") or value.get("serverUrl")
    if bool(command) == bool(url):
        raise ConfigError(f"{where} needs exactly one of \"command\" or \"url\"")
    args, env, headers = value.get("args", []), value.get("env", {}), value.get("headers", {})
    if not isinstance(command or url, str):
        raise ConfigError(f"{where}: command and url are text")
    if not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
        raise ConfigError(f"{where}: args must be a list of text")
    for label, mapping in (("env", env), ("headers", headers)):
        if not (isinstance(mapping, dict) and all(isinstance(v, str) for v in mapping.values())):
            raise ConfigError(f"{where}: {label} must map names to text")
    if url and not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: url must start with http:// or https://")
    return ServerConfig(name, command or "", tuple(args), dict(env), url or "", dict(headers))


def load_config(home: Path) -> McpConfig:
    """The servers of `<home>/mcp.json` (none when the file does not exist); ConfigError otherwise."""
    raw = _read(config_path(home))
    servers = raw.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError("mcp.json: \"mcpServers\" must be an object of servers by name")
    own = raw.get("confab", {}) if isinstance(raw.get("confab"), dict) else {}
    steps, timeout = own.get("stepLimit", DEFAULT_STEP_LIMIT), own.get("timeoutSeconds", DEFAULT_TIMEOUT_S)
    if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= 100:
        raise ConfigError("mcp.json: confab.stepLimit must be a whole number from 1 to 100")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= 3600:
        raise ConfigError("mcp.json: confab.timeoutSeconds must be a number of seconds up to 3600")
    require = own.get("requireToolCall", False)
    if not isinstance(require, bool):
        raise ConfigError("mcp.json: confab.requireToolCall must be true or false")
    return McpConfig(tuple(parse_server(n, v) for n, v in servers.items()), steps, float(timeout), require)


def _read(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ConfigError(f"mcp.json could not be read: {e}") from None
    return parse_json(text) if text.strip() else {}


def parse_json(text: str) -> dict:
    """The file's object; ConfigError with the line and column where it stops parsing."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"mcp.json is not valid JSON at line {e.lineno}, column {e.colno}: {e.msg}. "
                          "Fix it in a text editor; until then Confab leaves the file as it is.") from None
    if not isinstance(raw, dict):
        raise ConfigError("mcp.json must hold a JSON object")
    return raw
