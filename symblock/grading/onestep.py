"""One step of the block, recomputed exactly from whatever values its inputs are given.

The checker needs this twice: to recompute a step from a person's own earlier answers (error
carried forward, rounding carried forward) and, with a rule changed, to name a mistake
(mistakes.py). `env` maps step and parameter names (steps.step_inputs) to exact matrices; an
absent bias is simply not in it. The formulas are DESIGN.md's conventions, written per step.
"""
from __future__ import annotations

from symblock.engine import exact
from symblock.engine.block import ACTIVATIONS, causal_mask, softmax
from symblock.engine.matrix import Mat
from symblock.engine.steps import head_columns, step_inputs
from symblock.engine.steps import step_kind as kind

def norm_prefix(name: str) -> str:
    return name.split(".")[0]


def ln_of(prefix: str) -> str:
    return {"norm1": "ln1", "norm2": "ln2", "norm_final": "ln_final"}[prefix]


def norm_source(prefix: str, spec) -> str:
    """The step a norm normalises (its first input in the step graph)."""
    return step_inputs(spec.dims, spec.options)[prefix][0]


# ---------------------------------------------------------------- small exact helpers

def num(v) -> exact.Real:
    import sympy
    return exact.from_sympy(sympy.sympify(v))


def linear(x: Mat, env, w: str, b: str | None, transpose: bool = False, bias: bool = True) -> Mat:
    W = env[w].T if transpose else env[w]
    y = x @ W
    return y + env[b] if bias and b in env else y


def row_mean(m: Mat) -> Mat:
    d = m.shape[1]
    return m.map_rows(lambda r: [exact.total(r) / d])


def row_meansq(m: Mat, divisor: int | None = None) -> Mat:
    d = divisor or m.shape[1]
    return m.map_rows(lambda r: [exact.dot(r, r) / d])


def centred_var(src: Mat, mean: Mat, divisor: int | None = None) -> Mat:
    return row_meansq(src - mean, divisor)


def affine(m: Mat, env, ln: str, beta: bool = True) -> Mat:
    g, b = env.get(f"{ln}.gamma"), env.get(f"{ln}.beta")
    out = m * g if g is not None else m
    return out + b if beta and b is not None else out


def layernorm(src: Mat, env, ln: str, eps) -> Mat:
    mu = row_mean(src)
    return affine((src - mu) / centred_var(src, mu).map(lambda v: exact.sqrt(v + eps)), env, ln)


def rmsnorm(src: Mat, env, ln: str, eps) -> Mat:
    return affine(src / row_meansq(src).map(lambda v: exact.sqrt(v + eps)), env, ln, beta=False)


def full_norm(src: Mat, env, ln: str, spec) -> Mat:
    eps = num(spec.options.eps)
    f = layernorm if spec.options.norm == "layernorm" else rmsnorm
    return f(src, env, ln, eps)


def softmax_rows(m: Mat) -> Mat:
    return m.map_rows(softmax)


def softmax_cols(m: Mat) -> Mat:
    return m.T.map_rows(softmax).T


def mask_with(m: Mat, fill) -> Mat:
    return Mat([[e if j <= i else fill for j, e in enumerate(r)] for i, r in enumerate(m.rows)])


def activate(hidden: Mat, env, spec, activation: str | None = None) -> Mat:
    act = ACTIVATIONS[activation or spec.options.activation][0]
    out = hidden.map(act)
    return out * env["ffn.gate"] if spec.options.gated else out


# ---------------------------------------------------------------- the correct step

def compute(name: str, env, spec) -> Mat:
    """The step `name` computed correctly from the values in `env` (its inputs, and parameters)."""
    from symblock.engine.steps import step_inputs
    o, d = spec.options, spec.dims
    ins = step_inputs(d, o)[name]
    k = kind(name)
    src = env.get(ins[0]) if ins else None
    if k == "x":
        return env["X"]
    if k in ("q", "k", "v"):
        p = k.upper()
        return linear(src, env, f"W_{p}", f"b_{p}")
    if k == "scores":
        lo, hi = head_columns(name, spec.dims)
        return env["attn.q"].cols(lo, hi) @ env["attn.k"].cols(lo, hi).T
    if k == "scaled":
        lo, hi = head_columns(name, spec.dims)
        return src.scale(1 / exact.sqrt(num(hi - lo)))
    if k == "masked":
        return causal_mask(src)
    if k == "weights":
        return softmax_rows(src)
    if k == "head_out":
        lo, hi = head_columns(name, spec.dims)
        return src @ env["attn.v"].cols(lo, hi)
    if k == "concat":
        return Mat.hstack([env[i] for i in ins])
    if k == "attn_out":
        return linear(src, env, "W_O", "b_O") if o.out_proj else src
    if k == "resid":
        return env[ins[0]] + env[ins[1]]
    if k == "hidden":
        return linear(src, env, "W_1", "b_1")
    if k == "gate":
        return linear(src, env, "W_3", "b_3")
    if k == "act":
        return activate(src, env, spec)
    if k == "ffn_out":
        return linear(src, env, "W_2", "b_2")
    if k == "output":
        return src
    prefix = norm_prefix(name)
    eps = num(o.eps)
    if k == "mean":
        return row_mean(src)
    if k == "var":
        return centred_var(src, env[f"{prefix}.mean"])
    if k in ("std", "rms"):
        return src.map(lambda v: exact.sqrt(v + eps))
    if k == "ms":
        return row_meansq(src)
    ln = ln_of(prefix)
    if o.norm == "layernorm":
        return affine((src - env[f"{prefix}.mean"]) / env[f"{prefix}.std"], env, ln)
    return affine(src / env[f"{prefix}.rms"], env, ln, beta=False)
