"""Images on llama.cpp: the model's vision projector (an `mmproj` GGUF) through libmtmd, per session.

Not llama-cpp-python's chat handlers: they clear the whole context and use sequence 0, which would
wipe every other conversation. As llama.cpp's server does per slot: one `mtmd_context` per loaded
model (`mtmd_init_from_file(mmproj, model)`); an image's bytes become a bitmap and `mtmd_tokenize`
cuts it into chunks (the model's text around the image, and the image's preprocessed pixels); the
text goes through the engine's joint rounds like any prompt, and each image chunk is encoded and
decoded for its own sequence alone (`evaluate`), in its own `llama_decode` calls. An M-RoPE
projector's image (Qwen2-VL, Qwen2.5-VL) gets a position per section for each embedding, as
mtmd_helper_decode_image_chunk gives them, and takes fewer positions than tokens (llamacpp_positions.py).

Threads: `pieces` (decoding and preprocessing, no compute graph) runs on the caller's thread, as the
server tokenizes on its HTTP threads while its loop encodes; `evaluate` and `close` run on the engine
thread. A lock keeps `pieces` and `close` apart.
"""

from __future__ import annotations

import ctypes
import logging
import threading
import time
import weakref
from pathlib import Path
from typing import Optional

import llama_cpp as lc
import numpy as np

from ..errors import EngineError, ImageTooLargeError, ImageUnreadableError, ModelLoadError
from ..images import ImageSpan, digest, image_ids
from .llamacpp_positions import MROPE_SECTIONS, mrope_positions

log = logging.getLogger(__name__)

_ERROR_LEVEL = 4
"""ggml's GGML_LOG_LEVEL_ERROR: libmtmd says only what failed."""


def library():
    """llama_cpp.mtmd_cpp, or None where this llama.cpp build has no libmtmd (-DLLAVA_BUILD=OFF)."""
    try:
        from llama_cpp import mtmd_cpp
    except (ImportError, OSError, FileNotFoundError, RuntimeError):
        return None
    _bind(mtmd_cpp._libmtmd)
    return mtmd_cpp


def _bind(lib) -> None:
    """libmtmd functions llama-cpp-python 0.3.16 has no binding for (mtmd.h / mtmd-helper.h)."""
    if getattr(lib, "_confab_bound", False):
        return
    p, i32, pos = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32
    for name, args, res in (
        ("mtmd_input_chunk_copy", [p], p), ("mtmd_input_chunk_free", [p], None),
        ("mtmd_input_chunk_get_n_pos", [p], pos), ("mtmd_decode_use_mrope", [p], ctypes.c_bool),
        ("mtmd_decode_use_non_causal", [p], ctypes.c_bool), ("mtmd_bitmap_get_nx", [p], ctypes.c_uint32),
        ("mtmd_bitmap_get_ny", [p], ctypes.c_uint32), ("mtmd_encode_chunk", [p, p], i32),
        ("mtmd_get_output_embd", [p], ctypes.POINTER(ctypes.c_float)),
        ("mtmd_input_chunk_get_tokens_image", [p], p), ("mtmd_image_tokens_get_nx", [p], ctypes.c_size_t),
        ("mtmd_image_tokens_get_ny", [p], ctypes.c_size_t),
    ):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    lib._confab_bound = True


def find_mmproj(model: Path, asked: Optional[str]) -> tuple[Optional[Path], str]:
    """(the projector file, why): `asked` when given ("" for none), else an `mmproj*.gguf` beside the
    model, as LM Studio and the Hugging Face repos lay them out."""
    if asked == "":
        return None, "no vision projector was asked for: this model reads text only"
    if asked is not None:
        path = Path(asked).expanduser()
        if not path.is_file():
            raise ModelLoadError(f"the vision projector {path.name} is not a file")
        return path, f"images through {path.name}"
    found = sorted(model.parent.glob("mmproj*.gguf"))
    if not found:
        return None, (f"no mmproj*.gguf beside {model.name}: this model reads text only (a vision model "
                      "needs its mmproj file in the same folder)")
    if len(found) > 1:
        log.info("several vision projectors beside %s; using %s", model.name, found[0].name)
    return found[0], f"images through {found[0].name} (found beside the model)"


def open_vision(model, path: Path, asked: Optional[str], threads: int, gpu: bool, n_batch: int,
                n_ubatch: int) -> tuple[Optional["Vision"], str]:
    """(the projector, in words whether and how the model takes images) for the model loaded from
    `path`: the one asked for (EngineConfig.mmproj) or found beside it. One that was found but does
    not load leaves a text model, saying why; one asked for fails the load (ModelLoadError)."""
    mmproj, why = find_mmproj(path, asked)
    if mmproj is None:
        return None, why
    try:
        return Vision.open(model, mmproj, threads, gpu, n_batch, n_ubatch), why
    except ModelLoadError as e:
        if asked:
            raise
        log.warning("%s; the model reads text only", e)
        return None, f"{e}; the model reads text only"


