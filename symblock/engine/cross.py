"""A decoder layer with cross-attention, forward, exactly: torch's `nn.TransformerDecoderLayer`.

    Post-LN: H1 = N1(X + SelfAttn(X)), H2 = N2(H1 + CrossAttn(H1, H_enc)), H3 = N3(H2 + FFN(H2))
    Pre-LN:  R1 = X + SelfAttn(N1(X)), R2 = R1 + CrossAttn(N2(R1), H_enc), R3 = R2 + FFN(N3(R2))

The self-attention (causal) and the FFN are the block's own (block.py hands its sub-layers in,
so this module needs nothing from it); the cross-attention's queries come from the decoder, its
keys and values from the memory H_enc (the encoder's output; the parameter `M`), with weights of its own
(`cross.W_Q`, …) and no causal mask: only padded memory rows are masked. Step names: the
vocabulary in cross_steps.py.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from symblock.engine import exact
from symblock.engine.matrix import Mat

# The memory's symbol on every sheet, key and derivation: the encoder's output. Not M, which the
# masked scores M_h (self-attention) and M^{c}_h (cross-attention) already are.
MEMORY_TEX = r"H^{\mathrm{enc}}"


class SubLayers(NamedTuple):
    """The block's pieces a decoder layer reuses (block.norm, block.attention, block.ffn, …)."""
    norm: Callable
    attention: Callable
    ffn: Callable
    softmax: Callable
    apply_mask: Callable


def decoder_layer(t: Any, parts: SubLayers) -> None:  # t: a block.Tracer (block imports this module)
    """One sequence through the decoder layer, recording every step on the tracer `t`."""
    xs = t.spec.x_symbol
    x = t.step("x", xs, lambda: t.params["X"])
    m = t.step("memory", MEMORY_TEX, lambda: t.params["M"])
    norm = parts.norm
    if t.o.norm_position == "pre":
        a = parts.attention(t, norm(t, "norm1", x, xs, "ln1", "N_1"), "N_1")
        r1 = t.step("resid1", f"R_1 = {xs} + {t.read('attn.out', 'A')}", lambda: x + a)
        c = cross_attention(t, norm(t, "norm2", r1, "R_1", "ln2", "N_2"), "N_2", m, parts)
        r2 = t.step("resid2", "R_2 = R_1 + C", lambda: r1 + c)
        f = parts.ffn(t, norm(t, "norm3", r2, "R_2", "ln3", "N_3"), "N_3")
        r3 = t.step("resid3", f"R_3 = R_2 + {t.read('ffn.out', 'F')}", lambda: r2 + f)
        y, y_tex = (norm(t, "norm_final", r3, "R_3", "ln_final", "N_f"), "N_f") if t.o.final_norm \
            else (r3, "R_3")
    else:
        a = parts.attention(t, x, xs)
        r1 = t.step("resid1", f"R_1 = {xs} + {t.read('attn.out', 'A')}", lambda: x + a)
        h1 = norm(t, "norm1", r1, "R_1", "ln1", "H_1")
        c = cross_attention(t, h1, "H_1", m, parts)
        r2 = t.step("resid2", "R_2 = H_1 + C", lambda: h1 + c)
        h2 = norm(t, "norm2", r2, "R_2", "ln2", "H_2")
        f = parts.ffn(t, h2, "H_2")
        r3 = t.step("resid3", f"R_3 = H_2 + {t.read('ffn.out', 'F')}", lambda: h2 + f)
        y, y_tex = norm(t, "norm3", r3, "R_3", "ln3", "H_3"), "H_3"
    t.step("output", f"Y = {y_tex}", lambda: y)


def _proj(t: Any, name: str, p: str, src: str, x: Mat) -> Mat:
    bias = f" + b^{{{p}}}_{{c}}" if f"cross.b_{p}" in t.params else ""
    return t.step(name, f"{p}^{{c}} = {src} W^{{{p}}}_{{c}}{bias}",
                  lambda: t.linear(x, f"cross.W_{p}", f"cross.b_{p}"))


def cross_attention(t: Any, x: Mat, src: str, m: Mat, parts: SubLayers) -> Mat:
    """Queries from the decoder rows `x`, keys and values from the memory `m`, head by head."""
    heads = t.dims.heads
    q = _proj(t, "cross.q", "Q", src, x)
    k = _proj(t, "cross.k", "K", MEMORY_TEX, m)
    v = _proj(t, "cross.v", "V", MEMORY_TEX, m)
    outs = [_head(t, h, q, k, v, parts) for h in range(heads)]
    cat = t.step("cross.concat", r"O^{c} = [O^{c}_0, \dots, O^{c}_{%d}]" % (heads - 1),
                 lambda: Mat.hstack(outs)) if heads > 1 else outs[0]
    cat_tex = "O^{c}" if heads > 1 else "O^{c}_0"
    if not t.o.out_proj:
        return t.step("cross.out", f"C = {cat_tex}", lambda: cat)
    bias = " + b^{O}_{c}" if "cross.b_O" in t.params else ""
    return t.step("cross.out", f"C = {cat_tex} W^{{O}}_{{c}}{bias}", lambda: t.linear(cat, "cross.W_O", "cross.b_O"))


def _head(t: Any, h: int, q: Mat, k: Mat, v: Mat, parts: SubLayers) -> Mat:
    dk, dv, name = t.dims.d_k, t.dims.d_v, f"cross.h{h}"
    lo, hi = h * dk, (h + 1) * dk
    # S^c_h as the self-attention's S_h: C is the cross-attention's output, and C_h would read as its part h
    s = t.step(f"{name}.scores", f"S^{{c}}_{h} = Q^{{c}}_{h} (K^{{c}}_{h})^{{\\top}}",
               lambda: q.cols(lo, hi) @ k.cols(lo, hi).T)
    tex = f"S^{{c}}_{h}"
    if t.o.attention_scale == "sqrt_dk":
        s = t.step(f"{name}.scaled", f"S^{{c\\prime}}_{h} = S^{{c}}_{h} / \\sqrt{{d_k}},\\ d_k = {dk}",
                   lambda s=s: s.scale(1 / exact.sqrt(t.num(dk))))
        tex = f"S^{{c\\prime}}_{h}"
    if t.o.memory_padding:
        pad = t.spec.memory_padding_mask
        s = t.step(f"{name}.masked", f"M^{{c}}_{h} = {tex} + \\mathrm{{mask}}\\ (-\\infty \\text{{ where memory row }} "
                   "j \\text{ is padding})",
                   lambda s=s: parts.apply_mask(s, [list(pad)] * s.shape[0]))
        tex = f"M^{{c}}_{h}"
    w = t.step(f"{name}.weights", f"P^{{c}}_{h} = \\mathrm{{softmax}}({tex})\\ \\text{{(each row)}}",
               lambda s=s: s.map_rows(parts.softmax))
    return t.step(f"{name}.out", f"O^{{c}}_{h} = P^{{c}}_{h} V^{{c}}_{h}", lambda: w @ v.cols(h * dv, (h + 1) * dv))
