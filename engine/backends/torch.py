"""PyTorch backend: transformers models with one preallocated K/V cache per session, CUDA when present.

Each session's K/V lives in chunk-grown buffers written in place (torch_cache.py). Batched decode:
the decoding sessions' caches are left-padded into one batch cache of the same layout that stays
resident between steps (re-merged only when the batch's members change); each step feeds one token
per row with a 2-D attention mask and per-row position ids, and a failed step is undone by resetting
the filled length.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager, Optional

import numpy as np
import torch

from ..errors import ModelLoadError, StateFileError
from ..models.gguf_convert import gguf_source
from ..models.missing_weights import check_complete
from .torch_dtype import auto_device, choose_dtype
from .torch_gguf import load_gguf_model, quantize_linears
from .torch_threads import apply_threads
from . import torch_cache, torch_graphs

log = logging.getLogger(__name__)

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class TorchBackend:
    name = "torch"

    def __init__(self, device: str, dtype: str, quantize: Optional[str] = None, threads: Optional[int] = None) -> None:
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
                self.threads = apply_threads(threads)
            except ValueError as e:
                raise ModelLoadError(str(e)) from e
        self._stream = None
        self.model = None
        self.weights_nbytes = 0
        self.arena: Optional[torch_graphs.DecodeArena] = None
        """Static-address batch state, graph-captured per bucket (CUDA); None: batches run eagerly."""

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
                    model, info = AutoModelForCausalLM.from_pretrained(
                        folder, config=hf_config, dtype=self._torch_dtype, trust_remote_code=False,
                        local_files_only=True, output_loading_info=True,
                    )
                    # transformers fills missing tensors with random numbers: refuse instead
                    check_complete(folder.name, info.get("missing_keys", ()), info.get("unexpected_keys", ()))
                    model = model.to(self.device)
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

    def close(self) -> None:
        """Free the weights (and the static decode arena) on the engine thread."""
        self.model, self.arena, self._stream = None, None, None

    def warm_up(self, max_context: int, max_batch: int, report: Callable[[float, str], None]) -> None:
        """On CUDA, capture the batched decode step per bucket (CONFAB_CUDA_GRAPHS=0 keeps it eager)."""
        if self.device != "cuda" or os.environ.get("CONFAB_CUDA_GRAPHS", "1") == "0" or max_batch < 2:
            return
        with self.compute():
            if not torch_cache.is_chunked(self._probe_state()):
                return  # sliding-window / recurrent layers step one session per forward, eagerly
            self.enable_static_decode(max_batch, max_context, capture=True, report=report)

    def _probe_state(self):
        state = self.new_state()
        self.forward(state, [0])
        return state

    def enable_static_decode(self, max_batch: int, max_context: int, capture: bool, report=lambda f, m: None) -> None:
        """Run batches of up to 16 rows in a static arena (captured as CUDA graphs when `capture`).

        Any failure leaves batches on the eager path, with the reason logged.
        """
        rows = torch_graphs.bucket_for(min(max_batch, torch_graphs.BUCKETS[-1]))
        try:
            arena = torch_graphs.DecodeArena(
                self.model, rows, torch_cache.rounded(max_context), self.device, self._torch_dtype
            )
            if capture:
                arena.capture(report)
        except Exception:
            log.exception("static decode is off: the decode step could not be set up or captured")
            self.arena = None
            return
        self.arena = arena

    @property
    def steps_one_in_batch(self) -> bool:
        """Whether a lone decoding session should step through the batch path: where the decode step
        is captured as a CUDA graph, whose one launch beats the eager step's hundreds (measured on an
        H200 with a 135M model: the eager step 15 tok/s, launch-bound; the graph ~140 steps/s)."""
        return self.arena is not None and bool(self.arena.graphs)

    def new_state(self):
        return torch_cache.new_cache(self.model.config)

    def forward(self, state, token_ids: list[int]) -> np.ndarray:
        ids = torch.tensor([token_ids], dtype=torch.long, device=self.device)
        width = state.get_seq_length()
        try:
            out = self.model(input_ids=ids, past_key_values=state, use_cache=True, logits_to_keep=1)
            return out.logits[0, -1].float().cpu().numpy()
        except BaseException:
            if torch_cache.is_chunked(state):  # layers written before the error: back to `width`
                torch_cache.rollback(state, width)
            raise

    # -- batched decode ----------------------------------------------------------------------------
    def batchable(self, state) -> bool:
        """Only chunked full-attention layers merge by left padding; sliding/recurrent ones step alone."""
        return torch_cache.is_chunked(state)

    def merge(self, states: list) -> "TorchBatch":
        """One batch cache holding `states` left-padded to the longest (the states are not changed)."""
        lengths = [s.get_seq_length() for s in states]
        arena = self.arena
        if arena is not None and not arena.in_use and len(states) <= arena.max_rows and max(lengths) < arena.capacity:
            arena.load(states, lengths)
            return TorchBatch(None, None, lengths, arena)
        longest = max(lengths)
        mask = torch.zeros((len(states), longest), dtype=torch.long, device=self.device)
        for row, n in enumerate(lengths):
            mask[row, longest - n:] = 1
        return TorchBatch(torch_cache.merge(states, lengths), mask, lengths)

    def forward_batch(self, batch: "TorchBatch", token_ids: list[int]) -> np.ndarray:
        """Append one token per row; return float32 logits, one row per member. On error, unchanged."""
        if batch.arena is not None:
            logits = batch.arena.step(token_ids)
            batch.lengths = list(batch.arena.lengths)
            return logits
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
            # Inside the try: on CUDA a device fault surfaces here, at the copy, after every layer wrote.
            logits = out.logits[:, -1].float().cpu().numpy()
        except BaseException:
            # Exact: what the step wrote lies past `width`, which only the filled length exposes.
            torch_cache.rollback(batch.cache, width)
            raise
        batch.mask = mask
        batch.lengths = [n + 1 for n in batch.lengths]
        return logits

    def split(self, batch: "TorchBatch") -> list:
        """Each member's own cache again, padding dropped (copies: the batch buffers are freed)."""
        if batch.arena is not None:
            return batch.arena.split()
        return [torch_cache.split_row(batch.cache, row, n) for row, n in enumerate(batch.lengths)]

    def row_nbytes(self, batch: "TorchBatch", row: int) -> int:
        """Bytes member `row`'s own state will hold once split out (its length in whole chunks)."""
        if batch.arena is not None:
            pairs = zip(batch.arena.keys, batch.arena.values)
        else:
            pairs = ((layer.buf_k, layer.buf_v) for layer in batch.cache.layers)
        per_token = sum((k[0, :, 0].numel() + v[0, :, 0].numel()) * k.element_size() for k, v in pairs)
        return per_token * torch_cache.rounded(batch.lengths[row])

    def trim(self, state, n: int) -> bool:
        if n <= 0:
            return True
        if any(getattr(layer, "is_sliding", False) for layer in state.layers):
            return False
        state.crop(-n)  # transformers 5: a negative count removes that many tokens
        return True

    def state_nbytes(self, state) -> int:
        return torch_cache.cache_nbytes(state)

    def save_state(self, state, path: Path, metadata: dict[str, str]) -> None:
        from safetensors.torch import save_file

        tensors, lengths = torch_cache.saved_tensors(state)
        meta = dict(metadata, layers=str(len(state.layers)), lengths=json.dumps(lengths))
        save_file(tensors, str(path), metadata=meta)

    def load_state(self, path: Path):
        from safetensors import safe_open

        try:
            with safe_open(str(path), framework="pt", device="cpu") as f:
                metadata = f.metadata() or {}
                layers = int(metadata.get("layers", "0"))
                expected = len(self.new_state().layers)
                if layers != expected:  # before any tensor is read: a foreign file names no layer we have
                    raise StateFileError(f"{path.name} holds {layers} layers; this model has {expected}")
                data = []
                for i in range(layers):
                    if f"{i}.keys" in f.keys():
                        k = f.get_tensor(f"{i}.keys").to(self.device, self._torch_dtype)
                        v = f.get_tensor(f"{i}.values").to(self.device, self._torch_dtype)
                        data.append((k, v))
                    else:
                        data.append((None, None))
        except StateFileError:
            raise
        except Exception as e:
            raise StateFileError(f"{path.name} is not a readable session state: {e}") from e
        lengths = json.loads(metadata["lengths"]) if "lengths" in metadata else None
        return torch_cache.restored(self.model.config, data, lengths), metadata


@dataclass
class TorchBatch:
    """The resident batch cache of the sessions decoding together."""

    cache: object
    mask: Optional[torch.Tensor]
    """(rows, width): 1 where a row holds a real token, 0 on its left padding."""
    lengths: list[int]
    """Real tokens per row; the next token's position id."""
    arena: Optional[torch_graphs.DecodeArena] = None
    """Set when the batch lives in the static decode arena instead of `cache`/`mask`."""
