"""PyTorch backend: transformers models with one DynamicCache per session, CUDA when present.

Batched decode: the decoding sessions' caches are left-padded and merged into one batch cache that
stays resident between steps (re-merged only when the batch's members change); each step feeds one
token per row with a 2-D attention mask and per-row position ids. Merging every step instead would
copy every session's K/V twice more per token (pad+cat in, slice+clone out).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import ContextManager, Optional

import numpy as np
import torch

from ..errors import ModelLoadError, StateFileError
from ..models.gguf_convert import gguf_source
from .torch_dtype import auto_device, choose_dtype
from .torch_gguf import load_gguf_model, quantize_linears
from .torch_threads import apply_threads

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class TorchBackend:
    name = "torch"

    def __init__(self, device: str, dtype: str, quantize: Optional[str] = None) -> None:
        if device == "auto":
            device = auto_device()
        if device not in ("cuda", "cpu"):
            raise ModelLoadError(f"the torch backend runs on cuda or cpu, not {device!r}")
        if device == "cuda" and not torch.cuda.is_available():
            raise ModelLoadError("device 'cuda' was asked for but no CUDA GPU is available")
        self.device = device
        choice = choose_dtype(device, dtype)  # bfloat16 only where the hardware has it
        self.dtype, self.dtype_reason = choice.dtype, choice.reason
        self._torch_dtype = _DTYPES[self.dtype]
        self.quantize = quantize
        self.quantized = ""
        """What load() kept in int4 ("" when nothing): e.g. "int4: 210 of 211 linear layers"."""
        if device == "cpu":
            try:
                self.threads = apply_threads()
            except ValueError as e:
                raise ModelLoadError(str(e)) from e
        self._stream = None
        self.model = None
        self.weights_nbytes = 0

    def load(self, folder: Path, config: dict) -> None:
        from transformers import AutoConfig, AutoModelForCausalLM
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # load progress is the engine's to report

        if "quantization" in config:
            raise ModelLoadError(f"{folder.name} holds MLX-quantized weights; load it with the mlx backend")
        if self.device == "cuda":
            # This engine's own stream, made on its own thread; every forward runs inside it.
            self._stream = torch.cuda.Stream()
        gguf_path = gguf_source(folder)  # weights straight from the .gguf: its 4-bit tensors stay 4-bit
        try:
            hf_config = AutoConfig.from_pretrained(folder, trust_remote_code=False)
            with self.compute():
                if gguf_path is not None:
                    model, self.quantized = load_gguf_model(
                        gguf_path, hf_config, self._torch_dtype, self.device, want_int4=self.quantize != "none")
                else:
                    model = AutoModelForCausalLM.from_pretrained(
                        folder, config=hf_config, dtype=self._torch_dtype, trust_remote_code=False,
                        local_files_only=True,
                    ).to(self.device)
                if self.quantize == "int4" and not self.quantized:
                    self.quantized = quantize_linears(model, self.device)
        except ModelLoadError:
            raise
        except Exception as e:
            raise ModelLoadError(f"could not load {folder.name} with transformers: {e}") from e
        model.eval()
        self.model = model
        self.weights_nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
        self.weights_nbytes += sum(b.numel() * b.element_size() for b in model.buffers())

    def available_memory(self) -> int:
        """Bytes still free on the device now (after the weights are loaded)."""
        if self.device == "cuda":
            return torch.cuda.mem_get_info()[0]
        import psutil

        return psutil.virtual_memory().available

    def compute(self) -> ContextManager:
        stack = contextlib.ExitStack()
        stack.enter_context(torch.inference_mode())
        if self._stream is not None:
            stack.enter_context(torch.cuda.stream(self._stream))
        return stack

    def new_state(self):
        from transformers import DynamicCache

        return DynamicCache(config=self.model.config)

    def forward(self, state, token_ids: list[int]) -> np.ndarray:
        ids = torch.tensor([token_ids], dtype=torch.long, device=self.device)
        out = self.model(input_ids=ids, past_key_values=state, use_cache=True, logits_to_keep=1)
        return out.logits[0, -1].float().cpu().numpy()

    # -- batched decode ----------------------------------------------------------------------------
    def batchable(self, state) -> bool:
        """Only plain full-attention layers merge by left padding; sliding/recurrent ones step alone."""
        from transformers.cache_utils import DynamicLayer

        layers = getattr(state, "layers", None)
        return bool(layers) and all(type(layer) is DynamicLayer and layer.is_initialized for layer in layers)

    def merge(self, states: list) -> "TorchBatch":
        """One batch cache holding `states` left-padded to the longest (the states are not changed)."""
        from transformers import DynamicCache

        lengths = [s.get_seq_length() for s in states]
        longest = max(lengths)
        data = []
        for i in range(len(states[0].layers)):
            keys = [_left_pad(s.layers[i].keys, longest) for s in states]
            values = [_left_pad(s.layers[i].values, longest) for s in states]
            data.append((torch.cat(keys), torch.cat(values)))
        mask = torch.zeros((len(states), longest), dtype=torch.long, device=self.device)
        for row, n in enumerate(lengths):
            mask[row, longest - n:] = 1
        return TorchBatch(DynamicCache(ddp_cache_data=data, config=self.model.config), mask, lengths)

    def forward_batch(self, batch: "TorchBatch", token_ids: list[int]) -> np.ndarray:
        """Append one token per row; return float32 logits, one row per member. On error, unchanged."""
        rows = len(batch.lengths)
        ids = torch.tensor(token_ids, dtype=torch.long, device=self.device).view(rows, 1)
        mask = torch.cat([batch.mask, batch.mask.new_ones((rows, 1))], dim=1)
        positions = torch.tensor(batch.lengths, dtype=torch.long, device=self.device).view(rows, 1)
        width = batch.mask.shape[1]
        try:
            out = self.model(
                input_ids=ids, attention_mask=mask, position_ids=positions,
                past_key_values=batch.cache, use_cache=True, logits_to_keep=1,
            )
        except BaseException:
            for layer in batch.cache.layers:  # layers updated before the error hold one column too many
                if layer.get_seq_length() > width:
                    layer.crop(width - layer.get_seq_length())
            raise
        batch.mask = mask
        batch.lengths = [n + 1 for n in batch.lengths]
        return out.logits[:, -1].float().cpu().numpy()

    def split(self, batch: "TorchBatch") -> list:
        """Each member's own cache again, padding dropped (copies: the batch tensors are freed)."""
        from transformers import DynamicCache

        width = batch.mask.shape[1]
        states = []
        for row, n in enumerate(batch.lengths):
            data = [
                (layer.keys[row:row + 1, :, width - n:].clone(), layer.values[row:row + 1, :, width - n:].clone())
                for layer in batch.cache.layers
            ]
            states.append(DynamicCache(ddp_cache_data=data, config=self.model.config))
        return states

    def row_nbytes(self, batch: "TorchBatch", row: int) -> int:
        """Bytes member `row`'s own state will hold once split out (its unpadded part)."""
        width = batch.mask.shape[1]
        return sum(t.numel() * t.element_size() for t in _layer_tensors(batch.cache)) * batch.lengths[row] // (
            width * len(batch.lengths)
        )

    def trim(self, state, n: int) -> bool:
        if n <= 0:
            return True
        if any(getattr(layer, "is_sliding", False) for layer in state.layers):
            return False
        state.crop(-n)  # transformers 5: a negative count removes that many tokens
        return True

    def state_nbytes(self, state) -> int:
        return sum(t.numel() * t.element_size() for t in _layer_tensors(state))

    def save_state(self, state, path: Path, metadata: dict[str, str]) -> None:
        from safetensors.torch import save_file

        tensors = {}
        for i, layer in enumerate(state.layers):
            if getattr(layer, "keys", None) is not None and layer.keys.numel():
                tensors[f"{i}.keys"] = layer.keys.contiguous().cpu()
                tensors[f"{i}.values"] = layer.values.contiguous().cpu()
        meta = dict(metadata, layers=str(len(state.layers)))
        save_file(tensors, str(path), metadata=meta)

    def load_state(self, path: Path):
        from safetensors import safe_open
        from transformers import DynamicCache

        try:
            with safe_open(str(path), framework="pt", device="cpu") as f:
                metadata = f.metadata() or {}
                layers = int(metadata.get("layers", "0"))
                data = []
                for i in range(layers):
                    if f"{i}.keys" in f.keys():
                        k = f.get_tensor(f"{i}.keys").to(self.device, self._torch_dtype)
                        v = f.get_tensor(f"{i}.values").to(self.device, self._torch_dtype)
                        data.append((k, v))
                    else:
                        data.append((None, None))
        except Exception as e:
            raise StateFileError(f"{path.name} is not a readable session state: {e}") from e
        state = DynamicCache(ddp_cache_data=data, config=self.model.config) if data else self.new_state()
        return state, metadata


@dataclass
class TorchBatch:
    """The resident batch cache of the sessions decoding together."""

    cache: object
    mask: torch.Tensor
    """(rows, width): 1 where a row holds a real token, 0 on its left padding."""
    lengths: list[int]
    """Real tokens per row; the next token's position id."""


def _left_pad(t: torch.Tensor, width: int) -> torch.Tensor:
    pad = width - t.shape[-2]
    return torch.nn.functional.pad(t, (0, 0, pad, 0)) if pad else t


def _layer_tensors(state):
    for layer in state.layers:
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor):
                yield t
