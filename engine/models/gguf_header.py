"""A GGUF file's scalar metadata and the bytes of each tensor, read from its header alone, fast.

    header = read_header(path)
    header.meta["llama.block_count"], header.tensor_bytes["blk.0.ffn_up.weight"]

Why by hand: `gguf.GGUFReader` parses every field into numpy arrays up front, the tokenizer's
vocabulary and merges included: seconds on a 135M model (4.3 s measured on a busy 2-core machine),
more on a 150k-token vocabulary, each time a model loads. Deciding how many layers go on a GPU needs
only the counts and each tensor's size, so this reads the header and skips arrays by their lengths
(a string array still needs each string's length read: tens of milliseconds). Tensor sizes come from
ggml's block sizes as the gguf package lists them.
"""

from __future__ import annotations

import functools
import hashlib
import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ModelLoadError

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class GgufHeader:
    meta: dict
    """Scalar and string metadata ("llama.block_count": 30); arrays are skipped, except short numeric
    ones (per-layer head counts), kept as tuples."""
    tensor_bytes: dict
    """Each tensor's size in the file, by name."""
    array_lengths: dict
    """How many items each array field holds ("tokenizer.ggml.tokens": 49152)."""
    tensor_shapes: dict = field(default_factory=dict)
    """Each tensor's dimensions (fastest axis first, as GGUF lists them) and ggml type name, by name:
    ((2048, 576), "Q4_1")."""
    digest: str = ""
    """A hash of the metadata bytes (not the tensors): two files with the same config, tokenizer and
    chat template have the same digest wherever they lie."""


def read_header(path: Path) -> GgufHeader:
    """Read `path`'s header; cached per file version. Raises ModelLoadError for a file that is not GGUF
    or is cut short (an incomplete download: the message says so, with the bytes expected, where
    numpy would only say that an array's size does not divide)."""
    path = Path(path)
    stat = path.stat()
    return _read(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _read(path: str, size: int, mtime_ns: int) -> GgufHeader:
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            reader = _Cursor(m)
            if m[:4] != b"GGUF":
                raise ValueError("no GGUF magic")
            version, n_tensors, n_kv = reader.take("<I"), reader.take("<Q"), reader.take("<Q")
            if version < 2:
                raise ValueError(f"GGUF version {version} is too old")
            meta, lengths = {}, {}
            for _ in range(n_kv):
                key = reader.string()
                meta[key] = reader.value(reader.take("<I"))
                if reader.last_count is not None:
                    lengths[key], reader.last_count = reader.last_count, None
            digest = hashlib.sha256(m[:reader.at]).hexdigest()[:16]
            tensors, shapes, data_end = {}, {}, 0
            for _ in range(n_tensors):
                name = reader.string()
                dims = [reader.take("<Q") for _ in range(reader.take("<I"))]
                kind = reader.take("<I")
                offset = reader.take("<Q")
                elements = 1
                for d in dims:
                    elements *= d
                kind = GGMLQuantizationType(kind)
                block, nbytes = GGML_QUANT_SIZES[kind]
                tensors[name] = elements // block * nbytes
                shapes[name] = (tuple(dims), kind.name)
                data_end = max(data_end, offset + tensors[name])
            align = meta.get("general.alignment") or 32
            expected = -(-reader.at // align) * align + data_end  # tensor data starts aligned after the header
            if expected > size:
                raise ModelLoadError(truncated(Path(path).name, size, expected))
    except struct.error as e:  # the file ends inside its header
        raise ModelLoadError(truncated(Path(path).name, size)) from e
    except (ValueError, KeyError, OSError) as e:
        raise ModelLoadError(f"{Path(path).name} is not a readable GGUF file: {e}") from e
    return GgufHeader(meta, tensors, lengths, shapes, digest)


def truncated(name: str, size: int, expected: int = 0) -> str:
    """The message for a GGUF file cut short, in words a person can act on."""
    numbers = (f"{size:,} bytes on disk, {expected:,} expected" if expected
               else f"{size:,} bytes on disk, ending inside its header")
    return (f"{name} is truncated ({numbers}): the file is incomplete, probably an interrupted download. "
            "Download it again.")


class _Cursor:
    def __init__(self, data) -> None:
        self.data, self.at = data, 4
        self.last_count = None
        """The length of the array value read last."""

    def take(self, fmt: str):
        value = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        n = self.take("<Q")
        text = bytes(self.data[self.at:self.at + n]).decode("utf-8", errors="replace")
        self.at += n
        return text

    def value(self, kind: int):
        if kind in _SCALARS:
            return self.take(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind != _ARRAY:
            raise ValueError(f"unknown GGUF value type {kind}")
        item, count = self.take("<I"), self.take("<Q")
        self.last_count = count
        if item == _STRING:
            for _ in range(count):
                self.at += 8 + struct.unpack_from("<Q", self.data, self.at)[0]
            return None
        if item not in _SCALARS:
            raise ValueError(f"GGUF array of type {item}")
        width = struct.calcsize(_SCALARS[item])
        values = struct.unpack_from(f"<{count}{_SCALARS[item][1]}", self.data, self.at) if count <= 1024 else None
        self.at += width * count
        return values
