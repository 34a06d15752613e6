"""The mistake catalogue: each known slip as data (a stable code, a one-line explanation, the steps
it shows in, and the step recomputed with the slip), and `diagnose`, which names every slip whose
recomputation reproduces a person's wrong numbers.

A rule recomputes ONE step from the values before it (the person's own answers where given, else
the values their chain implies, else the truth), so a slip is named where it was made; later
steps built on it are then marked `carried` by the checker, not diagnosed again.
Add a slip by adding a `Mistake` to CATALOGUE; codes are stable identifiers (docs/tutorials/student.md lists them).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from symblock.engine import exact, kinds, names
from symblock.engine.matrix import Mat
from symblock.engine.steps import split_batch
from symblock.grading import slips
from symblock.grading.slips import (
    dropout_no_rescale, mask_after_softmax, mask_missing, mask_zero, masks, no_scale,
    padding_missing, padding_on_queries, scale_approximated, scale_d_model, scale_no_sqrt,
    scores_transposed, softmax_axis, sqrt_irrational,)
from symblock.grading.recompute import (
    activate, affine, centred_var, full_norm, inputs_of, kind, linear, ln_of, norm_prefix,
    norm_source, num, row_mean, row_meansq,)


@dataclass(frozen=True)
class Mistake:
    code: str
    explanation: str
    where: str                                   # the steps it applies to, for people
    applies: Callable[[str, object], bool]       # (step name, spec) -> bool
    compute: Callable[[str, dict, object], Sequence[Mat]]  # candidate values of the step


def _pre(spec) -> bool:
    return spec.options.norm_position == "pre"


def _kinds(*ks: str, when: Callable[[object], bool] = lambda spec: True):
    return lambda name, spec: kind(name) in ks and when(spec)


def _eps(spec):
    return num(spec.options.eps)


def _ln(spec) -> bool:
    return spec.options.norm == "layernorm"


# ---------------------------------------------------------------- norms

def _sample_variance(name, env, spec):
    p = norm_prefix(name)
    src, d = env[norm_source(p, spec)], spec.dims.d_model
    if d < 2:
        return []
    var = centred_var(src, env[f"{p}.mean"], d - 1)
    k = kind(name)
    if k == "var":
        return [var]
    std = var.map(lambda v: exact.sqrt(v + _eps(spec)))
    if k == "std":
        return [std]
    return [affine((src - env[f"{p}.mean"]) / std, env, ln_of(p))]


def _eps_outside(name, env, spec):
    p, k, eps = norm_prefix(name), kind(name), _eps(spec)
    stat = f"{p}.var" if _ln(spec) else f"{p}.ms"
    root = env[stat].map(lambda v: exact.sqrt(v) + eps)
    if k in ("std", "rms"):
        return [root]
    src = env[norm_source(p, spec)]
    if _ln(spec):
        return [affine((src - env[f"{p}.mean"]) / root, env, ln_of(p))]
    return [affine(src / root, env, ln_of(p), beta=False)]


def _no_sqrt(name, env, spec):
    p, k, eps = norm_prefix(name), kind(name), _eps(spec)
    stat = f"{p}.var" if _ln(spec) else f"{p}.ms"
    den = env[stat].map(lambda v: v + eps)
    if k in ("std", "rms"):
        return [den]
    src = env[norm_source(p, spec)]
    if _ln(spec):
        return [affine((src - env[f"{p}.mean"]) / den, env, ln_of(p))]
    return [affine(src / den, env, ln_of(p), beta=False)]


def _affine_missing(name, env, spec):
    p = norm_prefix(name)
    src = env[norm_source(p, spec)]
    if _ln(spec):
        return [(src - env[f"{p}.mean"]) / env[f"{p}.std"]]
    return [src / env[f"{p}.rms"]]


def _rms_as_layernorm(name, env, spec):
    """Spec asks RMSNorm; the person centred the row (LayerNorm): ms -> variance, rms -> std."""
    p, k, eps = norm_prefix(name), kind(name), _eps(spec)
    src = env[norm_source(p, spec)]
    mu = row_mean(src)
    var = centred_var(src, mu)
    if k == "ms":
        return [var]
    std = var.map(lambda v: exact.sqrt(v + eps))
    if k == "rms":
        return [std]
    return [affine((src - mu) / std, env, ln_of(p), beta=False)]


def _layernorm_as_rms(name, env, spec):
    """Spec asks LayerNorm; the person did not centre (RMSNorm): var -> mean square, std -> rms."""
    p, k, eps = norm_prefix(name), kind(name), _eps(spec)
    src = env[norm_source(p, spec)]
    ms = row_meansq(src)
    if k == "var":
        return [ms]
    rms = ms.map(lambda v: exact.sqrt(v + eps))
    if k == "std":
        return [rms]
    return [affine(src / rms, env, ln_of(p), beta=False), affine(src / rms, env, ln_of(p))]


# ---------------------------------------------------------------- linear maps, residuals, order

def _linear_input(name, env, spec):
    return env[inputs_of(name, spec)[0]]


def _weights(name, spec) -> tuple[str, str]:
    """The weight and bias a linear step reads in the step graph (W_Q, b_Q of attn.q)."""
    w, b = inputs_of(name, spec)[1:3]
    return w, b


def _is_linear(name, spec) -> bool:
    """A step whose kind the table of kinds carries back by the linear rule (attn.out only with W_O)."""
    k = kind(name)
    return k in kinds.KINDS and kinds.KINDS[k].rule_for(spec.options) == "linear"


def _transposed(name, env, spec):
    w, b = _weights(name, spec)
    W = env[w]
    if W.shape[0] != W.shape[1]:
        return []
    return [linear(_linear_input(name, env, spec), env, w, b, transpose=True)]


def _bias_missing(name, env, spec):
    w, b = _weights(name, spec)
    if b not in env:
        return []
    return [linear(_linear_input(name, env, spec), env, w, b, bias=False)]


def _missing_residual(name, env, spec):
    return [env[inputs_of(name, spec)[1]]]  # the sub-layer's output (dropped, with a mask)


def _order_swapped(name, env, spec):
    """Post-LN done as Pre-LN, or the other way round: the step reads (or is) the other
    arrangement's value."""
    k, pre = kind(name), _pre(spec)
    bp, base = split_batch(name)
    x = env[bp + "x"]
    if k in ("q", "k", "v"):
        src = x if pre else full_norm(x, env, "ln1", spec)
        return [linear(src, env, *_weights(name, spec))]
    if names.parse(base).norm == "norm1" and not pre:  # Pre-LN's norm1 normalises x
        return [_norm_step_of(name, x, env, spec)]
    if base == "resid2" and not pre:          # Pre-LN: resid2 = resid1 + F
        return [env[bp + "resid1"] + env[inputs_of(name, spec)[1]]]
    if base == "output":
        if pre and not spec.options.final_norm:
            return [full_norm(env[bp + "resid2"], env, "ln2", spec)]
        if not pre:
            return [env[bp + "resid2"]]
    return []


