"""An embedding model beside the chat model: a second engine with its own thread, loaded on first use,
its memory counted and checked before it loads.

    embedder = Embedder()                       # the bundled all-MiniLM-L6-v2; nothing loaded yet
    result = embedder.embed(["a question", "a passage"])   # loads, then embeds
    scores = result.vectors @ result.vectors[0]            # unit vectors: dot product = cosine

Inputs are tokenized and checked on the caller's thread; the model runs only on the embedder's
thread, one batch per queued request, so a long indexing job and a server request take turns
instead of one waiting for the other to finish. Many inputs are grouped by length into padded
batches (at most MAX_BATCH rows and MAX_BATCH_TOKENS padded tokens, each input padded by little:
PAD_SLACK). The model computes in bfloat16 on a CPU that does, float32 elsewhere (torch_encoder.py).
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from ..errors import CapacityError, InvalidRequestError
from ..runner import Runner
from .models import DEFAULT_EMBEDDING_MODEL, EmbeddingFolder, locate
from .tokens import EmbeddingTokenizer, Input, folder_encoder, gguf_encoder

MAX_BATCH = 32
MAX_BATCH_TOKENS = 8192
"""Rows × padded length of one forward: bounds the working memory whatever the inputs."""
MAX_INPUTS = 2048
"""Inputs one call may pass (OpenAI's own limit per request)."""
PAD_SLACK = 16
"""An input joins a batch only if the batch's width is at most this many tokens, or an eighth, more than
its own length: the app's passages of a document, 32 to a call, were padded by 29–37 % in one batch
(a quarter of the compute spent on padding); rows of 4 or 8 cost a CPU no more per token than 32."""


@dataclass(frozen=True)
class Embeddings:
    """The vectors of one call, in the order of its inputs."""

    vectors: np.ndarray
    """len(inputs) × dimensions, float32; unit length when the model normalises."""
    tokens: tuple[int, ...]
    """Tokens each input cost, special tokens included (after any cut)."""
    truncated: tuple[int, ...]
    """Indices of the inputs cut to the model's window (only when truncate was asked)."""

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens)


@dataclass(frozen=True)
class EmbedderMemory:
    """What the embedding model holds, in bytes: counted before it loads and reported after."""

    weights: int
    """The weights: the files' size before loading (float32), the parameters' as loaded after (half
    that in bfloat16)."""
    working: int
    """Activations of the largest batch the embedder runs (MAX_BATCH_TOKENS tokens)."""

    @property
    def total(self) -> int:
        return self.weights + self.working


class _Worker:
    """What the embedder's thread holds: the encoder. Runner's protocol: no rounds, requests only."""

    busy = False

    def __init__(self, encoder) -> None:
        self.encoder = encoder

    def step_round(self) -> None:  # pragma: no cover - never busy, so never called
        pass

    def fail_all(self, error: BaseException) -> None:  # pragma: no cover - see step_round
        pass

    def shutdown(self, failure: Optional[str]) -> None:
        self.encoder.close()


