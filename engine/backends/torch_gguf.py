"""Build a transformers model straight from a .gguf, keeping its 4-bit tensors 4-bit.

The model is built from its config on the meta device (no memory, no random init); then each GGUF
tensor is put in place: Q4_0/Q4_1/Q4_K linear weights as `Int4Linear` codes, every other tensor
dequantized into the model's dtype. So the 4-bit data never passes through a float16 copy. Before
that, one real layer is checked against its dense reference (`torch_int4.probe`); when the kernel is
missing, wrong or slow the whole model loads dense from the same file, and the reason is logged.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from torch import nn

from ..errors import ModelLoadError
from ..models.gguf_convert import SUPPORTED_ARCHITECTURES, hf_name, unpermute
from ..models.gguf_int4 import is_int4, read_int4
from . import torch_int4

log = logging.getLogger(__name__)


def load_gguf_model(gguf_path: Path, hf_config, dtype: torch.dtype, device: str,
                    want_int4: bool) -> tuple[nn.Module, str]:
    """(model, what is 4-bit: "" when nothing) built from the tensors in `gguf_path`."""
    import gguf
    from transformers import AutoModelForCausalLM

    reader = gguf.GGUFReader(gguf_path)
    arch = reader.fields["general.architecture"].contents()
    permute = SUPPORTED_ARCHITECTURES.get(arch, False)
    heads = {"q_proj": hf_config.num_attention_heads, "k_proj": hf_config.num_key_value_heads}
    quantizable = [t for t in reader.tensors if is_int4(t)]
    use_int4 = want_int4 and bool(quantizable) and _kernel_ok(quantizable[0], device)

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf_config, dtype=dtype)
    _rebuild_meta_buffers(model, device)
    int4 = 0
    for tensor in reader.tensors:
        name = hf_name(tensor.name)
        proj = next((p for p in heads if name.endswith(f"{p}.weight")), None)
        rows = _unpermute_order(int(tensor.shape[-1]), heads[proj]) if permute and proj else None
        if use_int4 and is_int4(tensor):
            w = read_int4(tensor)
            if rows is not None:
                w = w.permute_rows(rows)
            _replace_linear(model, name.removesuffix(".weight"), w, device)
            int4 += 1
        else:
            dense = _dequantized(tensor)
            if rows is not None:
                dense = dense[rows]
            _set_param(model, name, torch.from_numpy(np.ascontiguousarray(dense)).to(device, dtype))
    if getattr(hf_config, "tie_word_embeddings", False) or _is_meta(model.get_output_embeddings().weight):
        model.get_output_embeddings().weight = model.get_input_embeddings().weight
    missing = [n for n, p in model.named_parameters() if p.is_meta]
    if missing:
        raise ModelLoadError(f"{gguf_path.name} lacks weights the model needs: {', '.join(missing[:3])}")
    linears = int4 + sum(1 for m in model.modules() if type(m) is nn.Linear)
    return model.eval(), (f"int4: {int4} of {linears} linear layers (from the GGUF's 4-bit tensors)" if int4 else "")


def quantize_linears(model: nn.Module, device: str) -> str:
    """Replace the decoder layers' nn.Linear modules with Int4Linear (EngineConfig(quantize="int4")).

    The output head stays dense: it is often tied to the embedding, whose dense copy stays anyway.
    """
    layers = [(n, m) for n, m in model.named_modules() if type(m) is nn.Linear and ".layers." in f".{n}"]
    if not layers:
        return ""
    codes, scale, zero = torch_int4.quantize_weight(layers[0][1].weight)
    reason, figures = torch_int4.probe(codes, scale, zero, device)
    if reason:
        log.warning("loading dense weights: %s", reason)
        return ""
    log.info("int4 kernel checked: %s", figures)
    for name, linear in layers:
        codes, scale, zero = torch_int4.quantize_weight(linear.weight)
        _set_module(model, name, torch_int4.from_arrays(codes, scale, zero, linear.bias, device))
    return f"int4: {len(layers)} decoder linear layers, quantized at load"


def _kernel_ok(tensor, device: str) -> bool:
    w = read_int4(tensor)
    reason, figures = torch_int4.probe(w.codes, w.scale, w.zero, device)
    if reason:
        log.warning("loading the GGUF's 4-bit tensors dense: %s", reason)
        return False
    log.info("int4 kernel checked on %s: %s", tensor.name, figures)
    return True


def _dequantized(tensor) -> np.ndarray:
    from gguf.quants import dequantize

    w = dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
    return w.reshape([int(d) for d in reversed(tensor.shape)])


def _unpermute_order(rows: int, n_head: int) -> np.ndarray:
    """Row order that undoes llama.cpp's Q/K interleaving (the same `unpermute` the converter uses)."""
    return unpermute(np.arange(rows), n_head)


def _replace_linear(model: nn.Module, name: str, w, device: str) -> None:
    linear = model.get_submodule(name)
    if not isinstance(linear, nn.Linear):
        raise ModelLoadError(f"{name} is a {type(linear).__name__}, not a linear layer")
    bias = linear.bias if linear.bias is not None else None
    _set_module(model, name, torch_int4.from_arrays(w.codes, w.scale, w.zero, bias, device))


def _set_module(model: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, module)


def _set_param(model: nn.Module, name: str, value: torch.Tensor) -> None:
    parent, _, leaf = name.rpartition(".")
    module = model.get_submodule(parent)
    old = getattr(module, leaf, None)
    if old is not None and tuple(old.shape) != tuple(value.shape):
        raise ModelLoadError(f"{name}: the GGUF holds shape {tuple(value.shape)}, the config wants {tuple(old.shape)}")
    module._parameters[leaf] = nn.Parameter(value, requires_grad=False)


def _is_meta(t: Optional[torch.Tensor]) -> bool:
    return t is not None and t.is_meta


def _rebuild_meta_buffers(model: nn.Module, device: str) -> None:
    """Modules whose buffers are computed at construction (rotary frequencies) are built again on
    `device`: a meta model has no values for them and the GGUF does not hold them."""
    for name, module in list(model.named_modules()):
        if any(b.is_meta for b in module.buffers(recurse=False)):
            config = getattr(module, "config", None)
            if config is None:
                raise ModelLoadError(f"cannot build {name} ({type(module).__name__}) outside the meta device")
            with torch.device(device):
                _set_module(model, name, type(module)(config))