def _order_applies(name, spec) -> bool:
    k, pre = kind(name), _pre(spec)
    name = split_batch(name)[1]
    return (k in ("q", "k", "v") or (names.parse(name).norm == "norm1" and not pre)
            or (name == "resid2" and not pre)
            or (name == "output" and (not pre or not spec.options.final_norm)))


def _norm_step_of(name, src, env, spec):
    """One norm step (statistic or the normalised rows) computed from `src`, correctly."""
    p, k, eps = norm_prefix(name), kind(name), _eps(spec)
    mu = row_mean(src)
    if k == "mean":
        return mu
    if k == "var":
        return centred_var(src, mu)
    if k == "ms":
        return row_meansq(src)
    if k == "std":
        return centred_var(src, mu).map(lambda v: exact.sqrt(v + eps))
    if k == "rms":
        return row_meansq(src).map(lambda v: exact.sqrt(v + eps))
    return full_norm(src, env, ln_of(p), spec)


# ---------------------------------------------------------------- FFN

def _ffn_from(name, env, spec, act: Mat):
    if kind(name) == "act":
        return [act]
    dropped = split_batch(name)[0] + "ffn.act"
    if dropped in spec.dropout_masks:  # ffn.out reads the dropped activation
        act = (act * Mat.from_sympy(spec.dropout_masks[dropped])).scale(num(1 / (1 - spec.dropout_p)))
    return [linear(act, env, "W_2", "b_2")]


def _activation_missing(name, env, spec):
    bp = split_batch(name)[0]
    h = env[bp + "ffn.hidden"]
    return _ffn_from(name, env, spec, h * env[bp + "ffn.gate"] if spec.options.gated else h)


