"""Retrieval over a document library, engine-side and storage-free: structure-aware chunking
(chunking.py over blocks.py), BM25 (bm25.py) and the hybrid, fused ranking (hybrid.py). The app
stores chunks, vectors and its word index; these functions decide what they are and how they rank."""

from .bm25 import BM25, words
from .chunking import Chunk, chunk_pages, chunk_text, estimate_tokens
from .hybrid import Hit, by_score, by_vector, fuse, hybrid

__all__ = ["BM25", "Chunk", "Hit", "by_score", "by_vector", "chunk_pages", "chunk_text", "estimate_tokens", "fuse",
           "hybrid", "words"]
