"""One step of the block, recomputed exactly from whatever values its inputs are given.

The checker needs this twice: to recompute a step from a person's own earlier answers (error
carried forward, rounding carried forward) and, with a rule changed, to name a mistake
(mistakes.py). `env` maps step and parameter names (steps.step_inputs) to exact matrices; an
absent bias is simply not in it. The formulas are DESIGN.md's conventions, written per step.
"""
from __future__ import annotations

from symblock.engine import exact, names
from symblock.engine.block import ACTIVATIONS, apply_mask, softmax
from symblock.engine.matrix import Mat
from symblock.engine.steps import (batch_index, head_columns, masked_positions, split_batch, step_inputs,
                                   value_columns)
from symblock.engine.steps import step_kind as kind


def norm_prefix(name: str) -> str:
    """The norm a step belongs to, with its batch prefix: "b1.norm2" for "b1.norm2.std"."""
    step = names.parse(name)
    return step.sibling(step.norm)


def ln_of(prefix: str) -> str:
    return {"norm1": "ln1", "norm2": "ln2", "norm_final": "ln_final"}[split_batch(prefix)[1]]


def inputs_of(name: str, spec) -> tuple[str, ...]:
    """A step's inputs in the step graph (batch-prefixed, `.dropped` where a mask sits)."""
    return step_inputs(spec.dims, spec.options)[name]


def pad_of(name: str, spec):
    """The padding row of the sequence step `name` belongs to (None without a padding mask)."""
    return spec.key_padding_mask[batch_index(name)] if spec.key_padding_mask else None


def attention_mask(name: str, spec, causal: bool | None = None, padding: bool = True) -> list[list[bool]]:
    """Which scores of head step `name` are masked: the causal mask (unless `causal` says
    otherwise) and, with `padding`, the sequence's key padding mask."""
    n = spec.dims.seq_len
    return masked_positions(n, spec.options.causal if causal is None else causal,
                            pad_of(name, spec) if padding else None)


def norm_source(prefix: str, spec) -> str:
    """The step a norm normalises (its first input in the step graph)."""
    return step_inputs(spec.dims, spec.options)[prefix][0]


# ---------------------------------------------------------------- small exact helpers

def num(v) -> exact.Real:
    return exact.from_sympy(v)  # ints and Fractions (a spec's ε, p) without importing SymPy


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


def _softmax_or_zeros(r: tuple) -> list:
    """A row's softmax; a row with every entry masked (a person's masks can leave one, and the
    softmax has no terms) is written as zeros."""
    return softmax(r) if any(e is not exact.NEG_INF for e in r) else [exact.ZERO] * len(r)


def softmax_rows(m: Mat) -> Mat:
    return m.map_rows(_softmax_or_zeros)


def softmax_cols(m: Mat) -> Mat:
    """Softmax down each column (a column of a padding key, all masked, is zeros)."""
    return m.T.map_rows(_softmax_or_zeros).T


def mask_with(m: Mat, fill, masked: list[list[bool]] | None = None) -> Mat:
    """`fill` where `masked` (default: the causal mask, j > i)."""
    if masked is None:
        masked = masked_positions(m.shape[0], True, None)
    return apply_mask(m, masked, fill)


def activate(hidden: Mat, env, spec, activation: str | None = None, prefix: str = "") -> Mat:
    act = ACTIVATIONS[activation or spec.options.activation][0]
    out = hidden.map(act)
    return out * env[f"{prefix}ffn.gate"] if spec.options.gated else out


def dropout_scale(spec) -> exact.Real:
    return num(1 / (1 - spec.dropout_p))


# ---------------------------------------------------------------- the correct step

def compute(name: str, env, spec) -> Mat:
    """The step `name` computed correctly from the values in `env` (its inputs, and parameters):
    the recompute its kind names in RECOMPUTE."""
    ins = step_inputs(spec.dims, spec.options)[name]
    return RECOMPUTE[kind(name)](name, ins, env, spec)


def _linear_as(w: str, b: str):
    return lambda name, ins, env, spec: linear(env.get(ins[0]), env, w, b)


def _projection(name, ins, env, spec):
    p = kind(name).upper()
    return linear(env.get(ins[0]), env, f"W_{p}", f"b_{p}")


def _scores(name, ins, env, spec):
    lo, hi = head_columns(name, spec.dims)
    return env[ins[0]].cols(lo, hi) @ env[ins[1]].cols(lo, hi).T


def _scaled(name, ins, env, spec):
    lo, hi = head_columns(name, spec.dims)
    return env[ins[0]].scale(1 / exact.sqrt(num(hi - lo)))


def _dropped(name, ins, env, spec):
    return (env[ins[0]] * Mat.from_sympy(spec.dropout_masks[ins[0]])).scale(dropout_scale(spec))


def _attn_out(name, ins, env, spec):
    return linear(env[ins[0]], env, "W_O", "b_O") if spec.options.out_proj else env[ins[0]]


def _var(name, ins, env, spec):
    return centred_var(env[ins[0]], env[f"{norm_prefix(name)}.mean"])


def _root(name, ins, env, spec):
    eps = num(spec.options.eps)
    return env[ins[0]].map(lambda v: exact.sqrt(v + eps))


def _normalised(name, ins, env, spec):
    prefix, src = norm_prefix(name), env[ins[0]]
    ln = ln_of(prefix)
    if spec.options.norm == "layernorm":
        return affine((src - env[f"{prefix}.mean"]) / env[f"{prefix}.std"], env, ln)
    return affine(src / env[f"{prefix}.rms"], env, ln, beta=False)


def _first(name, ins, env, spec):
    return env[ins[0]]


# The recompute of each kind of step (engine/kinds.py) from a person's own inputs.
RECOMPUTE = {
    "x": _first, "output": _first,
    "q": _projection, "k": _projection, "v": _projection,
    "scores": _scores, "scaled": _scaled,
    "masked": lambda name, ins, env, spec: apply_mask(env[ins[0]], attention_mask(name, spec)),
    "weights": lambda name, ins, env, spec: softmax_rows(env[ins[0]]),
    "head_out": lambda name, ins, env, spec: env[ins[0]] @ env[ins[1]].cols(*value_columns(name, spec.dims)),
    "dropped": _dropped,
    "concat": lambda name, ins, env, spec: Mat.hstack([env[i] for i in ins]),
    "attn_out": _attn_out,
    "resid": lambda name, ins, env, spec: env[ins[0]] + env[ins[1]],
    "hidden": _linear_as("W_1", "b_1"), "gate": _linear_as("W_3", "b_3"), "ffn_out": _linear_as("W_2", "b_2"),
    "act": lambda name, ins, env, spec: activate(env.get(ins[0]), env, spec, prefix=split_batch(name)[0]),
    "mean": lambda name, ins, env, spec: row_mean(env[ins[0]]),
    "var": _var, "std": _root, "rms": _root,
    "ms": lambda name, ins, env, spec: row_meansq(env[ins[0]]),
    "norm": _normalised,
}


def equivalents(name: str, env, spec) -> list[Mat]:
    """Other right values of step `name`: the order DESIGN.md marks correct too. Masking the raw
    scores and then scaling gives the same weights, so `.masked` may hold the masked raw scores
    and `.scaled` the scaled masked scores."""
    k, o = kind(name), spec.options
    if not (o.causal or o.padding) or o.attention_scale != "sqrt_dk":
        return []
    if k == "scaled":
        return [apply_mask(compute(name, env, spec), attention_mask(name, spec))]
    if k == "masked":
        return [apply_mask(env[names.parse(name).head_step("scores")], attention_mask(name, spec))]
    return []