class Embedder:
    """A sentence-embedding model on its own thread, loaded on first use. Thread-safe."""

    def __init__(self, source: str = DEFAULT_EMBEDDING_MODEL, device: str = "auto",
                 available: Optional[Callable[[], int]] = None, dtype: str = "auto") -> None:
        """source: "bundled:all-minilm-l6-v2" or an embedding model folder; located and its tokenizer
        read now (ModelLoadError if it names nothing usable), its weights only on first use.
        available(): bytes of memory free (psutil's by default), checked against `memory` before loading.
        dtype (torch only): "auto" computes in bfloat16 on a CPU with native bfloat16 (1.6-2× as fast
        there, vectors at cosine ≥ 0.999 to float32's), else in float32; "float32" is the reference."""
        self.model: EmbeddingFolder = locate(str(source))
        gguf = self.model.format == "gguf"
        encode, vocab_size = (gguf_encoder if gguf else folder_encoder)(self.model.path)
        self.tokenizer = EmbeddingTokenizer(encode, vocab_size, self.model.window, self.model.source)
        self._device = device
        self._dtype = dtype
        self._available = available
        self._lock = threading.Lock()
        self._runner: Optional[Runner] = None
        self._weights: Optional[int] = None
        self.load_seconds: Optional[float] = None

    # -- facts -------------------------------------------------------------------------------------
    @property
    def source(self) -> str:
        return self.model.source

    @property
    def dimensions(self) -> int:
        return self.model.dimensions

    @property
    def window(self) -> int:
        """Most tokens one input may have, special tokens included."""
        return self.model.window

    @property
    def backend(self) -> str:
        """"torch" for a folder, "llamacpp" for a GGUF file."""
        return "llamacpp" if self.model.format == "gguf" else "torch"

    @property
    def dtype(self) -> Optional[str]:
        """What the loaded model computes in ("float32", "bfloat16", "as stored" for a GGUF) and why,
        e.g. "bfloat16: this CPU has AVX512-BF16 (AVX512)"; None before it loads."""
        runner = self._runner
        worker = runner.worker if runner is not None else None
        return worker.encoder.dtype_reason if worker is not None else None

    @property
    def loaded(self) -> bool:
        runner = self._runner
        return runner is not None and runner.worker is not None

    @property
    def memory(self) -> EmbedderMemory:
        """Bytes it holds once loaded (an estimate from the files before then)."""
        c = self.model.config
        hidden, inner = int(c["hidden_size"]), int(c.get("intermediate_size") or 4 * c["hidden_size"])
        heads = int(c.get("num_attention_heads") or 1)
        rows = MAX_BATCH_TOKENS // self.window or 1
        # hidden states, the feed-forward's inner activations and one layer's attention scores, float32
        working = 4 * (MAX_BATCH_TOKENS * (3 * hidden + inner) + rows * heads * self.window ** 2)
        return EmbedderMemory(self._weights or self.model.weight_bytes, working)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text costs as one input (special tokens included); the window bounds it."""
        return self.tokenizer.count(texts)

    # -- work --------------------------------------------------------------------------------------
    def load(self) -> None:
        """Load the weights now on the embedder's thread (embed() does so on first use; after close(),
        the next embed() loads them again).

        CapacityError, with the numbers, when free memory cannot hold the model and its largest batch;
        ModelLoadError when the weights do not load."""
        self._loaded_runner()

    def _loaded_runner(self) -> Runner:
        with self._lock:
            if self._runner is not None and self._runner.running:
                runner = self._runner
            else:
                self._check_memory()
                runner = Runner(f"confab-embedder-{id(self):x}", self._load_worker)
                self._runner = runner
                # a dropped embedder stops its thread, and the weights go (as a dropped Engine's do)
                weakref.finalize(self, runner.stop).atexit = False
                runner.start()
        runner.loaded.result()
        return runner

    def _check_memory(self) -> None:
        free = self._available() if self._available is not None else _free_memory()
        need = self.memory.total
        if free < need:
            raise CapacityError(f"not enough free memory to load the embedding model {self.source}: it needs "
                                f"{need / 2**20:.0f} MiB (weights {self.memory.weights / 2**20:.0f} MiB, batches "
                                f"{self.memory.working / 2**20:.0f} MiB) and {free / 2**20:.0f} MiB is free")

    def _load_worker(self) -> _Worker:
        start = time.perf_counter()
        if self.model.format == "gguf":
            from .llamacpp_encoder import LlamaEncoder

            encoder = LlamaEncoder(self.model)
        else:
            from .torch_encoder import TorchEncoder

            encoder = TorchEncoder(self.model, self._device, self._dtype)
        self._weights = encoder.weight_bytes
        self.load_seconds = time.perf_counter() - start
        return _Worker(encoder)

    def embed(self, inputs: Sequence[Input], truncate: bool = False,
              progress: Optional[Callable[[int, int], None]] = None) -> Embeddings:
        """Vectors for `inputs` (texts, or lists of this model's token ids), in their order.

        Checked before any compute: InvalidRequestError for no inputs, more than MAX_INPUTS, an empty
        input or a token id outside the vocabulary; ContextOverflowError for an input longer than the
        window unless `truncate` (then it is cut, and its index is in `truncated`).
        progress(done, total) is called on this thread after each batch."""
        if isinstance(inputs, str) or not isinstance(inputs, Sequence):
            raise InvalidRequestError("inputs must be a list of texts or of token-id lists")
        if not inputs:
            raise InvalidRequestError("no inputs: pass at least one text")
        if len(inputs) > MAX_INPUTS:
            raise InvalidRequestError(f"{len(inputs)} inputs in one call; at most {MAX_INPUTS}: send them in "
                                      "several calls")
        ids, cut = self.tokenizer.prepare(inputs, truncate)
        runner = self._loaded_runner()  # this call's runner: a close() meanwhile fails its batches by name
        vectors = np.zeros((len(ids), self.dimensions), dtype=np.float32)
        done = 0
        for batch in batches([len(x) for x in ids]):
            rows = [ids[i] for i in batch]
            vectors[batch] = runner.call(lambda worker, rows=rows: worker.encoder.encode(rows))
            done += len(batch)
            if progress is not None:
                progress(done, len(ids))
        return Embeddings(vectors, tuple(len(x) for x in ids), cut)

    def close(self) -> None:
        """Stop the thread and free the weights (after the batches queued so far). Idempotent."""
        with self._lock:
            runner, self._runner = self._runner, None
        if runner is not None:
            runner.stop()
            runner.thread.join(30)

    def __enter__(self) -> "Embedder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def batches(lengths: list[int]) -> list[list[int]]:
    """Input indices grouped by similar length, each group within MAX_BATCH rows and MAX_BATCH_TOKENS
    padded tokens, and no input padded by more than PAD_SLACK tokens or an eighth of the group's width,
    so little compute goes to padding."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups: list[list[int]] = []
    for i in order:
        group = groups[-1] if groups else None
        width = lengths[group[0]] if group else 0  # the group's first (longest) input sets its width
        if group and len(group) < MAX_BATCH and (len(group) + 1) * width <= MAX_BATCH_TOKENS \
                and width - lengths[i] <= max(PAD_SLACK, width // 8):
            group.append(i)
        else:
            groups.append([i])
    return groups


def _free_memory() -> int:
    import psutil

    return int(psutil.virtual_memory().available)
