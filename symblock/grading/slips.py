"""The rules of the mistake catalogue that recompute attention (its online-softmax tiles too),
dropout and tiny-GPT steps with one slip each, from the values in `env` (the catalogue itself, and the norm and FFN rules, are in
mistakes.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from symblock.engine import exact, names
from symblock.engine.matrix import Mat
from symblock.engine.steps import head_columns
from symblock.grading import recompute
from symblock.grading.recompute import (
    apply_mask, attention_mask, full_norm, inputs_of, kind, linear, ln_of, mask_with, num, pad_of, softmax_cols, softmax_rows,)

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
    lo, hi = head_columns(name, spec.dims)
    q, k = inputs_of(name, spec)
    return [env[k].cols(lo, hi) @ env[q].cols(lo, hi).T]


def mask_after_softmax(name, env, spec: BlockSpec):
    return [mask_with(softmax_rows(unmasked(name, env, spec)), exact.ZERO, attention_mask(name, spec))]


def mask_zero(name, env, spec: BlockSpec):
    m = mask_with(unmasked(name, env, spec), exact.ZERO, attention_mask(name, spec))
    return [m] if kind(name) == "masked" else [softmax_rows(m)]


def mask_missing(name, env, spec: BlockSpec):
    """The causal mask left out (a padding mask, if any, applied)."""
    m = mask_with(unmasked(name, env, spec), exact.NEG_INF, attention_mask(name, spec, causal=False))
    return [m] if kind(name) == "masked" else [softmax_rows(m)]


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
#   has −∞ there for scores (a person who writes it as masked) and 0 for weights, and a blank is
#   not held against it; the head's output mixes the old value rows only.
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
        and step.part in ("scores", "scaled", "weights", "out")


def _pad(m: Mat, fill) -> Mat:
    return Mat([[*row, fill] for row in m.rows])


def _drop_last(m: Mat) -> Mat:
    return Mat([list(row[:-1]) for row in m.rows])


def not_appended(name: str, env: dict, spec) -> list[Mat]:
    step = names.parse(name)
    t, layer, kind, h = step.gen, step.layer, step.part, step.head
    dims, o = spec.layers[layer].dims, spec.layers[layer].options
    k_old, v_old = env[recompute.old_cache(t, layer, "k")], env[recompute.old_cache(t, layer, "v")]
    lo, hi, vlo, vhi = h * dims.d_k, (h + 1) * dims.d_k, h * dims.d_v, (h + 1) * dims.d_v
    scores = env[step.sibling("attn.q")].cols(lo, hi) @ k_old.cols(lo, hi).T
    scale = o.attention_scale == "sqrt_dk"
    scaled = scores.scale(1 / exact.sqrt(exact.real(dims.d_k))) if scale else scores
    if kind == "scores":
        return [_pad(scores, exact.NEG_INF)]
    if kind == "scaled":
        return [_pad(scaled, exact.NEG_INF)]
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
    if spec.positions == "none":
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


# ---------------------------------------------------------------- a decoder layer's cross-attention
# The catalogued slips of a decoder layer's cross-attention (mistakes.CATALOGUE): each recomputes
# ONE cross step from the values before it (the person's chain, else the truth) with the slip made.
#
# The cross-attention's queries come from the decoder, its keys and values from the memory M, and
# it has no causal mask (engine/cross.py). The slips: K and V taken from the decoder's rows, Q taken
# from the memory, the causal mask laid on it as on the self-attention, and in a Post-LN layer its
# norm placed as in Pre-LN (the decoder rows normalised by N2 before the cross-attention, and no
# norm after its residual). A slip that changes a step's shape (decoder rows for memory rows) can
# be seen only where the decoder has as many rows as the memory; elsewhere its candidate has the
# wrong shape and matches nothing.

def crossing(spec: BlockSpec) -> bool:
    return bool(spec.options.cross_attention)


def _query_source(name: str, env, spec: BlockSpec):
    """The decoder rows the cross-attention's queries read (H1 in Post-LN, N2(R1) in Pre-LN)."""
    return env[inputs_of(names.parse(name).sibling("cross.q"), spec)[0]]


def _proj(name: str, env, spec: BlockSpec, which: str, src):
    step = names.parse(name).sibling(f"cross.{which}")
    _, w, b = inputs_of(step, spec)
    return linear(src, env, w, b)


def _scores(name: str, q, k, spec: BlockSpec):
    lo, hi = head_columns(name, spec.dims)
    return q.cols(lo, hi) @ k.cols(lo, hi).T


def kv_from_decoder(name, env, spec: BlockSpec):
    """K and V projected from the decoder's rows (as in self-attention) instead of the memory."""
    src = _query_source(name, env, spec)
    k = kind(name)
    if k in ("cross_k", "cross_v"):
        return [_proj(name, env, spec, k[-1], src)]
    q = env[names.parse(name).sibling("cross.q")]
    return [_scores(name, q, _proj(name, env, spec, "k", src), spec)]


def queries_from_memory(name, env, spec: BlockSpec):
    """Q projected from the memory instead of the decoder's rows."""
    m = env[inputs_of(names.parse(name).sibling("cross.k"), spec)[0]]
    q = _proj(name, env, spec, "q", m)
    if kind(name) == "cross_q":
        return [q]
    return [_scores(name, q, env[names.parse(name).sibling("cross.k")], spec)]


def causal_on_cross(name, env, spec: BlockSpec):
    """The causal mask (memory column j > decoder row i) laid on the cross-attention's scores,
    beside its memory padding."""
    p = names.parse(name)
    scaled = p.head_step("scaled")
    s = env[scaled] if scaled in env else env[p.head_step("scores")]
    pad = list(spec.memory_padding_mask) or [False] * s.shape[1]
    masked = [[j > i or pad[j] for j in range(s.shape[1])] for i in range(s.shape[0])]
    m = apply_mask(s, masked, exact.NEG_INF)
    return [m] if kind(name) == "cross_masked" else [softmax_rows(m)]


