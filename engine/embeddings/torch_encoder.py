"""A sentence-embedding model on torch: transformers' AutoModel in float32, padded batches, the
model's pooling over real tokens only, then normalised (as the sentence-transformers model cards do).

Created and used only on the embedder's own thread.
"""

from __future__ import annotations

import numpy as np

from .models import EmbeddingFolder


class TorchEncoder:
    """Encodes batches of token ids into unit vectors."""

    name = "torch"

    def __init__(self, folder: EmbeddingFolder, device: str = "auto") -> None:
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # as the chat backend: no bar on the terminal of a server
        self._torch = torch
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        # float32 everywhere: the model is small, and bfloat16 on a CPU without native support is slow
        self.model = AutoModel.from_pretrained(str(folder.path), dtype=torch.float32).eval().to(self.device)
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
            hidden = self.model(input_ids=ids, attention_mask=mask).last_hidden_state
            pooled = pool(hidden, mask, self.pooling)
            if self.normalize:
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return pooled.float().cpu().numpy()

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
