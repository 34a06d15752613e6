"""The online softmax over key tiles in NumPy float64, written from the recurrence as
FlashAttention states it (not from the exact engine), so that the tile steps are cross-checked:
per key block, m = max(m_old, rowmax), l = l_old·e^(m_old − m) + Σ e^(s − m),
a = a_old·e^(m_old − m) + e^(s − m)·V, and at the end a / l. A −∞ score adds e^(−∞) = 0; while the
running max is still −∞ the rescaling factor is 0 (nothing has been summed)."""
from __future__ import annotations

import numpy as np

from symblock.engine.tiles import key_blocks, tile_name


def tiles(t, h: int, s: np.ndarray | None, v: np.ndarray | None) -> None:
    """Record head h's tile steps through the trace `t` (numeric._Trace) from the head's last
    score step `s` and its values `v`."""
    n = t.dims.seq_len
    m = np.full((n, 1), -np.inf)
    l = np.zeros((n, 1))
    a = np.zeros((n, t.dims.d_v))
    for j, keys in enumerate(key_blocks(n, t.opts.attention_tiles)):
        if s is not None:
            m, l, a = _step(s[:, keys.start:keys.stop], v[keys.start:keys.stop], m, l, a)
        t(tile_name(h, j, "max"), lambda m=m: m)
        t(tile_name(h, j, "sum"), lambda l=l: l)
        t(tile_name(h, j, "acc"), lambda a=a: a)
    t(f"attn.h{h}.tiled", lambda: a / l)


def _step(s, v, m_old, l_old, a_old):
    m = np.maximum(m_old, s.max(axis=1, keepdims=True))
    live = np.isfinite(m)                                    # rows with a score so far
    safe = np.where(live, m, 0.0)
    scale = np.where(np.isfinite(m_old), np.exp(m_old - safe), 0.0)
    p = np.where(live, np.exp(s - safe), 0.0)                # e^(−∞) = 0
    return m, l_old * scale + p.sum(axis=1, keepdims=True), a_old * scale + p @ v
