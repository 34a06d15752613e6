"""A decoder layer with cross-attention as general formulas in symbols (`symblock derive` on a
spec with `block.cross_attention`): derive.py's way, each sub-layer run by the engine's own code
on a matrix of symbols for its input, with the cross-attention's own:

    Post-LN: A(X), R_1 = X + A, H_1 = N1(R_1), C(H_1, H^{enc}), R_2 = H_1 + C, H_2 = N2(R_2),
             F(H_2), R_3 = H_2 + F, H_3 = N3(R_3)
    Pre-LN:  N_1 = N1(X), A(N_1), R_1 = X + A, N_2 = N2(R_1), C(N_2, H^{enc}), R_2 = R_1 + C,
             N_3 = N3(R_2), F(N_3), R_3 = R_2 + F (then N_f with a final norm)

The memory H^{enc} is a matrix of symbols h^{enc}_{ij} (mem_len × d_model); the cross-attention's weights are
W^{Q}_{c} … (symbols w^{Q,c}_{ij}, b^{Q,c}_{j}); its queries are written in the decoder's rows,
its keys and values in H^{enc}, and each later attention step in its direct inputs.
"""
from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any, Callable

from symblock.engine import names, parameters

MEMORY_ENTRY = r"h^{\mathrm{enc}}"   # the memory's entries h^{enc}_{ij} (not m_{ij}: the masked scores' own)


def is_cross(step: str) -> bool:
    """A step of the cross-attention (`cross.h0.weights`): its symbols carry a `c`."""
    return names.parse(step).sublayer == "cross"

def symbolize(sym: Any) -> Any:
    """The symbolic spec (block.symbolic_spec) with the cross-attention's weights as symbols of
    their own: w^{Q,c}_{12}, b^{O,c}_{1}."""
    import sympy
    params = dict(sym.params)
    for name, m in sym.params.items():
        p = parameters.parse(name)
        if not p.cross:
            continue
        base = ("w" if p.kind == "weight" else "b") + f"^{{{p.sub},c}}"
        r, c = m.shape
        if p.kind == "bias":
            params[name] = sympy.ImmutableMatrix(1, c, [sympy.Symbol(f"{base}_{{{j + 1}}}", real=True)
                                                        for j in range(c)])
        else:
            params[name] = sympy.ImmutableMatrix(r, c, [sympy.Symbol(f"{base}_{{{i + 1}{j + 1}}}", real=True)
                                                        for i in range(r) for j in range(c)])
    return replace(sym, params=MappingProxyType(params))


def decoder_layer(t: Any, stage: Callable, resid: Callable, over: dict, local: Callable, symbols: Callable) -> str:
    """The decoder layer's steps on tracer t (derive.py's `stage`, `resid`, `over`; `local(src,
    known)` its attention tracer); returns the symbol of the output."""
    from symblock.engine import block, cross
    parts = cross.SubLayers(block.norm, block.attention, block.ffn, block.softmax, block.apply_mask)
    m = symbols(MEMORY_ENTRY, t.dims.mem_len, t.dims.d_model)
    t.step("memory", cross.MEMORY_TEX, lambda: m)
    over["memory"] = cross.MEMORY_TEX

    def cross_attention(src: str) -> None:
        stage(src, lambda h: cross.cross_attention(local(src, {"memory": cross.MEMORY_TEX}), h, src, m, parts))

    if t.o.norm_position == "pre":
        stage("X", lambda x: block.norm(t, "norm1", x, "X", "ln1", "N_1"))
        stage("N_1", lambda x: block.attention(local("N_1", {}), x, "N_1"))
        resid("resid1", "R_1 = X + A", "X", "A")
        stage("R_1", lambda x: block.norm(t, "norm2", x, "R_1", "ln2", "N_2"))
        cross_attention("N_2")
        resid("resid2", "R_2 = R_1 + C", "R_1", "C")
        stage("R_2", lambda x: block.norm(t, "norm3", x, "R_2", "ln3", "N_3"))
        stage("N_3", lambda x: block.ffn(t, x, "N_3"))
        resid("resid3", "R_3 = R_2 + F", "R_2", "F")
        if not t.o.final_norm:
            return "R_3"
        stage("R_3", lambda x: block.norm(t, "norm_final", x, "R_3", "ln_final", "N_f"))
        return "N_f"
    stage("X", lambda x: block.attention(local("X", {}), x, "X"))
    resid("resid1", "R_1 = X + A", "X", "A")
    stage("R_1", lambda x: block.norm(t, "norm1", x, "R_1", "ln1", "H_1"))
    cross_attention("H_1")
    resid("resid2", "R_2 = H_1 + C", "H_1", "C")
    stage("R_2", lambda x: block.norm(t, "norm2", x, "R_2", "ln2", "H_2"))
    stage("H_2", lambda x: block.ffn(t, x, "H_2"))
    resid("resid3", "R_3 = H_2 + F", "H_2", "F")
    stage("R_3", lambda x: block.norm(t, "norm3", x, "R_3", "ln3", "H_3"))
    return "H_3"
