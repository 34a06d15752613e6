"""The attention and dropout rules of the mistake catalogue (mistakes.py): each recomputes one
head step (or a `.dropped` step) with one slip, from the values in `env` (see mistakes.py)."""
from __future__ import annotations

from symblock.engine import exact, names
from symblock.engine.matrix import Mat
from symblock.engine.steps import head_columns
from symblock.grading.onestep import (attention_mask, inputs_of, kind, mask_with, num, pad_of,
                                      softmax_cols, softmax_rows)


def masks(spec) -> bool:
    return spec.options.causal or spec.options.padding


def scaled_by(name, env, spec, factor):
    """The head's chain from scores with `factor` in place of 1/sqrt(d_k)."""
    k = kind(name)
    s = env[names.parse(name).head_step("scores")].scale(factor)
    if k == "scaled":
        return [s]
    if masks(spec):
        s = mask_with(s, exact.NEG_INF, attention_mask(name, spec))
        if k == "masked":
            return [s]
    return [softmax_rows(s)]


def sqrt_irrational(spec) -> bool:
    import math
    d = spec.dims.d_k
    return spec.options.attention_scale == "sqrt_dk" and math.isqrt(d) ** 2 != d


def scale_approximated(name, env, spec):
    """Divided by √d_k rounded to 1–3 decimals (√3 ≈ 1.7, 1.73, 1.732), or multiplied by
    1/√d_k rounded so (0.6, 0.58, 0.577)."""
    from decimal import ROUND_HALF_UP, Decimal
    from fractions import Fraction
    root = exact.sqrt(num(spec.dims.d_k))
    out = []
    for places in (1, 2, 3):
        for x, divide in ((root, True), (1 / root, False)):
            r = exact.real(Fraction(str(x.decimal(places + 6).quantize(Decimal(1).scaleb(-places),
                                                                          rounding=ROUND_HALF_UP))))
            out += scaled_by(name, env, spec, 1 / r if divide else r)
    return out


def no_scale(name, env, spec):
    return scaled_by(name, env, spec, exact.ONE)


def scale_d_model(name, env, spec):
    return scaled_by(name, env, spec, 1 / exact.sqrt(num(spec.dims.d_model)))


def scale_no_sqrt(name, env, spec):
    return scaled_by(name, env, spec, 1 / num(spec.dims.d_head))


def softmax_input(name, env, spec):
    from symblock.engine.steps import step_inputs
    return env[step_inputs(spec.dims, spec.options)[name][0]]


def unmasked(name, env, spec):
    scaled, scores = names.parse(name).head_step("scaled"), names.parse(name).head_step("scores")
    return env[scaled] if scaled in env else env[scores]


def softmax_axis(name, env, spec):
    return [softmax_cols(softmax_input(name, env, spec))]


def scores_transposed(name, env, spec):
    lo, hi = head_columns(name, spec.dims)
    q, k = inputs_of(name, spec)
    return [env[k].cols(lo, hi) @ env[q].cols(lo, hi).T]


def mask_after_softmax(name, env, spec):
    return [mask_with(softmax_rows(unmasked(name, env, spec)), exact.ZERO, attention_mask(name, spec))]


def mask_zero(name, env, spec):
    m = mask_with(unmasked(name, env, spec), exact.ZERO, attention_mask(name, spec))
    return [m] if kind(name) == "masked" else [softmax_rows(m)]


def mask_missing(name, env, spec):
    """The causal mask left out (a padding mask, if any, applied)."""
    m = mask_with(unmasked(name, env, spec), exact.NEG_INF, attention_mask(name, spec, causal=False))
    return [m] if kind(name) == "masked" else [softmax_rows(m)]


def padding_missing(name, env, spec):
    """The key padding mask left out (the causal mask, if any, applied)."""
    m = mask_with(unmasked(name, env, spec), exact.NEG_INF, attention_mask(name, spec, padding=False))
    return [m] if kind(name) == "masked" else [softmax_rows(m)]


def padding_on_queries(name, env, spec):
    """The padding mask laid on the rows (queries) instead of the columns (keys): a padded
    query's row is all −∞, and its weights are written as zeros."""
    pad = pad_of(name, spec)
    rows = attention_mask(name, spec, padding=False)
    masked = [[m or bool(pad[i]) for m in r] for i, r in enumerate(rows)]
    m = mask_with(unmasked(name, env, spec), exact.NEG_INF, masked)
    if kind(name) == "masked":
        return [m]
    return [softmax_rows(m)]  # a padded query's row, all −∞, as zeros


def dropout_no_rescale(name, env, spec):
    (src,) = inputs_of(name, spec)
    return [env[src] * Mat.from_sympy(spec.dropout_masks[src])]


