"""Tiny random-weight engines whose chat templates are real tool-calling templates of three families
(tests/server/templates, each naming its source), plus one whose template knows nothing of tools."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine import Engine, EngineConfig

TEMPLATES = Path(__file__).parent / "templates"
FAMILIES = {"hermes": "hermes.jinja", "llama3": "llama-3.2.jinja", "mistral": "mistral-nemo.jinja", "plain": None}

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name", "maxLength": 16},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"], "additionalProperties": False}}}
CLOCK = {"type": "function", "function": {
    "name": "get_time", "description": "Current time in a time zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string", "enum": ["UTC", "CET", "PST"]}},
                   "required": ["zone"]}}}
TOOLS = [WEATHER, CLOCK]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


@pytest.fixture(scope="session")
def tool_engines(tiny_models, tmp_path_factory):
    """{"hermes" | "llama3" | "mistral" | "plain": Engine}, float32 torch, room for tool prompts."""
    root = tmp_path_factory.mktemp("tool-templates")
    engines = {}
    try:
        for family, template in FAMILIES.items():
            folder = root / family
            shutil.copytree(tiny_models["llama"], folder)
            if template is not None:
                (folder / "chat_template.jinja").write_text((TEMPLATES / template).read_text())
            engines[family] = Engine.load(str(folder), EngineConfig(backend="torch", dtype="float32",
                                                                     max_context=1536, max_sessions=4))
        yield engines
    finally:
        for engine in engines.values():
            engine.close()


@pytest.fixture(params=list(FAMILIES))
def family(request) -> str:
    return request.param
