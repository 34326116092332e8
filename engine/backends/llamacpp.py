"""llama.cpp backend: a GGUF file served as it is stored, every session a sequence in one context.

Built on llama-cpp-python's low-level API (the `llama_*` ctypes functions), not its `Llama` class,
which serves one sequence at a time. One `llama_model` and one `llama_context` per engine, created,
used and freed only on the engine thread (a llama.cpp context is not thread-safe).

- A session's state is a sequence id in the context; its K/V are that sequence's cells in one unified
  pool (`kv_unified`), so memory follows the tokens conversations hold, not sessions × max_context.
  The pool's size in tokens is fixed at load (llama.cpp allocates it then); the worker admits a turn
  only when every session's held and reserved tokens still fit (engine/together.py), so no session
  ever loses cells to another.
- `step` decodes any mix of sequences and token counts in one `llama_batch` / `llama_decode`: every
  decoding session's next token together with a chunk of a pending prompt, as llama.cpp's server does.
- Sampling stays in the engine's numpy sampler: `step` returns float32 logits, one row per sequence.
- Save/restore: the sequence's bytes in the engine's safetensors state file (llamacpp_state.py).
- On a GPU build, as many layers as fit go on the GPU, the pool sized beside them (llamacpp_sizes.py,
  llamacpp_offload.py).
- Images: the model's vision projector through libmtmd (llamacpp_vision.py); an image is decoded into
  its session's sequence alone (`step_image`), then the session joins the joint rounds again. An
  M-RoPE image (Qwen2-VL's family) takes fewer positions than tokens: a sequence keeps both counts
  (llamacpp_positions.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import time
from pathlib import Path
from typing import Callable, ContextManager, Optional

import numpy as np

import llama_cpp as lc

from ..correctness import kernels as kernel_check
from ..correctness.cpu_features import cpu_flags
from ..errors import CapacityError, ModelLoadError
from ..kv_cache_type import kv_element_bytes
from ..models.gguf_header import read_header
from . import llamacpp_model as model_meta
from . import llamacpp_offload as offload_plan
from . import llamacpp_blocks as blocks
from .llamacpp_batch import fill_batch
from .llamacpp_cells import CellOrder
from .llamacpp_devices import gpu_devices
from .llamacpp_library import DECODE_ERRORS, Pool, Seq, errors_said, init_library
from .llamacpp_positions import Place, before
from .llamacpp_sizes import offload_for, pool_size
from .llamacpp_state import load_sequence, save_sequence, sequence_writer
from .llamacpp_threads import attach_sleeping_pool, free_pool
from .llamacpp_vision import Vision, open_vision
from .llamacpp_context import context_params
from .thread_policy import ThreadPolicy, starting_threads
from .torch_threads import thread_count

log = logging.getLogger(__name__)


class LlamaCppBackend:
    name = "llamacpp"

    def __init__(self, device: str, dtype: str, config) -> None:
        if device not in ("auto", "cpu", "cuda", "metal"):
            raise ModelLoadError(f"the llamacpp backend runs on auto, cpu, cuda or metal, not {device!r}")
        init_library()
        self.device_asked = device
        self.offload = device != "cpu" and bool(lc.llama_supports_gpu_offload())
        if device in ("cuda", "metal") and not self.offload:
            raise ModelLoadError(f"device {device!r} was asked for but this llama.cpp build has no GPU support")
        self.device = "cpu"
        """"cuda", "vulkan", "metal" once layers are on that GPU (set by load), else "cpu"."""
        self.placement: Optional[offload_plan.Placement] = None
        """Where the model runs: the card, the layers on it and why (set by load)."""
        self._cpu_why = ""
        self.dtype = "float16"
        # A dtype set for torch/MLX (e.g. in the app's settings) does not apply: said, not refused.
        self.dtype_reason = "float16 K/V cache; weights in the formats the GGUF stores" + (
            f" (dtype {dtype} applies to torch and MLX only)" if dtype != "auto" else "")
        self.quantized = ""
        self.config = config
        self.threads = thread_count(asked=config.threads)
        self.thread_policy = ThreadPolicy(self.threads, start=starting_threads(self.threads))
        """Lowers (and probes back up) the decode threads when a neighbour takes cores (engine/backends/thread_policy.py)."""
        self.weights_nbytes = 0
        self.pool: Optional[Pool] = None
        self.model = None
        self.ctx = None
        self._mem = None
        self._threadpool = None
        self._batch = None
        self._batch_size = 0
        self._n_vocab = 0
        self._swa = 0
        self.can_draft = False
        """Whether drafted cells can be removed again (engine/drafts/speculative.py): not where a recurrent
        state or a sliding window forgets what a shorter sequence would need."""
        self._seqs: dict[int, Seq] = {}
        self._free: list[int] = []
        self._path: Optional[Path] = None
        self.kernel_path: Optional[kernel_check.KernelPath] = None  # kernel_check.py's policy, set by load
        self.kernel_check: Optional[kernel_check.KernelCheck] = None  # what the probe found (warm_up)
        self.n_ubatch = 0
        self.kv_cache = ""
        """K/V cache element types, "keys/values" (state files record it; set at load)."""
        self.cells: Optional[CellOrder] = None
        """Keeps each sequence's cells in position order (llamacpp_cells.py), so neighbours never change its logits."""
        self.vision: Optional[Vision] = None
        """The vision projector where the model takes images (set by load), else None."""
        self.images_reason = "this model reads text only"
        """Whether and how the model takes images, or why not, in one line (set by load)."""

    # -- load --------------------------------------------------------------------------------------
    def load(self, path: Path, config: dict, plain_why: str = "", cpu_why: str = "") -> None:
        """Load with kernel_check's path for this build and CPU (`plain_why`: the plain path, for that
        reason), with as many layers on the GPU as fit (llamacpp_offload.py; `cpu_why`: none, and no
        step on the GPU at all, for that reason); where llama.cpp cannot allocate them after all,
        with fewer, down to none: a model never fails to load for want of VRAM."""
        self._path = Path(path)
        read_header(self._path)  # a file that is not GGUF, or cut short, is refused in words first
        self.kernel_path = kernel_check.plain(plain_why) if plain_why else kernel_check.choose_path(
            lc.llama_print_system_info().decode(errors="replace"), cpu_flags(), os.environ)
        self._cpu_why = cpu_why
        devices = gpu_devices() if self.offload and not cpu_why else []
        offload = offload_for(self, devices)
        why = offload.why
        while (failure := self._open(offload)) is not None:
            if offload.layers == 0:
                raise ModelLoadError(failure)
            fewer = offload_plan.fewer_layers(offload.layers)
            log.warning("%s with %d layers on the GPU; trying %d", failure, offload.layers, fewer)
            why = f"{fewer}/{offload.total} layers: llama.cpp could not allocate {offload.layers} on the GPU"
            offload = dataclasses.replace(offload, layers=fewer, pool_tokens=offload.pool_tokens if fewer else None)
        card = devices[0] if devices else None
        self.placement = offload_plan.Placement(card.backend if card else "", card.description if card else "",
                                                offload.layers, offload.total, why)
        self.device = self.placement.device
        self.vision, self.images_reason = open_vision(self.model, self._path, getattr(self.config, "mmproj", None),
                                                      self.threads, offload.layers > 0, self._batch_size, self.n_ubatch)

    def _open(self, offload: "offload_plan.Offload") -> Optional[str]:
        """Load the model and its context with `offload.layers` on the GPU; None when done, else
        what failed (everything made on the way freed again)."""
        path = self._path
        params = lc.llama_model_default_params()
        params.n_gpu_layers = offload.layers
        params.use_extra_bufts = self.kernel_path.extra_bufts
        with errors_said() as said:
            model = lc.llama_model_load_from_file(str(path).encode(), params)
        if not model:
            why = "; ".join(said[-3:]) or "it gave no reason"
            return f"llama.cpp could not load {path.name}: {why}"
        self.model = model
        self.weights_nbytes = int(lc.llama_model_size(model))
        self._n_vocab = int(lc.llama_vocab_n_tokens(lc.llama_model_get_vocab(model)))
        self._swa = int(lc.llama_model_n_swa(model))
        self.can_draft = not self._swa and not lc.llama_model_is_recurrent(model)
        self.quantized = f"{model_meta.describe(model)} (GGUF, as stored)"
        k_type, v_type = self.config.cache_type_k, self.config.cache_type_v
        self.kv_cache = f"{k_type}/{v_type}"  # in every state file, checked before one is read
        per_token = model_meta.bytes_per_token(model, kv_element_bytes(k_type), kv_element_bytes(v_type))
        pool_tokens, n_seq = pool_size(self, per_token, offload)
        self.park_break_even = model_meta.park_break_even(model, per_token)
        """Rows still to decode below which idle sessions stay resident for span (engine/kv_room.py)."""
        self._batch_size = self.config.prefill_chunk + n_seq
        self.n_ubatch = min(self._batch_size, 512, self.kernel_path.max_ubatch or 512)
        cp = context_params(pool_tokens, self._batch_size, self.n_ubatch, n_seq, self.thread_policy.threads,
                            (k_type, v_type), offload.layers > 0)
        ctx = lc.llama_init_from_model(model, cp)
        if not ctx:
            lc.llama_model_free(model)
            self.model = None
            return f"llama.cpp could not create a context of {pool_tokens} tokens for {path.name}"
        self.ctx = ctx
        self._threadpool = attach_sleeping_pool(ctx, self.threads)
        self._mem = lc.llama_get_memory(ctx)
        self._batch = lc.llama_batch_init(self._batch_size, 0, 1)
        self.pool = Pool(int(lc.llama_n_ctx(ctx)), per_token, n_seq, self.config.max_context)
        self._free = list(range(n_seq))
        self.scratch_id = n_seq + 1
        self.cells = CellOrder(ctx, self._mem, self.pool.tokens, retired_id=n_seq,
                               ordered=model_meta.attention_only(self.model))
        return None

    def warm_up(self, max_context: int, max_batch: int, report) -> None:
        """The kernel check at load (kernel_check.check_at_load); its forwards page the weights in."""
        path = self._path
        self.kernel_check = kernel_check.check_at_load(
            self, kernel_check.probe_tokens(self.model), lambda why: (self.close(), self.load(path, {}, why)), report,
            reload_cpu=lambda why: (self.close(), self.load(path, {}, cpu_why=why)))

    def available_memory(self) -> int:
        import psutil

        return psutil.virtual_memory().available

    def compute(self) -> ContextManager:
        return contextlib.nullcontext()

    def close(self) -> None:
        """Free the batch, the context and the model, on the engine thread."""
        if self._batch is not None:
            lc.llama_batch_free(self._batch)
            self._batch = None
        if self.ctx is not None:
            lc.llama_free(self.ctx)
            self.ctx, self._mem = None, None
        free_pool(self._threadpool)
        self._threadpool = None
        if self.vision is not None:
            self.vision.close()
            self.vision = None
        if self.model is not None:
            lc.llama_model_free(self.model)
            self.model = None
        self._seqs.clear()

    # -- sessions ----------------------------------------------------------------------------------
    def new_state(self) -> Seq:
        if not self._free:
            raise CapacityError(f"all {self.pool.max_sessions} sequences of the llama.cpp context are in use")
        seq = Seq(self._free.pop(0))
        self._seqs[seq.id] = seq
        return seq

    def free_state(self, seq: Seq) -> None:
        """Remove the sequence's cells and give its id back (what dropping a torch state does)."""
        if self._seqs.get(seq.id) is not seq:
            return
        self.cells.give_up(seq.id, 0, 0, seq.n_past)
        del self._seqs[seq.id]
        self._free.append(seq.id)
        self._free.sort()
        seq.keep(0)

    def held_tokens(self, seq: Optional[Seq] = None) -> int:
        """Tokens the pool holds: for `seq` (its cells, shared ones too), or for every sequence
        (a prefix several sequences share counted once)."""
        if seq is not None:
            return seq.n_past
        return sum(s.n_past - self.cells.shared.shared(s.id) for s in self._seqs.values())

    def share_prefix(self, donor: Seq, seq: Seq, n: int) -> bool:
        """Give the empty `seq` the donor's first `n` tokens (llamacpp_shared.py); False where the
        pool's memory cannot share (recurrent or sliding-window state), `seq` holds anything or `n`
        ends inside an image."""
        end = donor.boundary(n)
        if seq.n_past or not 0 < n <= donor.n_past or self._swa or end is None or not self.cells.share(
                donor.id, seq.id, n, end):
            return False
        seq.n_past, seq.places = n, before(donor.places, n)
        return True

    def compact(self) -> bool:
        """Clear the retired cells out (each sequence stays in position order), so a restored
        state, which needs its cells in one run, fits. False when there was nothing to clear."""
        return self.cells.relayout(self._live())

    def _live(self) -> dict[int, int]:
        return {seq.id: seq.n_past for seq in self._seqs.values()}

    def state_nbytes(self, seq: Seq) -> int:
        return seq.n_past * self.pool.bytes_per_token

    # -- compute -----------------------------------------------------------------------------------
    def step(self, items: list[tuple[Seq, list[int]]], rows: Optional[list[int]] = None) -> list[np.ndarray]:
        """Append each item's tokens to its sequence in one llama_decode; float32 logits of each
        item's last position, or with `rows`, of each item's last rows[i] positions (a (rows[i],
        vocab) array: drafted tokens are checked from them). On error, every sequence is left as it
        was before the call."""
        b = self._batch
        last = fill_batch(b, self._batch_size, items, rows)
        n = b.n_tokens
        self.cells.make_room(n, self._live)
        if rows is None and n > len(items):  # a prompt read: never on a count still being judged
            self._set_threads(self.thread_policy.reading(), "before a prompt read")
        try:
            began, cpu = time.perf_counter(), time.process_time()
            rc = lc.llama_decode(self.ctx, b)
            if rc == 0 and n == len(items):  # decode only: the calls the thread policy compares
                self._tune(time.perf_counter() - began, n, time.process_time() - cpu,
                           sum(seq.n_past for seq, _ in items) + n)
            if rc != 0:
                raise RuntimeError(f"llama_decode failed: {DECODE_ERRORS.get(rc, 'error')} ({rc})")
            out = [np.stack([self._logits(row) for row in span]) if rows is not None else self._logits(span[0])
                   for span in last]
        except BaseException:
            for seq, _ in items:  # llama.cpp rolls a failed decode back; make sure, and undo a good one
                self.cells.undo_step(seq.id, seq.position())
            raise
        last_seq, last_tokens = items[-1]
        at = last_seq.position()
        self.cells.placed(n, (last_seq.id, at, at + len(last_tokens)))
        for seq, tokens in items:
            seq.n_past += len(tokens)
        return out

    def step_image(self, seq: Seq, span) -> None:
        """Decode one image chunk (an engine.images.ImageSpan) into `seq`, alone in its calls; on
        error, `seq` is left as it was. No logits: an image never ends a prompt. An M-RoPE image
        takes fewer positions than tokens: `seq` keeps its place (llamacpp_positions.py)."""
        n, at = len(span.ids), seq.position()
        self.cells.make_room(n, self._live)
        try:
            taken = self.vision.evaluate(self.ctx, span, seq.id, at)
        except BaseException:
            self.cells.undo_step(seq.id, at)
            raise
        if self.vision.mrope:
            seq.places.append(Place(seq.n_past, n, taken))
        seq.n_past += n
        self.cells.placed(n, (seq.id, at, seq.cell_end()))

    def _logits(self, row: int) -> np.ndarray:
        return np.ctypeslib.as_array(lc.llama_get_logits_ith(self.ctx, row), shape=(self._n_vocab,)).copy()

    def _tune(self, seconds: float, tokens: int, cpu_seconds: float, context: int) -> None:
        threads = self.thread_policy.record(seconds, tokens, cpu_seconds, context)
        self._set_threads(threads, f"a decode call took {seconds * 1e3:.1f} ms")

    def _set_threads(self, threads: Optional[int], why: str) -> None:
        if threads is not None:
            log.info("llama.cpp decode threads: %d (%s)", threads, why)
            lc.llama_set_n_threads(self.ctx, threads, threads)

    def forward(self, seq: Seq, token_ids: list[int]) -> np.ndarray:
        """Append `token_ids` (split into batch-sized pieces); logits of the last position."""
        logits = None
        for start in range(0, len(token_ids), self._batch_size):
            logits = self.step([(seq, list(token_ids[start:start + self._batch_size]))])[0]
        return logits

    # Sessions are sequences of one context: a batch is just the list of them, nothing to merge.
    def batchable(self, seq: Seq) -> bool:
        return True

    def merge(self, states: list[Seq]) -> list[Seq]:
        return list(states)

    def forward_batch(self, batch: list[Seq], token_ids: list[int]) -> np.ndarray:
        return np.stack(self.step([(seq, [t]) for seq, t in zip(batch, token_ids)]))

    def split(self, batch: list[Seq]) -> list[Seq]:
        return list(batch)

    def row_nbytes(self, batch: list[Seq], row: int) -> int:
        return self.state_nbytes(batch[row])

    def trim(self, seq: Seq, n: int) -> bool:
        """Drop the last `n` positions where the memory allows it: not a recurrent state, and not a
        sliding-window cache that has already dropped what the shorter prefix would attend to."""
        if n <= 0:
            return True
        keep = seq.n_past - n
        p0 = seq.boundary(keep)
        if p0 is None:  # inside an image, which is one unit (the engine never asks)
            return False
        if self._swa and lc.llama_memory_seq_pos_min(self._mem, seq.id) > max(0, p0 - self._swa):
            return False
        if not self.cells.give_up(seq.id, keep, p0, n):
            return False
        seq.keep(keep)
        return True

    # -- save / restore ----------------------------------------------------------------------------
    def save_state(self, seq: Seq, path: Path, metadata: dict[str, str]) -> None:
        save_sequence(self, seq, path, metadata)

    def state_writer(self, seq: Seq, metadata: dict[str, str]) -> Callable[[Path], None]:
        """`seq`'s cells read now; the call returned writes them to a file on another thread (kv_room.py)."""
        return sequence_writer(self, seq, metadata)

    def load_state(self, path: Path) -> tuple[Seq, dict[str, str]]:
        return load_sequence(self, path)

    # Blocks of positions for the prompt cache on disk (engine/prefix_cache/, llamacpp_blocks.py).
    def kv_layout(self) -> Optional[dict[str, str]]:
        return blocks.kv_layout(self)

    def read_span(self, seq: Seq, start: int, end: int):
        return blocks.read_span(self, seq, start, end)

    def write_span(self, seq: Seq, data: bytearray, start: int, end: int) -> bool:
        return blocks.write_span(self, seq, data, start, end)
