"""The rules of the mistake catalogue that recompute attention (the online-softmax tiles too),
dropout and tiny-GPT steps with one slip each, from the values in `env` (the catalogue itself, and
the norm and FFN rules, are in mistakes.py). The families of a decoder layer's cross-attention and of
RoPE with grouped K/V heads are this package's `cross` and `rope` modules.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from symblock.engine import exact, names
from symblock.engine.matrix import Mat
from symblock.engine.steps import head_columns, key_columns, value_columns
from symblock.grading import recompute
from symblock.grading.recompute import (
    attention_mask, inputs_of, kind, mask_with, num, pad_of, softmax_cols, softmax_rows,)

if TYPE_CHECKING:
    from symblock.engine.spec import BlockSpec


def masks(spec: BlockSpec) -> bool:
    return spec.options.causal or spec.options.padding


def scaled_by(name, env, spec: BlockSpec, factor):
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


def sqrt_irrational(spec: BlockSpec) -> bool:
    import math
    d = spec.dims.d_k
    return spec.options.attention_scale == "sqrt_dk" and math.isqrt(d) ** 2 != d


def scale_approximated(name, env, spec: BlockSpec):
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


def no_scale(name, env, spec: BlockSpec):
    return scaled_by(name, env, spec, exact.ONE)


def scale_d_model(name, env, spec: BlockSpec):
    return scaled_by(name, env, spec, 1 / exact.sqrt(num(spec.dims.d_model)))


def scale_no_sqrt(name, env, spec: BlockSpec):
    return scaled_by(name, env, spec, 1 / num(spec.dims.d_head))


def softmax_input(name, env, spec: BlockSpec):
    from symblock.engine.steps import step_inputs
    return env[step_inputs(spec.dims, spec.options)[name][0]]


def unmasked(name, env, spec: BlockSpec):
    scaled, scores = names.parse(name).head_step("scaled"), names.parse(name).head_step("scores")
    return env[scaled] if scaled in env else env[scores]


def softmax_axis(name, env, spec: BlockSpec):
    return [softmax_cols(softmax_input(name, env, spec))]


def scores_transposed(name, env, spec: BlockSpec):
    q, k = inputs_of(name, spec)
    return [env[k].cols(*key_columns(name, spec.dims)) @ env[q].cols(*head_columns(name, spec.dims)).T]


def mask_after_softmax(name, env, spec: BlockSpec):
    return [mask_with(softmax_rows(unmasked(name, env, spec)), exact.ZERO, attention_mask(name, spec))]


def mask_zero(name, env, spec: BlockSpec):
    m = mask_with(unmasked(name, env, spec), exact.ZERO, attention_mask(name, spec))
    return [m] if kind(name) == "masked" else [softmax_rows(m)]


def mask_missing(name, env, spec: BlockSpec):
    """The causal mask left out (a padding mask, if any, applied)."""
    m = mask_with(unmasked(name, env, spec), exact.NEG_INF, attention_mask(name, spec, causal=False))
    return [m] if kind(name) == "masked" else [softmax_rows(m)]


def causal_added(name, env, spec: BlockSpec):
    """A causal mask laid on attention that has none (an encoder's, which attends both ways)."""
    m = mask_with(unmasked(name, env, spec), exact.NEG_INF, attention_mask(name, spec, causal=True))
    return [m] if kind(name) == "masked" else [softmax_rows(m)]


def causal_added_applies(name: str, spec: BlockSpec) -> bool:
    return not spec.options.causal and kind(name) in ("masked", "weights") and spec.dims.seq_len > 1


# (code, explanation, where, applies, compute): a mask the block does not have
MASKS = (("causal_mask_added", "causal mask applied where the attention has none (an encoder attends both "
          "ways: every token sees every other)", "attn.h*.masked / .weights (no causal mask)",
          causal_added_applies, causal_added),)


def padding_missing(name, env, spec: BlockSpec):
    """The key padding mask left out (the causal mask, if any, applied)."""
    m = mask_with(unmasked(name, env, spec), exact.NEG_INF, attention_mask(name, spec, padding=False))
    return [m] if kind(name) == "masked" else [softmax_rows(m)]


def padding_on_queries(name, env, spec: BlockSpec):
    """The padding mask laid on the rows (queries) instead of the columns (keys): a padded
    query's row is all −∞, and its weights are written as zeros."""
    pad = pad_of(name, spec)
    rows = attention_mask(name, spec, padding=False)
    masked = [[m or bool(pad[i]) for m in r] for i, r in enumerate(rows)]
    m = mask_with(unmasked(name, env, spec), exact.NEG_INF, masked)
    if kind(name) == "masked":
        return [m]
    return [softmax_rows(m)]  # a padded query's row, all −∞, as zeros


def dropout_no_rescale(name, env, spec: BlockSpec):
    (src,) = inputs_of(name, spec)
    return [env[src] * Mat.from_sympy(spec.dropout_masks[src])]


# The slips of a tiny GPT's steps (mistakes.MODEL_CATALOGUE): each recomputes ONE model step
# from the values before it (the person's chain, else the truth) with the slip made.
#
# * cache_not_appended: the new row's scores and weights taken against the cache *before* its own
#   key and value were appended (m − 1 keys). Its last column then does not exist: the candidate
#   has −∞ or 0 there for scores (a person who writes it as masked, or as nothing) and 0 for
#   weights, and a blank is not held against it; the head's output mixes the old value rows only.
# * position_reused: the new token given the position of an earlier one (rows 1 … p of W_P, or
#   those sinusoids, instead of row p + 1): shows in gen*.pos, gen*.x and the first layer's steps
#   that read x.
# * logits_untied_transpose: the head used the wrong way round: H W_E for a tied head (instead of
#   H W_Eᵀ) or H W_Uᵀ for an untied one. Both need d_model = vocabulary size (W_E is vocab × d):
#   for any other model the slip cannot be written down, so it does not apply.

# ---------------------------------------------------------------- cache_not_appended

def not_appended_applies(name: str, spec) -> bool:
    step = names.parse(name)
    return step.layer is not None and recompute.cached(spec, step.gen) and step.head is not None \
        and step.sublayer == "attn" and step.part in ("scores", "scaled", "weights", "out")   # not cross.*: no cache grows


def _pad(m: Mat, fill) -> Mat:
    return Mat([[*row, fill] for row in m.rows])


def _drop_last(m: Mat) -> Mat:
    return Mat([list(row[:-1]) for row in m.rows])


def not_appended(name: str, env: dict, spec) -> list[Mat]:
    step = names.parse(name)
    t, layer, kind = step.gen, step.layer, step.part
    dims, o = spec.layers[layer].dims, spec.layers[layer].options
    k_old, v_old = env[recompute.old_cache(t, layer, "k", spec)], env[recompute.old_cache(t, layer, "v", spec)]
    lo, hi = head_columns(step.local, dims)
    (klo, khi), (vlo, vhi) = key_columns(step.local, dims), value_columns(step.local, dims)  # its K/V head
    q = step.sibling("attn.q_rot" if o.rope else "attn.q")
    scores = env[q].cols(lo, hi) @ k_old.cols(klo, khi).T
    scale = o.attention_scale == "sqrt_dk"
    scaled = scores.scale(1 / exact.sqrt(exact.real(dims.d_k))) if scale else scores
    if kind in ("scores", "scaled"):   # the missing key's entry written as masked, or as 0
        return [_pad(scores if kind == "scores" else scaled, fill) for fill in (exact.NEG_INF, exact.ZERO)]
    src = env.get(step.head_step("scaled" if scale else "scores"))
    weights = [softmax_rows(scaled)] + ([softmax_rows(_drop_last(src))] if src is not None else [])
    if kind == "weights":
        return [_pad(w, exact.ZERO) for w in weights]
    mine = env.get(step.head_step("weights"))
    if mine is not None:
        weights.append(_drop_last(mine))
    return [w @ v_old.cols(vlo, vhi) for w in weights]


# ---------------------------------------------------------------- position_reused

def _reads_x(step, spec) -> bool:
    """Whether the first layer's step reads x: resid1, and norm1 (Pre-LN) or q, k, v (Post-LN)."""
    pre = spec.layers[0].options.norm_position == "pre"
    return step.local == "resid1" or (step.norm == "norm1" if pre else step.local in ("attn.q", "attn.k", "attn.v"))


def position_applies(name: str, spec) -> bool:
    if spec.positions in ("none", "rope"):   # RoPE: no position rows (its own slips: below)
        return False
    step = names.parse(name)
    if not recompute.cached(spec, step.gen):
        return False
    return (step.layer is None and step.local in ("pos", "x")) or (step.layer == 0 and _reads_x(step, spec))


def position_reused(name: str, env: dict, spec) -> list[Mat]:
    step = names.parse(name)
    t = step.gen
    out = []
    for j in range(recompute.position(spec, t)):   # every earlier position, the first and the last one above all
        pos = recompute.position_rows(spec, env, [j])
        if step.local == "pos":
            out.append(pos)
            continue
        x = env[names.name_of("embed", gen=t)] + pos
        if step.local == "x":
            out.append(x)
            continue
        out.append(recompute.recompute(name, {**env, names.name_of("x", gen=t): x}, spec))
    return out


# ---------------------------------------------------------------- logits_untied_transpose

def transpose_applies(name: str, spec) -> bool:
    step = names.parse(name)
    return step.layer is None and step.kind in ("logits", "probs") and spec.dims.d_model == len(spec.vocab)


def untied_transpose(name: str, env: dict, spec) -> list[Mat]:
    step = names.parse(name)
    h = env[recompute.last_hidden(spec, step.gen)]
    logits = h @ env["W_E"] if spec.head == "tied" else h @ env["W_U"].T
    return [logits] if step.kind == "logits" else [softmax_rows(logits)]


# ---------------------------------------------------------------- the online softmax's tiles

def later_tile(*kinds: str):
    """Applies to these tile kinds from the second tile on (the first has nothing to rescale)."""
    def applies(name: str, spec) -> bool:
        p = names.parse(name)
        return p.kind in kinds and bool(p.tile)
    return applies


def _tile_keys(name: str, spec) -> range:
    from symblock.engine.tiles import key_blocks
    return key_blocks(spec.dims.seq_len, spec.options.attention_tiles)[names.parse(name).tile]


def sum_not_rescaled(name: str, env: dict, spec):
    """ℓ_j = ℓ_{j−1} + Σ e^(s − m_j): the earlier sum kept against the old maximum."""
    from symblock.engine.online_softmax import running_sum
    ps, _, m, s = inputs_of(name, spec)
    return [env[ps] + running_sum(env[s], _tile_keys(name, spec), None, env[m], None)]


def acc_not_rescaled(name: str, env: dict, spec):
    """a_j = a_{j−1} + Σ e^(s − m_j) v: the earlier accumulator kept against the old maximum."""
    from symblock.engine.online_softmax import running_acc
    from symblock.engine.steps import value_columns
    pa, _, m, s, v = inputs_of(name, spec)
    vals = env[v].cols(*value_columns(name, spec.dims))
    return [env[pa] + running_acc(env[s], vals, _tile_keys(name, spec), None, env[m], None)]


# the families with their own module: (code, explanation, where, applies, compute) rows
from symblock.grading.slips.cross import CROSS  # noqa: E402
from symblock.grading.slips.positions import POSITIONS  # noqa: E402
from symblock.grading.slips.rope import ROPE_CATALOGUE  # noqa: E402

__all__ = ["CROSS", "MASKS", "POSITIONS", "ROPE_CATALOGUE"]   # re-exported for mistakes' catalogues