def causal_applies(name, spec: BlockSpec) -> bool:
    return crossing(spec) and kind(name) in ("cross_masked", "cross_weights")


def norm_as_pre(name, env, spec: BlockSpec):
    """Post-LN layer, its cross-attention's norm placed as in Pre-LN: the queries read N2(H1)
    and the rows after the residual are left unnormalised (norm2 = resid2)."""
    p = names.parse(name)
    if kind(name) == "cross_q":
        src = full_norm(_query_source(name, env, spec), env, ln_of(p.sibling("norm2")), spec)
        return [_proj(name, env, spec, "q", src)]
    return [env[p.sibling("resid2")]]


def norm_as_pre_applies(name, spec: BlockSpec) -> bool:
    if not crossing(spec) or spec.options.norm_position != "post":
        return False
    p = names.parse(name)
    return kind(name) == "cross_q" or (p.norm == "norm2" and p.stat is None)


def _kinds(*ks: str):
    return lambda name, spec: crossing(spec) and kind(name) in ks


# (code, explanation, where, applies, compute): mistakes.Mistake's fields, in its CATALOGUE
CROSS = (
    ("cross_kv_from_decoder", "cross-attention keys and values projected from the decoder's rows instead "
     "of the memory (the encoder's output)", "cross.k, cross.v, cross.h*.scores",
     _kinds("cross_k", "cross_v", "cross_scores"), kv_from_decoder),
    ("cross_causal_mask", "causal mask applied to the cross-attention, which masks only padded memory rows",
     "cross.h*.masked / .weights", causal_applies, causal_on_cross),
    ("cross_queries_from_memory", "cross-attention queries projected from the memory instead of the "
     "decoder's rows", "cross.q, cross.h*.scores", _kinds("cross_q", "cross_scores"), queries_from_memory),
    ("cross_norm_as_pre_ln", "in a Post-LN decoder layer the cross-attention's norm placed as in Pre-LN "
     "(its input normalised by N2, its residual left unnormalised)", "cross.q, norm2",
     norm_as_pre_applies, norm_as_pre),
)


# ---------------------------------------------------------------- sinusoidal positions
#
# * pe_sin_cos_swapped: cos in the even columns and sin in the odd ones (the pair written the
#   other way round, as some tables print it), in the whole table or in one row of it.
# * pe_base_10000: the original paper's base 10000 used where the spec gives another (a table
#   worked with n = 100, as a tutorial prints it, is its own exercise).
# Each candidate is the true table with the slip made in every row, or in one row only, so a
# table with one slipped row is named; the checker marks the other rows correct anyway.

def sinusoid_applies(name: str, spec) -> bool:
    step = names.parse(name)
    return getattr(spec, "positions", None) == "sinusoidal" and step.layer is None and step.kind == "pos"


def base_applies(name: str, spec) -> bool:
    return sinusoid_applies(name, spec) and spec.pe_base != 10000


def _pe_positions(name: str, spec) -> list[int]:
    """The positions (from 0) of the rows a pos step holds."""
    step = names.parse(name)
    if step.encoder:
        return list(range(len(spec.source_tokens)))
    if recompute.cached(spec, step.gen):
        return [recompute.position(spec, step.gen)]
    return list(range(recompute.rows_of(spec, step.gen)))


def _pe_table(name: str, spec, slipped_row) -> list[Mat]:
    """The true table with `slipped_row(p)` in every row, then in each single row."""
    from symblock.engine.model import sinusoidal_row
    ps = _pe_positions(name, spec)
    true = [sinusoidal_row(p, spec.dims.d_model, spec.pe_base) for p in ps]
    slipped = [slipped_row(p) for p in ps]
    out = [Mat(slipped)]
    if len(ps) > 1:
        out += [Mat([slipped[i] if i == r else true[i] for i in range(len(ps))]) for r in range(len(ps))]
    return out


def sin_cos_swapped(name: str, env: dict, spec) -> list[Mat]:
    """Swapped in every pair of the table, of one row, or one pair of one row only."""
    from symblock.engine.model import sinusoidal_row

    def swapped(p: int, pair: int | None = None) -> list:
        row = sinusoidal_row(p, spec.dims.d_model, spec.pe_base)
        return [row[j ^ 1] if pair in (None, j // 2) else row[j] for j in range(len(row))]
    out = _pe_table(name, spec, swapped)
    ps, d = _pe_positions(name, spec), spec.dims.d_model
    if d > 2:
        true = [sinusoidal_row(p, d, spec.pe_base) for p in ps]
        out += [Mat([swapped(p, pair) if i == r else true[i] for i, p in enumerate(ps)])
                for r in range(len(ps)) for pair in range(d // 2)]
    return out


def base_10000(name: str, env: dict, spec) -> list[Mat]:
    from symblock.engine.model import sinusoidal_row
    return _pe_table(name, spec, lambda p: sinusoidal_row(p, spec.dims.d_model, 10000))


POSITIONS = (
    ("pe_sin_cos_swapped", "sinusoidal positions with sine and cosine swapped: cos in the even columns "
     "(2i) and sin in the odd ones (2i + 1), instead of sin(p / n^(2i/d)) then cos", "pos, enc.pos, gen*.pos",
     sinusoid_applies, sin_cos_swapped),
    ("pe_base_10000", "sinusoidal positions worked with the base n = 10000 of the original paper instead "
     "of the base the table gives (model.pe_base)", "pos, enc.pos, gen*.pos", base_applies, base_10000),
)
