"""A sentence-embedding model on torch: transformers' AutoModel, padded batches, the model's pooling
over real tokens only, then normalised (as the sentence-transformers model cards do).

The dtype follows the hardware (`engine.backends.torch_dtype.choose_dtype`): bfloat16 on a CPU that
computes in it (AVX512-BF16 or AMX), float32 elsewhere. On a 2-core AMD EPYC with AVX512-BF16 the
bundled all-MiniLM-L6-v2's matmuls ran 2.3× faster in bfloat16 (a forward of 32 × 256 tokens 2.1×),
the app's indexing 1.6× faster, and its vectors kept cosine ≥ 0.9999 to float32's (434 passages);
autocast, which keeps float32 weights and casts them at every call, gained nothing there. On a CPU
without native bfloat16 the same matmuls are emulated and several times slower (LESSONS.md, turn 2),
so float32 stays. Pooling and normalising are done in float32 either way. A GPU keeps float32: not
measured here.

Created and used only on the embedder's own thread.
"""

from __future__ import annotations

import numpy as np

from .models import EmbeddingFolder


def choose(device: str, asked: str = "auto") -> tuple[str, str]:
    """(dtype, why) for `device`: `asked` unless "auto"; "auto" is bfloat16 only on a CPU with native
    bfloat16."""
    from ..backends.torch_dtype import choose_dtype

    if asked == "auto" and device != "cpu":
        return "float32", f"float32: the embedding model on {device} is kept in float32"
    choice = choose_dtype(device, asked)
    return choice.dtype, choice.reason


class TorchEncoder:
    """Encodes batches of token ids into unit vectors."""

    name = "torch"

    def __init__(self, folder: EmbeddingFolder, device: str = "auto", dtype: str = "auto") -> None:
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # as the chat backend: no bar on the terminal of a server
        self._torch = torch
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        self.dtype, self.dtype_reason = choose(self.device, dtype)
        self.model = AutoModel.from_pretrained(str(folder.path), dtype=getattr(torch, self.dtype)).eval()
        self.model.to(self.device)
        self.pooling = folder.pooling
        self.normalize = folder.normalize
        self.weight_bytes = sum(p.numel() * p.element_size() for p in self.model.parameters())

    def encode(self, batch: list[list[int]]) -> np.ndarray:
        """Vectors (len(batch) × dimensions, float32) of one batch of token-id lists."""
        torch = self._torch
        width = max(len(ids) for ids in batch)
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, seq in enumerate(batch):
            ids[row, :len(seq)] = torch.tensor(seq, dtype=torch.long)
            mask[row, :len(seq)] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        with torch.inference_mode():
            hidden = self.model(input_ids=ids, attention_mask=mask).last_hidden_state.float()
            pooled = pool(hidden, mask, self.pooling)
            if self.normalize:
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return pooled.cpu().numpy()

    def close(self) -> None:
        self.model = None


def pool(hidden, mask, how: str):
    """One vector per row: the mean of the real tokens' states, the first token's, or the last real one's."""
    if how == "cls":
        return hidden[:, 0]
    if how == "last":
        last = mask.sum(dim=1) - 1
        return hidden[range(hidden.shape[0]), last]
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
