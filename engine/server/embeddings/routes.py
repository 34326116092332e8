"""`POST /v1/embeddings`: vectors from the embedding model the host serves beside the chat model.

The model loads on the first request (its own thread; the event loop never waits on it); inputs are
tokenized and checked before any compute, and a request's many inputs go to the model in padded
batches. Refusals are OpenAI-shaped 400s with the numbers: no input, too many inputs, an empty input,
an input longer than the window (unless `truncate`), a token id outside the vocabulary, `dimensions`
other than the model's own (none of the models served is trained to be shortened).
"""

from __future__ import annotations

import base64
from typing import Optional

import numpy as np
from anyio import to_thread
from fastapi import FastAPI

from ...embeddings import Embedder
from ...reply.truncation import HEADER
from ..errors import bad_request, not_found
from ..host import EngineHost
from ..json_text import JSONResponse
from .schemas import EmbeddingRequest


def register(app: FastAPI, host: EngineHost) -> None:
    """Add the embeddings route."""

    @app.post("/v1/embeddings")
    async def embeddings(body: EmbeddingRequest):
        embedder = served(host, body.model)
        inputs = body.inputs()
        if body.dimensions is not None and body.dimensions != embedder.dimensions:
            raise bad_request(f"dimensions {body.dimensions}: {embedder.source} gives {embedder.dimensions}-dimension "
                              "vectors and is not trained to be shortened; omit dimensions", "invalid_dimensions")
        result = await to_thread.run_sync(lambda: embedder.embed(inputs, truncate=body.truncate))
        data = [{"object": "embedding", "index": i, "embedding": _encode(v, body.encoding_format)}
                for i, v in enumerate(result.vectors)]
        truncated = list(result.truncated) or None
        headers = {HEADER: f"inputs={','.join(map(str, truncated))}; max_tokens={embedder.window}"} if truncated else {}
        return JSONResponse({"object": "list", "data": data, "model": body.model or embedder.source,
                             "usage": {"prompt_tokens": result.total_tokens, "total_tokens": result.total_tokens},
                             "truncated": truncated}, headers=headers)


def served(host: EngineHost, requested: Optional[str]) -> Embedder:
    """The embedding model, if `requested` names it (or is omitted, or any name is accepted); else 404."""
    embedder = host.embedder
    if embedder is None:
        raise not_found("this server serves no embedding model (started with --embedding-model none)",
                        "model_not_found")
    if requested is None or host.names.any_name or requested in own_names(embedder):
        return embedder
    raise not_found(f"model {requested!r} is not an embedding model served here; use {embedder.source!r}",
                    "model_not_found")


def own_names(embedder: Embedder) -> set[str]:
    return {embedder.source, embedder.model.name, embedder.model.path.name}


def _encode(vector: np.ndarray, encoding: str):
    if encoding == "base64":  # little-endian float32, as OpenAI's clients decode it
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]


def card(embedder: Embedder, created: int) -> dict:
    """The embedding model's /v1/models entry: an OpenAI model object saying what it is."""
    memory = embedder.memory
    return {"id": embedder.source, "object": "model", "created": created, "owned_by": "confab",
            "type": "embedding", "embedding": {"dimensions": embedder.dimensions, "max_input_tokens": embedder.window,
                                               "loaded": embedder.loaded, "backend": embedder.backend,
                                               "weights_bytes": memory.weights, "working_bytes": memory.working}}
