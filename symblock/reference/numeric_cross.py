"""A decoder layer with cross-attention in NumPy float64, written from the conventions (torch's
`nn.TransformerDecoderLayer`), not from the exact engine: the independent path that `verify`
compares the exact trace with. The self-attention, norms and FFN are numeric.py's; the
cross-attention is written here: queries from the decoder rows, keys and values from the memory,
no causal mask, a padded memory row set to −∞ before the row softmax.
"""
from __future__ import annotations

import math

import numpy as np

from symblock.engine import steps
from symblock.reference import numeric
from symblock.reference.model_common import floats
from symblock.reference.numeric import linear, norm, softmax


def forward(spec) -> dict[str, np.ndarray]:
    """Every computed or given step of a decoder layer's spec: name -> float64 2-D array."""
    t = numeric.Trace(spec)
    t.pad = np.array(spec.key_padding_mask[0], dtype=bool) if spec.key_padding_mask else None
    x = t("x", lambda: floats(spec.X))
    m = t("memory", lambda: floats(spec.memory))
    mem_pad = np.array(spec.memory_padding_mask, dtype=bool) if spec.memory_padding_mask else None
    if t.opts.norm_position == "pre":
        r1 = t("resid1", lambda: x + numeric.attention(t, norm(t, "norm1", x, "ln1")))
        r2 = t("resid2", lambda: r1 + cross_attention(t, norm(t, "norm2", r1, "ln2"), m, mem_pad))
        r3 = t("resid3", lambda: r2 + numeric.ffn(t, norm(t, "norm3", r2, "ln3")))
        last = norm(t, "norm_final", r3, "ln_final") if t.opts.final_norm else r3
    else:
        r1 = t("resid1", lambda: x + numeric.attention(t, x))
        h1 = norm(t, "norm1", r1, "ln1")
        r2 = t("resid2", lambda: h1 + cross_attention(t, h1, m, mem_pad))
        h2 = norm(t, "norm2", r2, "ln2")
        r3 = t("resid3", lambda: h2 + numeric.ffn(t, h2))
        last = norm(t, "norm3", r3, "ln3")
    t("output", lambda: last.copy())
    return {name: t.values[name] for name in steps.step_names(spec.dims, spec.options) if name in t.values}


def cross_attention(t, x: np.ndarray, m: np.ndarray, pad: np.ndarray | None) -> np.ndarray:
    """softmax(Q_h K_hᵀ / √d_k, padded memory rows −∞) V_h per head, Q = x W_Q^c, K, V from m."""
    q = t("cross.q", lambda: linear(x, t.p("cross.W_Q"), t.p("cross.b_Q")))
    k = t("cross.k", lambda: linear(m, t.p("cross.W_K"), t.p("cross.b_K")))
    v = t("cross.v", lambda: linear(m, t.p("cross.W_V"), t.p("cross.b_V")))
    dk, dv, outs = t.dims.d_k, t.dims.d_v, []
    for h in range(t.dims.heads):
        p, cols, vcols = f"cross.h{h}", slice(h * dk, (h + 1) * dk), slice(h * dv, (h + 1) * dv)
        s = t(f"{p}.scores", lambda: q[:, cols] @ k[:, cols].T)
        if t.opts.attention_scale == "sqrt_dk":
            s = t(f"{p}.scaled", lambda s=s: s / math.sqrt(dk))
        if pad is not None:
            s = t(f"{p}.masked", lambda s=s: np.where(pad[None, :], -np.inf, s))
        w = t(f"{p}.weights", lambda s=s: softmax(s))
        outs.append(t(f"{p}.out", lambda w=w: w @ v[:, vcols]))
    heads = t("cross.concat", lambda: np.concatenate(outs, axis=1)) if t.dims.heads > 1 else outs[0]
    if t.opts.out_proj:
        return t("cross.out", lambda: linear(heads, t.p("cross.W_O"), t.p("cross.b_O")))
    return t("cross.out", lambda: heads.copy())
