"""Measure the bytes a backend really holds, independently of the engine's own bookkeeping."""

from __future__ import annotations

import gc
import warnings


def allocated_bytes(backend: str) -> int:
    """torch: every live tensor's storage in the process (deduplicated); mlx: MLX's active memory."""
    gc.collect()
    if backend == "mlx":
        import mlx.core as mx

        return mx.get_active_memory()
    import torch

    seen, total = set(), 0
    with warnings.catch_warnings():  # isinstance() on some torch module proxies warns
        warnings.simplefilter("ignore")
        objects = gc.get_objects()
        tensors = [o for o in objects if _is_tensor(o, torch)]
    for obj in tensors:
        try:
            if obj.device.type == "cpu":
                storage = obj.untyped_storage()
                if storage.data_ptr() not in seen:
                    seen.add(storage.data_ptr())
                    total += storage.nbytes()
        except Exception:  # objects that refuse introspection are not tensors we care about
            continue
    return total


def _is_tensor(obj, torch) -> bool:
    try:
        return isinstance(obj, torch.Tensor)
    except Exception:
        return False
