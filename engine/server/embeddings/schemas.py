"""The `/v1/embeddings` request: OpenAI's fields, Confab's `truncate`, and the inputs read into one form.

Inputs: a string, a list of strings, a list of token ids (one input) or a list of token-id lists,
as OpenAI takes them; token ids are this model's own (its tokenizer's), not tiktoken's. Unknown
fields are refused as on the other routes; null fields mean "not set".
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, model_validator

from ..errors import bad_request

Inputs = Union[list[str], list[list[int]]]


class EmbeddingRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: Any
    model: Optional[str] = None
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: Optional[int] = None
    user: Optional[str] = None
    truncate: bool = False
    """Cut an input longer than the model's window to its first tokens instead of refusing it (the reply's
    `truncated` lists the inputs cut)."""

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None or k == "input"}
        return data

    def inputs(self) -> Inputs:
        """The inputs as a list of texts or a list of token-id lists; APIError 400 saying what is wrong."""
        value = self.input
        if value is None:
            raise bad_request("input is missing: send a string, a list of strings or token ids")
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list):
            raise bad_request(f"input must be a string or a list, not {type(value).__name__}")
        if not value:
            raise bad_request("input is an empty list: send at least one text")
        if all(isinstance(x, str) for x in value):
            return value
        if all(_is_id(x) for x in value):
            return [value]
        if all(isinstance(x, list) and all(_is_id(t) for t in x) for x in value):
            return value
        raise bad_request("input must be a string, a list of strings, a list of token ids or a list of "
                          "token-id lists (not a mixture)")


def _is_id(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)