class Vision:
    """One model's vision projector; `pieces` turns image bytes into prompt pieces."""

    def __init__(self, mtmd, ctx, path: Path, n_batch: int, n_ubatch: int) -> None:
        self._mtmd, self._ctx, self.path = mtmd, ctx, path
        self._lock = threading.Lock()
        self.n_batch, self.n_ubatch = n_batch, n_ubatch
        self.n_embd = 0
        """Width of the text model's embeddings, which the projector's output has (set by open)."""
        self.non_causal = bool(mtmd._libmtmd.mtmd_decode_use_non_causal(ctx))
        self.mrope = bool(mtmd._libmtmd.mtmd_decode_use_mrope(ctx))
        """Whether images take M-RoPE positions (Qwen2-VL's family): fewer positions than tokens."""
        self.encode_seconds = 0.0
        """Time spent in the projector's encoder (the bench reads it)."""

    @classmethod
    def open(cls, model, path: Path, threads: int, gpu: bool, n_batch: int, n_ubatch: int) -> "Vision":
        """The projector for `model`; ModelLoadError saying why where it cannot serve images here."""
        mtmd = library()
        if mtmd is None:
            raise ModelLoadError("this llama.cpp build has no libmtmd (built with -DLLAVA_BUILD=OFF): "
                                 "`python3 bootstrap.py setup` builds it")
        params = mtmd.mtmd_context_params_default()
        params.use_gpu, params.n_threads, params.print_timings, params.verbosity = gpu, threads, False, _ERROR_LEVEL
        ctx = mtmd.mtmd_init_from_file(str(path).encode(), model, params)
        if not ctx:
            raise ModelLoadError(f"llama.cpp could not load the vision projector {path.name} for this model")
        if not mtmd.mtmd_support_vision(ctx):
            mtmd.mtmd_free(ctx)
            raise ModelLoadError(f"the vision projector {path.name} cannot be used: it reads audio, not images")
        vision = cls(mtmd, ctx, path, n_batch, n_ubatch)
        vision.n_embd = int(lc.llama_model_n_embd(model))
        return vision

    def close(self) -> None:
        with self._lock:
            if self._ctx is not None:
                self._mtmd.mtmd_free(self._ctx)
                self._ctx = None

    # -- any thread --------------------------------------------------------------------------------
    def pieces(self, data: bytes, name: str) -> list:
        """The prompt pieces of one image, in order: lists of text token ids (the model's own markers
        around it) and an ImageSpan per image chunk. The bytes were checked (engine/image_check.py)."""
        mtmd, lib = self._mtmd, self._mtmd._libmtmd
        with self._lock:
            if self._ctx is None:
                raise EngineError("the engine is closed")
            buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
            bitmap = mtmd.mtmd_helper_bitmap_init_from_buf(self._ctx, buf, len(data))
            if not bitmap:
                raise ImageUnreadableError(f"{name} could not be read: the file is damaged or cut short")
            chunks = mtmd.mtmd_input_chunks_init()
            try:
                width, height = lib.mtmd_bitmap_get_nx(bitmap), lib.mtmd_bitmap_get_ny(bitmap)
                text = mtmd.mtmd_input_text(mtmd.mtmd_default_marker(), False, True)
                rc = mtmd.mtmd_tokenize(self._ctx, chunks, ctypes.byref(text), (ctypes.c_void_p * 1)(bitmap), 1)
                if rc != 0:
                    raise ImageUnreadableError(f"{name} could not be prepared for the model (libmtmd said {rc})")
                return self._read_chunks(chunks, digest(data), width, height, name)
            finally:
                mtmd.mtmd_input_chunks_free(chunks)
                mtmd.mtmd_bitmap_free(bitmap)

    def _read_chunks(self, chunks, image_digest: bytes, width: int, height: int, name: str) -> list:
        mtmd, lib = self._mtmd, self._mtmd._libmtmd
        out: list = []
        for i in range(mtmd.mtmd_input_chunks_size(chunks)):
            chunk = mtmd.mtmd_input_chunks_get(chunks, i)
            if mtmd.mtmd_input_chunk_get_type(chunk) == mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
                n = ctypes.c_size_t()
                ids = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
                out.append([ids[j] for j in range(n.value)])
                continue
            n = mtmd.mtmd_input_chunk_get_n_tokens(chunk)
            if self.non_causal and n > self.n_ubatch:
                raise ImageTooLargeError(f"{name} takes {n} positions, which this model reads in one step; "
                                         f"this engine's step holds {self.n_ubatch}")
            part = digest(image_digest + i.to_bytes(4, "big"))  # each chunk of one image its own ids
            out.append(ImageSpan(image_digest, image_ids(part, n), _Owned(lib, lib.mtmd_input_chunk_copy(chunk)),
                                 width, height))
        return out

    # -- engine thread -----------------------------------------------------------------------------
    def evaluate(self, lctx, span: ImageSpan, seq_id: int, n_past: int) -> int:
        """Encode the image chunk and decode its embeddings into sequence `seq_id` from position
        `n_past` on, alone (non-causal models switch attention for it); the positions it took
        (`mtmd_input_chunk_get_n_pos`). RuntimeError when llama.cpp fails."""
        lib = self._mtmd._libmtmd
        positions = self._mrope_positions(span, n_past) if self.mrope else None
        began = time.perf_counter()
        rc = lib.mtmd_encode_chunk(self._ctx, span.chunk.ptr)
        if rc != 0:
            raise RuntimeError(f"the vision projector could not encode the image ({rc})")
        embd = lib.mtmd_get_output_embd(self._ctx)
        self.encode_seconds += time.perf_counter() - began
        self._decode(lctx, embd, len(span.ids), seq_id, n_past, positions)
        return int(lib.mtmd_input_chunk_get_n_pos(span.chunk.ptr))

    def _mrope_positions(self, span: ImageSpan, n_past: int) -> np.ndarray:
        lib = self._mtmd._libmtmd
        image = lib.mtmd_input_chunk_get_tokens_image(span.chunk.ptr)
        nx, ny = int(lib.mtmd_image_tokens_get_nx(image)), int(lib.mtmd_image_tokens_get_ny(image))
        if nx * ny != len(span.ids):
            raise RuntimeError(f"an M-RoPE image of {nx}×{ny} embeddings holds {len(span.ids)} tokens")
        return mrope_positions(n_past, nx, ny)

    def _decode(self, lctx, embd, n: int, seq_id: int, n_past: int, mrope: Optional[np.ndarray]) -> None:
        """The image's `n` embeddings into `seq_id` at positions n_past.., or with `mrope` at those
        (4, n) positions. By hand rather than mtmd_helper_decode_image_chunk, which prints to stdout
        (the CLI's JSON goes there) and counts its batches with a power-of-two mask.

        An M-RoPE image's embeddings share one temporal position, so in one step they all see each
        other and across steps only the earlier: the steps are part of the result. Steps of n_ubatch
        make them depend on that alone (as llama.cpp's server, whose n_batch is a multiple of it)."""
        width = self.n_embd
        step = self.n_ubatch if self.non_causal or mrope is not None else self.n_batch
        batch = lc.llama_batch_init(min(n, step), width, 1)
        own_pos = ctypes.cast(batch.pos, ctypes.c_void_p).value  # llama_batch_free frees it: put back before
        # (an address, not the field: a ctypes pointer read from a structure is a view of that field)
        sections = (ctypes.c_int32 * (MROPE_SECTIONS * min(n, step)))() if mrope is not None else None
        if sections is not None:
            batch.pos = ctypes.cast(sections, ctypes.POINTER(lc.llama_pos))
        try:
            if self.non_causal:  # the whole image in one step, attending both ways
                lc.llama_set_causal_attn(lctx, False)
            for start in range(0, n, step):
                k = min(step, n - start)
                ctypes.memmove(batch.embd, ctypes.byref(embd.contents, 4 * width * start), 4 * width * k)
                if sections is not None:  # section by section: llama.cpp reads pos[s * n_tokens + j]
                    sections[:MROPE_SECTIONS * k] = mrope[:, start:start + k].ravel().tolist()
                for j in range(k):
                    if sections is None:
                        batch.pos[j] = n_past + start + j
                    batch.n_seq_id[j] = 1
                    batch.seq_id[j][0] = seq_id
                    batch.logits[j] = 0
                batch.n_tokens = k
                rc = lc.llama_decode(lctx, batch)
                if rc != 0:
                    raise RuntimeError(f"llama_decode failed on the image's embeddings ({rc})")
        finally:
            if self.non_causal:
                lc.llama_set_causal_attn(lctx, True)
            batch.pos = ctypes.cast(own_pos, ctypes.POINTER(lc.llama_pos))
            lc.llama_batch_free(batch)


class _Owned:
    """An mtmd chunk this process owns, freed when its span is dropped (on any thread: a chunk is plain
    memory, not tied to the context)."""

    def __init__(self, lib, ptr) -> None:
        if not ptr:
            raise MemoryError("libmtmd could not copy an image chunk")
        self.ptr = ptr
        self._free = weakref.finalize(self, lib.mtmd_input_chunk_free, ptr)
