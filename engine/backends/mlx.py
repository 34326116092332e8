"""MLX backend: mlx-lm models with one prompt-cache list per session, on Metal or the CPU.

Every array op runs on this engine's own stream, made on the engine thread at load: an MLX stream
may only be used by the thread that created it, so nothing here is module-level.

Batched decode uses mlx-lm's own batch caches: the decoding sessions' KVCaches are merged into one
left-padded BatchKVCache per layer (kept resident until the members change), stepped one token per
row, and extracted back into plain KVCaches; every cache is evaluated here, on the engine thread.
These are the caches mlx-lm's BatchGenerator steps; the generator itself is not used because it runs
its own loop (prefill batching, sampling, stop tokens), while here one scheduler serves both backends
with the same per-session samplers, seeds, cancel, chunked prefill and per-session fault handling.
"""

from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path
from typing import ContextManager

import mlx.core as mx
import numpy as np
from mlx.utils import tree_flatten, tree_map
from mlx_lm.models import cache as mlc

from ..errors import ModelLoadError, StateFileError
from ..models.missing_weights import check_complete

_DTYPES = {"float32": mx.float32, "bfloat16": mx.bfloat16, "float16": mx.float16}


class MlxBackend:
    name = "mlx"

    def __init__(self, device: str, dtype: str) -> None:
        if device == "auto":
            device = "metal" if mx.metal.is_available() else "cpu"
        if device not in ("metal", "cpu"):
            raise ModelLoadError(f"the mlx backend runs on metal or cpu, not {device!r}")
        if device == "metal" and not mx.metal.is_available():
            raise ModelLoadError("device 'metal' was asked for but Metal is not available")
        self.device = device
        # float16 is the fast path on Apple GPUs; the CPU kernels are fastest (and exact) in float32.
        self.dtype = ("float16" if device == "metal" else "float32") if dtype == "auto" else dtype
        self.dtype_reason = f"{self.dtype}: " + ("as configured" if dtype != "auto" else f"MLX's default on {device}")
        self._stream: mx.Stream | None = None
        self.model = None
        self.weights_nbytes = 0

    def load(self, folder: Path, config: dict) -> None:
        from mlx_lm.utils import load_model

        # This engine's own stream, made on its own thread; every op below and every forward runs in it.
        self._stream = mx.new_stream(mx.gpu if self.device == "metal" else mx.cpu)
        try:
            with mx.stream(self._stream):
                model, loaded_config = load_model(Path(folder), lazy=False, model_config=_rope_compat(config),
                                                  get_model_classes=_checked_classes(Path(folder).name))
                _cast(model, _DTYPES[self.dtype], "quantization" in loaded_config or "quantization" in config)
                mx.eval(model.parameters())
        except ModelLoadError:
            raise
        except Exception as e:
            raise ModelLoadError(f"could not load {Path(folder).name} with mlx-lm: {e}") from e
        self.model = model
        self.weights_nbytes = sum(v.nbytes for _, v in tree_flatten(model.parameters()))

    def available_memory(self) -> int:
        """Bytes still free now (after the weights are loaded)."""
        if self.device == "metal":
            info = mx.device_info()
            return max(0, int(info["max_recommended_working_set_size"]) - mx.get_active_memory())
        import psutil

        return psutil.virtual_memory().available

    def compute(self) -> ContextManager:
        return mx.stream(self._stream)

    def close(self) -> None:
        """Free the weights and this thread's MLX streams and random key.

        mlx keeps a random key per thread whose C++ destructor takes the GIL; left to the engine
        thread's exit it can run while the interpreter finalizes (a program that closes its engine
        and exits at once) and aborts the process ("terminate called without an active exception").
        `clear_streams` drops them now, on this thread, after the stream has finished its work."""
        if self._stream is not None:
            mx.synchronize(self._stream)
        self.model, self._stream = None, None
        mx.clear_streams()

    def new_state(self) -> list:
        # mlx-lm's caches allocate on their first update, so an unused session holds no arrays.
        with mx.stream(self._stream):
            return mlc.make_prompt_cache(self.model)

    def forward(self, state: list, token_ids: list[int]) -> np.ndarray:
        logits = self.model(mx.array([token_ids]), cache=state)
        last = logits[0, -1].astype(mx.float32)
        # Evaluate the cache too, so no lazy graph outlives the step (or the session's next owner).
        mx.eval(last, [c.state for c in state])
        return np.array(last)

    # -- batched decode ----------------------------------------------------------------------------
    def batchable(self, state: list) -> bool:
        """Only plain KVCaches merge; rotating (sliding), recurrent and quantized ones step alone."""
        return bool(state) and all(type(c) is mlc.KVCache and c.keys is not None for c in state)

    def merge(self, states: list[list]) -> list:
        batch = [mlc.BatchKVCache.merge([s[i] for s in states]) for i in range(len(states[0]))]
        mx.eval([c.state for c in batch])
        return batch

    def forward_batch(self, batch: list, token_ids: list[int]) -> np.ndarray:
        """One token per row; float32 logits per row. On error, the caches are trimmed back."""
        width = [c.size() for c in batch]
        try:
            logits = self.model(mx.array(token_ids)[:, None], cache=batch)
            last = logits[:, -1].astype(mx.float32)
            mx.eval(last, [c.state for c in batch])
            return np.array(last)  # inside the try: a fault here comes after every layer wrote
        except BaseException:
            for c, n in zip(batch, width):
                if c.size() > n:
                    c.trim(c.size() - n)
            raise

    def split(self, batch: list) -> list[list]:
        rows = batch[0].offset.shape[0]
        states = [[c.extract(row) for c in batch] for row in range(rows)]
        mx.eval([[c.state for c in s] for s in states])
        return states

    def row_nbytes(self, batch: list, row: int) -> int:
        """Bytes member `row`'s own state will hold once extracted (its unpadded part)."""
        lengths = np.array(batch[0].offset)
        per_token = sum(c.nbytes // (c.keys.shape[2] * len(lengths)) for c in batch)
        return per_token * int(lengths[row])

    def trim(self, state: list, n: int) -> bool:
        if n <= 0:
            return True
        if not state or not mlc.can_trim_prompt_cache(state):
            return False
        with mx.stream(self._stream):
            return mlc.trim_prompt_cache(state, n) == n

    def state_nbytes(self, state: list) -> int:
        return sum(c.nbytes for c in state)

    def save_state(self, state: list, path: Path, metadata: dict[str, str]) -> None:
        path = Path(path)
        if any("." in key for key in metadata):  # mlx-lm would read "a.b" back as {"a": {"b": ...}}
            raise ValueError(f"state metadata keys may not contain '.': {sorted(metadata)}")
        # mx.save_safetensors appends ".safetensors" to other names; write there, then move to `path`.
        target = path.with_name(path.name + ".safetensors")
        try:
            with mx.stream(self._stream):
                filled = [_filled(c) for c in state]
                mx.eval([c.state for c in filled])
                mlc.save_prompt_cache(str(target), filled, dict(metadata))
            os.replace(target, path)
        finally:
            target.unlink(missing_ok=True)

    def load_state(self, path: Path) -> tuple[list, dict[str, str]]:
        path = Path(path)
        link = path
        try:
            # mx.load picks the format from the name's suffix, and ours may be anything (".state"):
            # read it through a ".safetensors" link, evaluating everything before the link goes.
            with tempfile.TemporaryDirectory(prefix="confab-state-") as tmp, mx.stream(self._stream):
                link = Path(tmp) / path.with_suffix(".safetensors").name
                os.symlink(path.resolve(), link)
                state, metadata = mlc.load_prompt_cache(str(link), return_metadata=True)
                for c in state:
                    _cast_kv(c, _DTYPES[self.dtype])
                mx.eval([c.state for c in state])
        except Exception as e:
            message = str(e).replace(str(link), str(path))
            raise StateFileError(f"{path.name} is not a readable session state: {message}") from e
        expected = len(self.new_state())
        if len(state) != expected:
            raise StateFileError(f"{path.name} holds {len(state)} layers; this model has {expected}")
        return state, dict(metadata)


def _is_float(a: object) -> bool:
    return isinstance(a, mx.array) and mx.issubdtype(a.dtype, mx.floating)


def _checked_classes(folder_name: str):
    """mlx-lm's model classes for a config, with a `load_weights` that first names the tensors the
    files lack (mlx-lm refuses them too, but names only the first kind of mismatch it finds: a file
    holding `foo.weight` alone read "Received 1 parameters not in model: foo.weight"). The weights
    are compared by name as mlx-lm hands them over (sanitized): nothing is read twice."""
    from mlx_lm.utils import _get_classes

    def classes(config: dict):
        model_class, args_class = _get_classes(config=config)

        class Checked(model_class):
            def load_weights(self, weights, strict: bool = True):
                given = {name for name, _ in weights}
                expected = set(tree_flatten(self.parameters(), destination={}))
                check_complete(folder_name, expected - given, given - expected)
                return super().load_weights(weights, strict=strict)

        Checked.__name__ = Checked.__qualname__ = model_class.__name__
        return Checked, args_class

    return classes


def _rope_compat(config: dict) -> dict:
    """Legacy rope keys for a transformers-5 config, which mlx-lm 0.32's older model files need.

    transformers 5 writes {"rope_parameters": {"rope_theta": ..., "rope_type": ...}} instead of
    top-level "rope_theta" / "rope_scaling"; e.g. mlx-lm's llama then silently uses theta 10000.
    """
    rope = config.get("rope_parameters")
    if not isinstance(rope, dict) or "rope_theta" not in rope or "rope_theta" in config:
        return {}
    extra = {"rope_theta": rope["rope_theta"]}
    if rope.get("rope_type", "default") != "default" and config.get("rope_scaling") is None:
        extra["rope_scaling"] = dict(rope)
    return extra


def _cast(model, dtype: mx.Dtype, quantized: bool) -> None:
    """Cast float parameters to `dtype`; in a quantized model leave the quantized layers' scales alone."""
    if not quantized:
        model.set_dtype(dtype)
        return
    packed = {name for name, m in model.named_modules() if "scales" in m}
    cast = [
        (k, v.astype(dtype))
        for k, v in tree_flatten(model.parameters())
        if _is_float(v) and v.dtype != dtype and k.rpartition(".")[0] not in packed
    ]
    if cast:
        model.load_weights(cast, strict=False)


def _filled(c):
    """A shallow copy of cache `c` holding only its filled positions.

    mlx-lm 0.32's KVCache.state returns the whole step-padded buffer (256-token steps, plus stale
    entries after a trim); saving only [:offset] keeps files small and restores the same offset.
    """
    if isinstance(c, mlc.CacheList):
        out = copy.copy(c)
        out.caches = tuple(_filled(x) for x in c.caches)
        return out
    if isinstance(c, mlc.RotatingKVCache):
        # Once full it is a ring buffer with no padding; before that, positions [0, offset) in order.
        n = c.offset if c.offset < c.max_size else None
    elif isinstance(c, mlc.ChunkedKVCache):
        n = c.offset - c.start_position
    elif isinstance(c, (mlc.KVCache, mlc.QuantizedKVCache, mlc.ConcatenateKVCache)):
        n = c.offset
    else:  # recurrent / conv states: fixed size, nothing to slice
        return c
    if c.keys is None or n is None:
        return c
    out = copy.copy(c)
    out.keys, out.values = tree_map(lambda x: x[..., :n, :], (c.keys, c.values))
    return out


def _cast_kv(c, dtype: mx.Dtype) -> None:
    """Cast a restored cache's K/V buffers to `dtype`, in place.

    Recurrent states are left as saved: some models keep them in float32 on purpose (mlx-lm's
    gated-delta kernels only take a float32 state).
    """
    if isinstance(c, mlc.CacheList):
        for x in c.caches:
            _cast_kv(x, dtype)
    elif getattr(c, "keys", None) is not None:
        c.keys, c.values = tree_map(lambda a: a.astype(dtype) if _is_float(a) else a, (c.keys, c.values))