def _gelu_for_relu(name, env, spec):
    bp = split_batch(name)[0]
    h = env[bp + "ffn.hidden"]
    return [v for a in ("gelu", "gelu_tanh")
            for v in _ffn_from(name, env, spec, activate(h, env, spec, a, bp))]


def _relu_for_gelu(name, env, spec):
    bp = split_batch(name)[0]
    return _ffn_from(name, env, spec, activate(env[bp + "ffn.hidden"], env, spec, "relu", bp))


# ---------------------------------------------------------------- the catalogue

CATALOGUE: tuple[Mistake, ...] = (
    Mistake("ln_sample_variance", "LayerNorm variance divided by n−1 (sample variance) instead of n",
            "norm*.var, norm*.std, norm*", _kinds("var", "std", "norm", when=_ln), _sample_variance),
    Mistake("ln_eps_outside_sqrt", "ε added after the square root, sqrt(σ²) + ε, instead of sqrt(σ² + ε)",
            "norm*.std / .rms, norm*", _kinds("std", "rms", "norm", when=lambda s: s.options.eps != 0),
            _eps_outside),
    Mistake("norm_no_sqrt", "divided by the variance (or mean square) itself: the square root was forgotten",
            "norm*.std / .rms, norm*", _kinds("std", "rms", "norm"), _no_sqrt),
    Mistake("norm_affine_missing", "γ and β not applied after normalising",
            "norm*", _kinds("norm"), _affine_missing),
    Mistake("rms_as_layernorm", "RMSNorm asked, but the row was centred (LayerNorm: mean subtracted)",
            "norm*.ms, norm*.rms, norm*", _kinds("ms", "rms", "norm", when=lambda s: not _ln(s)),
            _rms_as_layernorm),
    Mistake("layernorm_as_rms", "LayerNorm asked, but the mean was not subtracted (RMSNorm)",
            "norm*.var, norm*.std, norm*", _kinds("var", "std", "norm", when=_ln), _layernorm_as_rms),
    Mistake("attn_no_scale", "scores not divided by sqrt(d_k)",
            "attn.h*.scaled / .masked / .weights",
            _kinds("scaled", "masked", "weights", when=lambda s: s.options.attention_scale == "sqrt_dk"),
            no_scale),
    Mistake("attn_scale_d_model", "scores divided by sqrt(d_model) instead of sqrt(d_k), "
            "the width of one head's queries and keys",
            "attn.h*.scaled / .masked / .weights",
            _kinds("scaled", "masked", "weights", when=lambda s: s.options.attention_scale == "sqrt_dk"),
            scale_d_model),
    Mistake("attn_scale_no_sqrt", "scores divided by d_k instead of sqrt(d_k)",
            "attn.h*.scaled / .masked / .weights",
            _kinds("scaled", "masked", "weights", when=lambda s: s.options.attention_scale == "sqrt_dk"),
            scale_no_sqrt),
    Mistake("scores_transposed", "scores computed as K Qᵀ instead of Q Kᵀ", "attn.h*.scores",
            _kinds("scores"), scores_transposed),
    Mistake("softmax_wrong_axis", "softmax taken down each column instead of along each row",
            "attn.h*.weights", _kinds("weights"), softmax_axis),
    Mistake("scale_approximated", "scores divided by a rounded sqrt(d_k) (e.g. √3 ≈ 1.73) instead of the "
            "exact root", "attn.h*.scaled / .masked / .weights",
            _kinds("scaled", "masked", "weights", when=sqrt_irrational), scale_approximated),
    Mistake("mask_after_softmax", "causal mask applied after the softmax (masked weights zeroed, rows "
            "no longer sum to 1)", "attn.h*.weights", _kinds("weights", when=masks),
            mask_after_softmax),
    Mistake("mask_zero_not_inf", "masked scores set to 0 instead of −∞ (future positions still get weight)",
            "attn.h*.masked / .weights", _kinds("masked", "weights", when=masks),
            mask_zero),
    Mistake("mask_missing", "causal mask not applied (future positions attended to)",
            "attn.h*.masked / .weights", _kinds("masked", "weights", when=lambda s: s.options.causal),
            mask_missing),
    Mistake("padding_mask_missing", "key padding mask not applied (padding tokens attended to)",
            "attn.h*.masked / .weights", _kinds("masked", "weights", when=lambda s: s.options.padding),
            padding_missing),
    Mistake("padding_on_queries", "padding mask applied to the queries (rows) instead of the keys (columns)",
            "attn.h*.masked / .weights", _kinds("masked", "weights", when=lambda s: s.options.padding),
            padding_on_queries),
    Mistake("tile_sum_not_rescaled", "online softmax: the earlier running sum not rescaled by e^(m_old − m_new) "
            "when the row's maximum moved", "attn.h*.tile*.sum", slips.later_tile("tile_sum"), slips.sum_not_rescaled),
    Mistake("tile_acc_not_rescaled", "online softmax: the earlier accumulator not rescaled by e^(m_old − m_new) "
            "when the row's maximum moved", "attn.h*.tile*.acc", slips.later_tile("tile_acc"), slips.acc_not_rescaled),
    Mistake("dropout_no_rescale", "dropout mask applied without scaling the kept entries by 1/(1 − p)",
            "<step>.dropped", _kinds("dropped", when=lambda s: s.dropout_p != 0), dropout_no_rescale),
    Mistake("weight_transposed", "weight matrix used transposed (x Wᵀ instead of x W)",
            "attn.q/k/v, attn.out, ffn.hidden/gate/out (square W only)", _is_linear, _transposed),
    Mistake("bias_missing", "bias vector not added", "attn.q/k/v, attn.out, ffn.hidden/gate/out",
            _is_linear, _bias_missing),
    Mistake("missing_residual", "residual connection forgotten: the sub-layer output without its input added",
            "resid1, resid2", _kinds("resid"), _missing_residual),
    Mistake("norm_order_swapped", "Pre-LN and Post-LN swapped (normalised before the sub-layer instead "
            "of after, or the other way round)", "attn.q/k/v, norm1*, resid2, output",
            _order_applies, _order_swapped),
    Mistake("activation_missing", "activation function not applied in the FFN",
            "ffn.act, ffn.out", _kinds("act", "ffn_out"), _activation_missing),
    Mistake("gelu_instead_of_relu", "GELU used where ReLU was asked",
            "ffn.act, ffn.out", _kinds("act", "ffn_out", when=lambda s: s.options.activation == "relu"),
            _gelu_for_relu),
    Mistake("relu_instead_of_gelu", "ReLU used where GELU was asked",
            "ffn.act, ffn.out",
            _kinds("act", "ffn_out", when=lambda s: s.options.activation in ("gelu", "gelu_tanh", "geglu")),
            _relu_for_gelu),
    *(Mistake(*m) for m in (*slips.MASKS, *slips.CROSS, *slips.ROPE_CATALOGUE)),   # a mask added, cross-attention, RoPE
)

