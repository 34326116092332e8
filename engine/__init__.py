"""Confab's inference engine: one loaded model, many isolated sessions, its own thread and stream.

    from engine import Engine, EngineConfig, SamplingParams

    with Engine.load("bundled:smollm2-135m-instruct") as engine, engine.open_session() as s:
        for chunk in s.chat([{"role": "user", "content": "Hi"}], SamplingParams(temperature=0)):
            print(chunk.text, end="")

Documents beyond the context: `Embedder` (a sentence-embedding model on its own thread, loaded on
first use) and the storage-free pieces of a library, `chunk_text` / `chunk_pages`, `BM25` and `hybrid`.

A model served elsewhere over the OpenAI API is a `RemoteEngine` with the same interface:
`open_engine("server:http://host:8317/v1#model")` gives one.

The engine imports neither Qt nor SQLite; the app sees it only through these names.

Importing the engine before torch lets it set OpenMP's wait policy (OMP_WAIT_POLICY=PASSIVE, only if
unset) so decode degrades gently on a busy machine; see engine/backends/torch_threads.py.
"""

from .backends.torch_threads import prepare_environment as _prepare_environment

_prepare_environment()  # before anything below can import torch

from .cli.check import check_model
from .reply.constraint import Constraint
from .engine import Engine
from .embeddings import DEFAULT_EMBEDDING_MODEL, Embedder, EmbedderMemory, Embeddings
from .retrieval import BM25, Hit, chunk_pages, chunk_text, fuse, hybrid
from .retrieval import Chunk as DocumentChunk  # engine.Chunk is a reply's piece of text
from .errors import (AccessDeniedError, CapacityError, ChecksumError, ContextOverflowError, DiskFullError,
                     DownloadError, DownloadStopped, DraftModelError, DraftModelFileError, EngineError,
                     ImageError, ImageFormatError, ImagesNotSupportedError, ImageTooLargeError,
                     ImageUnreadableError, InvalidRequestError, ModelLoadError,
                     NetworkError, NoWeightsError, ReplyInterruptedError, RepoNotFoundError,
                     SessionBusyError, SessionClosedError, SessionPoisonedError, StateFileError)
from .models.estimate import MemoryEstimate, estimate_memory, trained_context
from .models import DEFAULT_MODEL
from .backends.native import LlamaLibrary, llama_library
from .models.hub import Hit as SearchHit
from .models.hub import Option as ModelOption
from .models.hub import curated as curated_models
from .models.hub import repo_options
from .models.hub import search as search_models
from .models.hub_download import Download as HubDownload
from .models.hub_download import Progress as DownloadProgress
from .open import AnyEngine, open_engine
from .remote import (AuthenticationFailedError, ConnectionLostError, NotOpenAIServerError, RemoteEngine,
                     RemoteError, RemoteSession, ServerUnreachableError, list_models, parse_remote_source,
                     remote_source)
from .remote.errors import ReplyCutError
from .images import image_part
from .session import Session, Stream
from .reply.toolstream import CallDelta, CallStream
from .kv_cache_type import KV_CACHE_TYPES
from .types import Capacity, Chunk, EngineConfig, GenerationStats, Reply, SamplingParams, TokenLogprob
from .reply import truncation  # context policies, shared by the server and the app

__all__ = [
    "AnyEngine",
    "RemoteEngine",
    "RemoteError",
    "RemoteSession",
    "list_models",
    "open_engine",
    "remote_source",
    "parse_remote_source",
    "DEFAULT_MODEL",
    "DEFAULT_EMBEDDING_MODEL",
    "Embedder",
    "EmbedderMemory",
    "Embeddings",
    "BM25",
    "DocumentChunk",
    "Hit",
    "chunk_pages",
    "chunk_text",
    "fuse",
    "hybrid",
    "Capacity",
    "DownloadProgress",
    "HubDownload",
    "ModelOption",
    "SearchHit",
    "CallDelta",
    "CallStream",
    "Chunk",
    "Constraint",
    # Every error a caller may catch (engine/errors.py, engine/remote/errors.py), from `engine` itself.
    "AccessDeniedError",
    "AuthenticationFailedError",
    "CapacityError",
    "ChecksumError",
    "ConnectionLostError",
    "ContextOverflowError",
    "DiskFullError",
    "DownloadError",
    "DownloadStopped",
    "EngineError",
    "InvalidRequestError",
    "ImageError",
    "ImageFormatError",
    "ImagesNotSupportedError",
    "ImageTooLargeError",
    "ImageUnreadableError",
    "ModelLoadError",
    "DraftModelError",
    "DraftModelFileError",
    "NetworkError",
    "NoWeightsError",
    "NotOpenAIServerError",
    "ReplyCutError",
    "ReplyInterruptedError",
    "RepoNotFoundError",
    "ServerUnreachableError",
    "SessionBusyError",
    "SessionClosedError",
    "SessionPoisonedError",
    "StateFileError",
    "Engine",
    "EngineConfig",
    "KV_CACHE_TYPES",
    "GenerationStats",
    "Reply",
    "LlamaLibrary",
    "MemoryEstimate",
    "SamplingParams",
    "Session",
    "Stream",
    "TokenLogprob",
    "check_model",
    "image_part",
    "curated_models",
    "estimate_memory",
    "trained_context",
    "llama_library",
    "repo_options",
    "search_models",
    "truncation",
]
