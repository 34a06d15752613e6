"""The real attention modules of torch run on the whole batch, checked against the steps
torch_ref captured piece by piece: `nn.MultiheadAttention` (with `key_padding_mask`) for the
standard widths d_k = d_v = d_model/heads, else `F.scaled_dot_product_attention` per head (torch's
MultiheadAttention `kdim`/`vdim` are the key/value *input* widths, not projection widths, so it
cannot hold other projections). `ModuleMismatch` when they disagree.
"""
from __future__ import annotations

import numpy as np

from symblock.engine.steps import batch_prefixes, step_kind

TOLERANCE = 1e-9  # module vs captured steps (absolute and relative)


class ModuleMismatch(AssertionError):
    """A torch module's own result differs from the steps captured piece by piece."""


def check_attention(run) -> None:
    """Run the real attention on the whole batch; it must agree with the captured steps:
    `nn.MultiheadAttention` (with key_padding_mask) for standard widths, else
    `F.scaled_dot_product_attention` per head. With a dropout mask on the attention weights
    only the weights (before dropout) are compared: the modules draw their own masks."""
    torch, prefixes = run.torch, batch_prefixes(run.dims)
    x = torch.stack([run.vals[s] for s in run.sources])  # (batch, seq_len, d_model)
    dropped = any(step_kind(n) == "weights" for n in run.masks)
    if run.standard:
        mask = run.causal_mask() if run.opts.causal else None
        out, weights = run.mha()(x, x, x, attn_mask=mask, key_padding_mask=run.padding_mask(),
                                 need_weights=True, average_attn_weights=False)
        for b, p in enumerate(prefixes):
            if not dropped:
                agree(f"nn.MultiheadAttention output vs {p}attn.out", out[b], run.vals[p + "attn.out"])
            for h in range(run.dims.heads):
                agree(f"nn.MultiheadAttention weights of head {h} vs {p}attn.h{h}.weights",
                      weights[b, h], run.vals[f"{p}attn.h{h}.weights"])
        return
    if dropped:
        return
    check_sdpa(run, prefixes)


def check_sdpa(run, prefixes: list[str]) -> None:
    torch, dims = run.torch, run.dims
    h, n = dims.heads, dims.seq_len

    def split(step: str, width: int, heads: int = h):  # (batch, heads, seq_len, width)
        t = torch.stack([run.vals[p + step] for p in prefixes])
        return t.view(len(prefixes), n, heads, width).transpose(1, 2)

    allowed = torch.ones(len(prefixes), 1, n, n, dtype=torch.bool)  # SDPA: True = attend
    if run.opts.causal:
        allowed = allowed & ~run.causal_mask()
    pad = run.padding_mask()
    if pad is not None:
        allowed = allowed & ~pad[:, None, None, :]
    scale = None if run.opts.attention_scale == "sqrt_dk" else 1.0
    q, k = ("attn.q_rot", "attn.k_rot") if run.opts.rope else ("attn.q", "attn.k")
    kv = dims.kv_heads  # grouped K/V heads: SDPA repeats them itself (enable_gqa)
    out = run.F.scaled_dot_product_attention(split(q, dims.d_k), split(k, dims.d_k, kv),
                                             split("attn.v", dims.d_v, kv), attn_mask=allowed,
                                             scale=scale, enable_gqa=kv != h)
    for b, p in enumerate(prefixes):
        for k in range(h):
            agree(f"F.scaled_dot_product_attention head {k} vs {p}attn.h{k}.out", out[b, k],
                  run.vals[f"{p}attn.h{k}.out"])


def agree(what: str, got, want) -> None:
    a, b = got.detach().numpy(), want.detach().numpy()
    if a.shape != b.shape or not np.allclose(a, b, rtol=TOLERANCE, atol=TOLERANCE):
        diff = np.max(np.abs(a - b)) if a.shape == b.shape else "shapes differ"
        raise ModuleMismatch(f"{what}: largest difference {diff} (tolerance {TOLERANCE})\n"
                             f"module:\n{a}\ncaptured:\n{b}")
