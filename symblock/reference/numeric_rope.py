"""RoPE and grouped K/V heads in NumPy float64, written from the formulas (not from engine/rope.py):
the independent spelling `numeric.py` uses to cross-check the exact `attn.q_rot`, `attn.k_rot`
and the grouped heads.

Half style is Hugging Face Llama's `q·cos + rotate_half(q)·sin` with cos, sin of the frequencies
written twice (`cat(freqs, freqs)`); interleaved is GPT-J's `rotate_every_two` with each frequency
repeated in place (`repeat_interleave`).
"""
from __future__ import annotations

import numpy as np


def angles(positions, d_k: int, theta: float, style: str) -> np.ndarray:
    """(rows, d_k) angles m·θ^(−2i/d_k), laid out per column as the style pairs them."""
    inv_freq = 1.0 / theta ** (np.arange(0, d_k, 2, dtype=np.float64) / d_k)
    freqs = np.outer(np.asarray(positions, dtype=np.float64), inv_freq)
    return np.concatenate([freqs, freqs], axis=1) if style == "half" else np.repeat(freqs, 2, axis=1)


def rotate_half(x: np.ndarray) -> np.ndarray:
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def rotate_every_two(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = -x[..., 1::2], x[..., 0::2]
    return out


def rotate(x: np.ndarray, heads: int, d_k: int, positions, rope) -> np.ndarray:
    """Each head's d_k columns of x turned by its rows' positions."""
    ang = angles(positions, d_k, float(rope.theta), rope.style)
    cos, sin = np.cos(ang), np.sin(ang)
    turn = rotate_half if rope.style == "half" else rotate_every_two
    blocks = [x[:, h * d_k:(h + 1) * d_k] for h in range(heads)]
    return np.concatenate([b * cos + turn(b) * sin for b in blocks], axis=1)


def kv_head(h: int, heads: int, kv_heads: int) -> int:
    """Hugging Face's repeat_kv: K/V head g is repeated heads/kv_heads times in a row."""
    return h // (heads // kv_heads)
