"""K/V cache types: how many bytes each cached key and value element takes on llama.cpp.

    kv_element_bytes("q8_0")        # 1.0625: blocks of 32 one-byte values and a float16 scale
    check_kv_cache_type("q5_1")     # InvalidRequestError naming the types there are

Measured on the bundled model (2-core AVX-512 EPYC, `llama-bench -fa 1 -p 4000`, README): a q8_0 K
cache reads prompts as fast as f16 (126 vs 125 tok/s) in about half the key memory; a q8_0 V cache
costs about 30 % of prompt reading (86). So the app offers q8_0 keys first, then keys and values.
"""

from __future__ import annotations

from .errors import InvalidRequestError

KV_CACHE_TYPES: dict[str, float] = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}
"""Cache element type -> bytes per element (a quantized block of 32 values with its float16 scale)."""


def check_kv_cache_type(name: object, field: str = "cache type") -> str:
    """`name` when it is a K/V cache type llama.cpp stores; else InvalidRequestError saying which are."""
    if name not in KV_CACHE_TYPES:
        raise InvalidRequestError(f"{field} must be one of {', '.join(KV_CACHE_TYPES)}, not {name!r}")
    return name  # type: ignore[return-value]


def kv_element_bytes(name: str) -> float:
    """Bytes one cached element of type `name` takes."""
    return KV_CACHE_TYPES[check_kv_cache_type(name)]
