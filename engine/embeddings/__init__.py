"""Sentence embeddings: an embedding model on its own thread beside the chat model (embedder.py),
located like the bundled chat model (models.py), tokenized on the caller's thread (tokens.py), run on
torch (a folder: torch_encoder.py) or llama.cpp (a GGUF: llamacpp_encoder.py)."""

from .embedder import MAX_INPUTS, Embedder, EmbedderMemory, Embeddings
from .models import BUNDLED_EMBEDDERS, DEFAULT_EMBEDDING_MODEL, EmbeddingFolder, locate

__all__ = ["BUNDLED_EMBEDDERS", "DEFAULT_EMBEDDING_MODEL", "MAX_INPUTS", "Embedder", "EmbedderMemory",
           "EmbeddingFolder", "Embeddings", "locate"]
