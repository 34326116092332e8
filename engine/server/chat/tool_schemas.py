"""Request shapes of tools, tool choices, tool calls in history and response formats (OpenAI's)."""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Shape(BaseModel):
    # Strict types; unknown optional fields (and nulls) are ignored, as clients' model_dump() sends them.
    model_config = ConfigDict(extra="ignore", strict=True)


class FunctionDef(_Shape):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    description: Optional[str] = None
    parameters: Optional[dict[str, Any]] = None
    strict: Optional[bool] = None


class Tool(_Shape):
    type: Literal["function"]
    function: FunctionDef


class NamedFunction(_Shape):
    name: str


class NamedToolChoice(_Shape):
    type: Literal["function"]
    function: NamedFunction


ToolChoice = Union[Literal["none", "auto", "required"], NamedToolChoice]


class CalledFunction(_Shape):
    name: str
    arguments: str
    """JSON text, as OpenAI sends it."""


class ToolCallIn(_Shape):
    """An earlier call, in an assistant message of the history."""

    id: str = Field(max_length=200)
    type: Literal["function"] = "function"
    function: CalledFunction


class JsonSchemaFormat(_Shape):
    name: str = Field(default="response", max_length=64)
    description: Optional[str] = None
    schema_: Optional[dict[str, Any]] = Field(default=None, alias="schema")
    strict: Optional[bool] = None


class ResponseFormat(_Shape):
    """`text`, `json_object` (any JSON object) or `json_schema` (a value valid under the schema)."""

    type: Literal["text", "json_object", "json_schema"]
    json_schema: Optional[JsonSchemaFormat] = None
    schema_: Optional[dict[str, Any]] = Field(default=None, alias="schema")
    """llama.cpp server's form, `{"type": "json_object", "schema": {…}}` (instructor's JSON_SCHEMA
    mode sends it): enforced like `json_schema`, never dropped."""

    @model_validator(mode="after")
    def _has_schema(self) -> "ResponseFormat":
        if self.type == "json_schema" and (self.json_schema is None or self.json_schema.schema_ is None):
            raise ValueError("response_format json_schema needs json_schema.schema")
        if self.schema_ is not None and self.type != "json_object":
            raise ValueError("response_format takes a top-level schema only with type json_object")
        return self