# A tiny GPT's own slips (model specs, grading/slips): their rules read the model's step
# names (gen1.layer0.attn.h0.weights); a layer's steps are diagnosed with CATALOGUE as well, on the
# layer's block (grading/plan.py).
MODEL_CATALOGUE: tuple[Mistake, ...] = (
    Mistake("cache_not_appended", "scores and weights of the new token computed against the cache without "
            "its own key and value appended (only the earlier rows attended to)",
            "gen*.layer*.attn.h*.scores / .scaled / .weights / .out (KV cache)",
            slips.not_appended_applies, slips.not_appended),
    Mistake("position_reused", "the new token given the position of an earlier token (an earlier row of "
            "the position table, e.g. the first or the last prompt position) instead of its own",
            "gen*.pos, gen*.x, the first layer's steps that read x", slips.position_applies,
            slips.position_reused),
    Mistake("logits_untied_transpose", "the head used the wrong way round: H W_E instead of H W_Eᵀ (tied), "
            "or H W_Uᵀ instead of H W_U (untied)",
            "logits, probs (only when d_model equals the vocabulary size: otherwise the product "
            "has no shape and the slip cannot be made)", slips.transpose_applies,
            slips.untied_transpose),
    *(Mistake(*entry) for entry in slips.POSITIONS),   # sinusoidal position tables
)

ROUNDING = ("rounding", "off by at most one unit in the last place: rounded the wrong way, or "
                        "truncated instead of rounded")
EXPLANATIONS = {**{m.code: m.explanation for m in (*CATALOGUE, *MODEL_CATALOGUE)}, ROUNDING[0]: ROUNDING[1]}


