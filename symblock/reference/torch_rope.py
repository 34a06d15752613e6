"""RoPE in torch as Hugging Face applies it: Llama's `apply_rotary_pos_emb` (half style,
`rotate_half`) and GPT-J's (interleaved, `rotate_every_two`), on (batch, heads, seq, d_k) tensors.

With `transformers` installed, its own functions are used (`source()` says so); without it, the
twins below, written as those functions are (the same tensor layouts and operations). cos and sin
are computed here in float64 (Hugging Face's rotary modules compute them in float32, which would
cost seven digits): the same angles m·θ^(−2i/d_k).
"""
from __future__ import annotations


def _hf():
    try:
        from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb as gptj
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb as llama
    except ImportError:
        return None
    return llama, gptj


def source() -> str:
    """Which spelling rotates: Hugging Face's own functions, or their twins here."""
    return "transformers" if _hf() is not None else "torch (Hugging Face's formulas; transformers not installed)"


def _rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    import torch
    return torch.cat((-x2, x1), dim=-1)


def _llama(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin


def _rotate_every_two(x):
    import torch
    x1, x2 = x[:, :, :, ::2], x[:, :, :, 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def _gptj(tensor, sin, cos):
    import torch
    sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    return (tensor * cos) + (_rotate_every_two(tensor) * sin)


def rotate(torch, x, heads: int, d_k: int, positions, rope):
    """x (seq, heads·d_k) with each head turned: Llama's function (half) or GPT-J's (interleaved)."""
    llama, gptj = _hf() or (_llama, _gptj)
    n = x.shape[0]
    inv_freq = 1.0 / float(rope.theta) ** (torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    freqs = torch.outer(torch.tensor(list(positions), dtype=torch.float64), inv_freq)[None]  # (1, seq, d/2)
    if rope.style == "half":
        emb = torch.cat((freqs, freqs), dim=-1)
        xh = x.view(n, heads, d_k).transpose(0, 1)[None]            # (1, heads, seq, d_k)
        out, _ = llama(xh, xh, emb.cos(), emb.sin())
        return out[0].transpose(0, 1).reshape(n, heads * d_k)
    xs = x.view(n, heads, d_k)[None]                                 # GPT-J: (1, seq, heads, d_k)
    return gptj(xs, freqs.sin(), freqs.cos())[0].reshape(n, heads * d_k)
