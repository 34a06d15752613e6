"""The attention steps' local backward rules (calculus/grad.py's table holds them by kind):
a head's scores, scaling, mask, softmax and weighted values, RoPE's rotation back, the heads'
concatenation. A decoder layer's cross-attention heads (`cross.h0.*`) read their own head's K/V
columns of the memory's projections (no grouping) and mask only padded memory rows.

Each rule gets the step, dL/d(step) `g`, a lookup `v(name)` of forward values, the spec, and
`want(name)`, and returns {input name: contribution to dL/d input} (grad.py's contract).
"""
from __future__ import annotations

from typing import Callable

from symblock.engine import exact, names, rope
from symblock.engine.block import Step
from symblock.engine.matrix import Mat
from symblock.engine.spec import BlockSpec
from symblock.engine.steps import batch_index, head_columns, key_columns, masked_positions, value_columns

Values = Callable[[str], Mat]    # a step's or a parameter's forward value, by name
Wanted = Callable[[str], bool]   # does anyone need dL/d of this name?


def put_cols(m: Mat, lo: int, width: int) -> Mat:
    """m placed at columns lo … lo+m.cols−1 of an otherwise zero matrix `width` wide."""
    return Mat([[exact.ZERO] * lo + list(r) + [exact.ZERO] * (width - lo - len(r)) for r in m.rows])


def _cross(step: Step) -> bool:
    """A step of a decoder layer's cross-attention (`cross.h0.scores`): its keys and values come
    from the memory, one K/V head per query head, and only padded memory rows are masked."""
    return names.parse(step.name).sublayer == "cross"


def _kv_columns(step: Step, dims, of: str) -> tuple[int, int, int]:
    """(lo, hi, all heads' width) of the K (`of` "k") or V ("v") columns a head step reads: its
    grouped K/V head's in the self-attention, its own head's in the cross-attention."""
    width, columns = (dims.d_k, key_columns) if of == "k" else (dims.d_v, value_columns)
    if _cross(step):
        h = names.parse(step.name).head
        return h * width, (h + 1) * width, dims.heads * width
    lo, hi = columns(step.name, dims)
    return lo, hi, dims.kv_heads * width


def _scores(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """S = Q_h K_hᵀ: dQ_h = dS K_h, dK_h = dSᵀ Q_h (into head h's columns of Q, K)."""
    lo, hi = head_columns(step.name, spec.dims)
    klo, khi, kw = _kv_columns(step, spec.dims, "k")   # grouped heads: its K/V head's columns
    q, k = step.inputs
    dims = spec.dims
    out = {}
    if want(q):
        out[q] = put_cols(g @ v(k).cols(klo, khi), lo, dims.heads * dims.d_k)
    if want(k):
        out[k] = put_cols(g.T @ v(q).cols(lo, hi), klo, kw)
    return out


def _rope(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """X' = RoPE(X): a rotation per pair, so dX = the rotation back (angle −φ) of dX'."""
    (src,) = step.inputs
    if not want(src):
        return {}
    d_k = spec.dims.d_k
    back = [-m for m in spec.position_list()]
    return {src: rope.rotate(g, g.shape[1] // d_k, d_k, back, spec.options.rope)}


def _scaled(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """S' = S / √d_k: dS = dS' / √d_k."""
    (s,) = step.inputs
    return {s: g.scale(1 / exact.sqrt(exact.real(spec.dims.d_head)))} if want(s) else {}


def _masked(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """M = S + mask: the gradient passes where a query may attend (j ≤ i under a causal mask,
    an unpadded key); a masked entry (a constant −∞) gets 0."""
    (s,) = step.inputs
    if not want(s):
        return {}
    if _cross(step):  # no causal mask over the memory: only its padded rows
        masked = [list(spec.memory_padding_mask)] * g.shape[0]
    else:
        pad = spec.key_padding_mask[batch_index(step.name)] if spec.key_padding_mask else None
        masked = masked_positions(g.shape[0], spec.options.causal, pad)
    return {s: Mat([[exact.ZERO if m else e for e, m in zip(r, mr)] for r, mr in zip(g.rows, masked)])}


def _softmax(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """P = softmax(S) per row: dS_ij = P_ij (dP_ij − Σ_k P_ik dP_ik) (the Jacobian diag(P) − P Pᵀ)."""
    (s,) = step.inputs
    if not want(s):
        return {}
    rows = []
    for p, dp in zip(v(step.name).rows, g.rows):
        inner = exact.dot(p, dp)
        rows.append([pj * (dj - inner) for pj, dj in zip(p, dp)])
    return {s: Mat(rows)}


def _head_out(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """O_h = P_h V_h: dP_h = dO V_hᵀ, dV_h = P_hᵀ dO (into head h's columns of V)."""
    lo, hi, width = _kv_columns(step, spec.dims, "v")
    p, vv = step.inputs
    out = {}
    if want(p):
        out[p] = g @ v(vv).cols(lo, hi).T
    if want(vv):
        out[vv] = put_cols(v(p).T @ g, lo, width)
    return out


def _concat(step: Step, g: Mat, v: Values, spec: BlockSpec, want: Wanted) -> dict:
    """O = [O_0, …]: each head gets its own column block back."""
    dv = spec.dims.d_v
    return {o: g.cols(h * dv, (h + 1) * dv) for h, o in enumerate(step.inputs) if want(o)}


RULES: dict[str, Callable[..., dict]] = {
    "scores": _scores, "scaled": _scaled, "masked": _masked, "softmax": _softmax,
    "head_out": _head_out, "rope": _rope, "concat": _concat,
}