def diagnose(name: str, spec, answer, envs: Sequence[dict], matches, catalogue=CATALOGUE) -> list[str]:
    """Codes of every catalogued slip that reproduces the person's numbers for step `name`.
    `envs`: the values to recompute from (the person's chain, then the truth); `matches(entry,
    value) -> bool` is the checker's acceptance rule, so rounding is judged the same way;
    `catalogue`: MODEL_CATALOGUE for a model's own step names."""
    found = []
    forms = [a for a in (answer, getattr(answer, "written", None)) if a is not None]  # as written, if reshaped
    for m in catalogue:
        if m.applies(name, spec) and any(_reproduces(a, v, matches) for env in envs
                                         for v in _candidates(m, name, env, spec) for a in forms):
            found.append(m.code)
    return found


def _candidates(m: Mistake, name: str, env: dict, spec) -> list[Mat]:
    try:
        return list(m.compute(name, env, spec))
    except (KeyError, ArithmeticError, ValueError):  # a value it needs is absent, or 1/0, sqrt(<0)
        return []


def _reproduces(answer, value: Mat, matches) -> bool:
    if value.shape != answer.shape:
        return False
    try:
        return all(v is exact.NEG_INF if getattr(e, "reason", None) == "inf" else matches(e, v)  # -inf, unmasked
                   for er, vr in zip(answer.entries, value.rows) for e, v in zip(er, vr) if e is not None)
    except exact.UndecidableError:
        return False


# Is a diagnosis ever ambiguous? Two catalogued mistakes (CATALOGUE) that give the same
# numbers on an asked step cannot be told apart by the checker, so an exercise set for a class
# turns such variants down (`random.distinct_mistakes`, applied by `worksheet --variants` and
# `stress`, which skip the seed as they skip an unusable one).


# Slips that divide the scores by a wrong factor: when two factors are equal for the block's dims
# (√d_model = d_k when d_model = 4 and heads = 2) the two slips are one formula, whatever the
# numbers, so no draw can tell them apart; such structural ties are not held against a variant.
SCALE_FACTORS = {"attn_no_scale": lambda d: 1.0, "attn_scale_d_model": lambda d: math.sqrt(d.d_model),
                 "attn_scale_no_sqrt": lambda d: float(d.d_head)}


def structural_ties(spec) -> set[frozenset]:
    """Pairs of mistake codes that are the same formula for this block's dims."""
    f = {code: fn(spec.dims) for code, fn in SCALE_FACTORS.items()}
    return {frozenset((a, b)) for a in f for b in f if a < b and math.isclose(f[a], f[b])}


def rounded(value, places: int) -> tuple:
    out = []
    for row in value.rows:
        for e in row:
            if e is exact.NEG_INF:
                out.append("-inf")
                continue
            try:
                out.append(str(e.decimal(places)))
            except exact.UndecidableError:   # a rounding tie: both neighbours are fair
                out.append(e.digits(places + 3))
    return tuple(out)


def ambiguous(trace, ask, places: int = 3) -> str | None:
    """"distinct_mistakes: …" naming the step, the two mistakes and their numbers when two
    catalogued mistakes give the same numbers (rounded to `places`) on an asked forward step and
    differ from the right answer there; None when every diagnosis is unambiguous."""
    spec = trace.spec
    ties = structural_ties(spec)
    env = dict(trace.params)
    env.update({s.name: s.value for s in trace})
    for name in ask:
        if name not in trace or trace[name].given:
            continue
        truth = rounded(trace[name].value, places)
        seen: dict[tuple, str] = {}
        for m in CATALOGUE:
            if not m.applies(name, spec):
                continue
            try:
                values = list(m.compute(name, env, spec))
            except (KeyError, ArithmeticError, ValueError):
                continue
            for v in values:
                if v.shape != trace[name].value.shape:
                    continue
                key = rounded(v, places)
                if key == truth:
                    continue   # this slip leaves no trace on this step: nothing to confuse
                other = seen.get(key)
                if other is not None and other != m.code and frozenset((other, m.code)) not in ties:
                    shown = ", ".join(key[:4]) + (", …" if len(key) > 4 else "")
                    return (f"distinct_mistakes: on {name}, {other} and {m.code} both give [{shown}]")
                seen[key] = m.code
    return None


def judge(places: int = 3):
    """A judge for exercises.stress / variant.draw_set: Variant -> reason or None, on the steps its
    exercise asks."""
    def check(v) -> str | None:
        return ambiguous(v.trace, v.ask, places)
    return check
