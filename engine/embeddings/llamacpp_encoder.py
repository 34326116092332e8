"""An embedding GGUF on llama.cpp: the file as stored, `embedding=True`, the model's own pooling, on
the CPU; one sequence per decode (llama-cpp-python's high-level context holds one sequence), then
normalised as the torch path is.

Created and used only on the embedder's own thread. Reads llama-cpp-python's `_ctx` and `_batch`
(the version is pinned): its public `embed()` takes only text, and token-id inputs must reach the
model as given.
"""

from __future__ import annotations

import numpy as np

from .models import EmbeddingFolder

_POOLING = {"mean": 1, "cls": 2, "last": 3}  # LLAMA_POOLING_TYPE_*


class LlamaEncoder:
    """Encodes batches of token ids into unit vectors."""

    name = "llamacpp"
    device = "cpu"
    dtype = "as stored"
    dtype_reason = "as stored: llama.cpp computes in the GGUF's own types"

    def __init__(self, folder: EmbeddingFolder) -> None:
        import llama_cpp

        from ..backends.torch_threads import thread_count

        self._llama_cpp = llama_cpp
        self._llama = llama_cpp.Llama(str(folder.path), embedding=True, n_ctx=folder.window, n_batch=folder.window,
                                      n_ubatch=folder.window, pooling_type=_POOLING[folder.pooling],
                                      n_gpu_layers=0, n_threads=thread_count(), verbose=False)
        self._dimensions = self._llama.n_embd()
        self.normalize = folder.normalize
        self.weight_bytes = folder.weight_bytes

    def encode(self, batch: list[list[int]]) -> np.ndarray:
        """Vectors (len(batch) × dimensions, float32) of one batch of token-id lists."""
        llama_cpp, llama = self._llama_cpp, self._llama
        out = np.zeros((len(batch), self._dimensions), dtype=np.float32)
        for row, ids in enumerate(batch):
            llama._batch.reset()
            llama._batch.add_sequence(ids, 0, True)  # every token an output: pooling reads them all
            llama_cpp.llama_kv_self_clear(llama._ctx.ctx)
            llama._ctx.decode(llama._batch)
            out[row] = np.ctypeslib.as_array(llama_cpp.llama_get_embeddings_seq(llama._ctx.ctx, 0),
                                             shape=(self._dimensions,))
        llama._batch.reset()
        if self.normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def close(self) -> None:
        if self._llama is not None:
            self._llama.close()
            self._llama = None
