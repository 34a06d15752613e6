"""The KV cache's size: what each token adds to it, per layer and for a model.

A cached generation step keeps every earlier token's keys and values: per token and layer
kv_heads·d_k key entries and kv_heads·d_v value entries (grouped K/V heads shrink exactly this;
RoPE adds nothing: it has no parameters, and the cache holds the rotated keys in their place).
Bytes are entries times the width of the dtype the cache is stored in.
"""
from __future__ import annotations

from dataclasses import dataclass

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
DEFAULT_DTYPE = "bf16"


@dataclass(frozen=True)
class CacheSize:
    """Entries one token adds to the cache over `layers` layers (1: one block)."""
    kv_heads: int
    d_k: int
    d_v: int
    layers: int = 1

    @property
    def entries_per_layer(self) -> int:
        return self.kv_heads * (self.d_k + self.d_v)

    @property
    def entries(self) -> int:
        return self.layers * self.entries_per_layer

    def bytes(self, dtype: str = DEFAULT_DTYPE) -> int:
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}")
        return self.entries * DTYPE_BYTES[dtype]

    def formula(self) -> str:
        layers = "L·" if self.layers > 1 else ""
        return f"{layers}g·(k + v) = " + (f"{self.layers}·" if self.layers > 1 else "") + \
            f"{self.kv_heads}·({self.d_k} + {self.d_v})"

    def line(self) -> str:
        where = f"over {self.layers} layers" if self.layers > 1 else "per layer"
        sizes = ", ".join(f"{self.bytes(d):,} bytes in {d}" for d in ("fp32", "bf16", "fp8"))
        return (f"KV cache per token {where}: {self.formula()} = {self.entries:,} entries "
                f"(K and V rows of {self.kv_heads} K/V head{'s' * (self.kv_heads != 1)}); {sizes}")

    def to_dict(self) -> dict:
        return {"entries_per_token": self.entries, "entries_per_token_per_layer": self.entries_per_layer,
                "layers": self.layers, "kv_heads": self.kv_heads, "d_k": self.d_k, "d_v": self.d_v,
                "bytes_per_token": {d: self.bytes(d) for d in DTYPE_BYTES}, "formula": self.formula()}


def per_token(kv_heads: int, d_k: int, d_v: int, layers: int = 1) -> CacheSize:
    return CacheSize(kv_heads, d_k, d_v, layers)


def grouped_heads(kv_heads: int | None, heads: int) -> int | None:
    """Grouped K/V heads, checked to divide heads; None when there are none (one per query head)."""
    if kv_heads is None:
        return None
    if heads % kv_heads:
        raise ValueError(f"kv_heads = {kv_heads} does not divide heads = {heads} (each K/V head "
                         "serves heads/kv_heads query heads)")
    return None if kv_heads == heads else kv_heads
