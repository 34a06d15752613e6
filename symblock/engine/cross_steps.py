"""The step graph of a decoder layer with cross-attention (torch's `nn.TransformerDecoderLayer`):
causal self-attention, cross-attention over the memory, FFN, each with its residual and norm.

Post-LN: H1 = N1(X + SelfAttn(X)), H2 = N2(H1 + CrossAttn(H1, M)), H3 = N3(H2 + FFN(H2)).
Pre-LN:  R1 = X + SelfAttn(N1(X)), R2 = R1 + CrossAttn(N2(R1), M), R3 = R2 + FFN(N3(R2)).

The self-attention and FFN keep the block's names (`attn.*`, `ffn.*`); the cross-attention's are
`cross.q cross.k cross.v`, per head `cross.h0.scores .scaled .masked .weights .out`, `cross.concat`,
`cross.out`: queries from the decoder, keys and values from the memory (`memory`, mem_len ×
d_model), its own weights `cross.W_Q …` and no causal mask (`.masked` only with
`inputs.memory_padding_mask`). The norms are ln1 (self), ln2 (cross), ln3 (FFN), as torch's
norm1/2/3; the residuals resid1, resid2, resid3. steps.py calls `graph` with its own builders of
a norm, the self-attention and the FFN, so this module needs nothing from it.
"""
from __future__ import annotations

CROSS_PARAMS = ("W_Q", "b_Q", "W_K", "b_K", "W_V", "b_V", "W_O", "b_O")


def head_steps(h: int, opts) -> list[str]:
    """One cross-attention head's steps, in order."""
    parts = ["scores"] + (["scaled"] if opts.attention_scale != "none" else []) + \
        (["masked"] if opts.memory_padding else []) + ["weights", "out"]
    return [f"cross.h{h}.{p}" for p in parts]


def param_names(opts) -> list[str]:
    """The cross-attention's weights (weights.cross.W_Q, …), in the block's order."""
    keep = CROSS_PARAMS if opts.out_proj else CROSS_PARAMS[:6]
    return [f"cross.{p}" for p in keep]


def cross_attention(g: dict, dims, opts, src: str) -> str:
    """cross.* steps into graph g: Q from `src` (the decoder), K and V from `memory`."""
    g["cross.q"] = (src, "cross.W_Q", "cross.b_Q")
    g["cross.k"] = ("memory", "cross.W_K", "cross.b_K")
    g["cross.v"] = ("memory", "cross.W_V", "cross.b_V")
    outs = []
    for h in range(dims.heads):
        names = head_steps(h, opts)
        g[names[0]] = ("cross.q", "cross.k")
        for prev, step in zip(names, names[1:-1]):  # scaled, masked, weights
            g[step] = (prev,)
        g[names[-1]] = (names[-2], "cross.v")
        outs.append(names[-1])
    if dims.heads > 1:
        g["cross.concat"] = tuple(outs)
    heads = "cross.concat" if dims.heads > 1 else outs[0]
    g["cross.out"] = (heads, "cross.W_O", "cross.b_O") if opts.out_proj else (heads,)
    return "cross.out"


def graph(g: dict, dims, opts, norm, attention, ffn) -> str:
    """The decoder layer's steps after `x` into g; returns the step `output` reads."""
    g["memory"] = ("M",)
    if opts.norm_position == "pre":
        g["resid1"] = ("x", attention(norm("norm1", "x", "ln1")))
        g["resid2"] = ("resid1", cross_attention(g, dims, opts, norm("norm2", "resid1", "ln2")))
        g["resid3"] = ("resid2", ffn(norm("norm3", "resid2", "ln3")))
        return norm("norm_final", "resid3", "ln_final") if opts.final_norm else "resid3"
    g["resid1"] = ("x", attention("x"))
    h1 = norm("norm1", "resid1", "ln1")
    g["resid2"] = (h1, cross_attention(g, dims, opts, h1))
    h2 = norm("norm2", "resid2", "ln2")
    g["resid3"] = (h2, ffn(h2))
    return norm("norm3", "resid3", "ln3")
