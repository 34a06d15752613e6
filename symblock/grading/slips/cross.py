"""The catalogued slips of a decoder layer's cross-attention (its rows are in mistakes.CATALOGUE)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from symblock.engine import exact, names
from symblock.engine.steps import head_columns, head_index
from symblock.grading.recompute import apply_mask, full_norm, inputs_of, kind, linear, ln_of, softmax_rows

if TYPE_CHECKING:
    from symblock.engine.spec import BlockSpec


# ---------------------------------------------------------------- a decoder layer's cross-attention
# The catalogued slips of a decoder layer's cross-attention (mistakes.CATALOGUE): each recomputes
# ONE cross step from the values before it (the person's chain, else the truth) with the slip made.
#
# The cross-attention's queries come from the decoder, its keys and values from the memory H^{enc}, and
# it has no causal mask (engine/cross.py). The slips: K and V taken from the decoder's rows, Q taken
# from the memory, the causal mask laid on it as on the self-attention, the memory padding mask left
# out (the padded memory rows weighed), and in a Post-LN layer its norm placed as in Pre-LN (the decoder rows normalised by N2 before the cross-attention, and no
# norm after its residual). A slip that changes a step's shape (decoder rows for memory rows) is
# compared with the answer as written (answers.StepAnswer.written), which has that shape.

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


def _unmasked(name: str, env):
    """The head's scores as the mask reads them: scaled, or raw when there is no scale step."""
    p = names.parse(name)
    scaled = p.head_step("scaled")
    return env[scaled] if scaled in env else env[p.head_step("scores")]


def causal_on_cross(name, env, spec: BlockSpec):
    """The causal mask (memory column j > decoder row i) laid on the cross-attention's scores,
    beside its memory padding. A cached step's new row is decoder row `offset` (the earlier rows
    are in the cache): masked at its own position, or at 0 as if it were the first row."""
    p = names.parse(name)
    s = _unmasked(name, env)
    pad = list(spec.memory_padding_mask) or [False] * s.shape[1]
    own = env.get(p.sibling("attn.h0.scores"))   # the self-attention's scores: a key per decoder row so far
    offset = own.shape[1] - own.shape[0] if own is not None else 0
    out = []
    for at in sorted({0, offset}):
        m = apply_mask(s, [[j > i + at or pad[j] for j in range(s.shape[1])] for i in range(s.shape[0])], exact.NEG_INF)
        out.append(m if kind(name) == "cross_masked" else softmax_rows(m))
    return out


def causal_applies(name, spec: BlockSpec) -> bool:
    return crossing(spec) and kind(name) in ("cross_masked", "cross_weights")


def padding_missing(name, env, spec: BlockSpec):
    """The memory padding mask left out: the padded memory rows' scores kept, weighed by the
    softmax, and their values mixed into the head's output."""
    s = _unmasked(name, env)
    if kind(name) == "cross_masked":
        return [s]
    w = softmax_rows(s)
    if kind(name) == "cross_weights":
        return [w]
    h, dv = head_index(name), spec.dims.d_v
    return [w @ env[names.parse(name).sibling("cross.v")].cols(h * dv, (h + 1) * dv)]


def padding_applies(name, spec: BlockSpec) -> bool:
    return (crossing(spec) and spec.options.memory_padding
            and kind(name) in ("cross_masked", "cross_weights", "cross_head_out"))


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
    ("cross_padding_mask_missing", "memory padding mask not applied in the cross-attention (padded memory "
     "rows attended to)", "cross.h*.masked / .weights / .out", padding_applies, padding_missing),
    ("cross_queries_from_memory", "cross-attention queries projected from the memory instead of the "
     "decoder's rows", "cross.q, cross.h*.scores", _kinds("cross_q", "cross_scores"), queries_from_memory),
    ("cross_norm_as_pre_ln", "in a Post-LN decoder layer the cross-attention's norm placed as in Pre-LN "
     "(its input normalised by N2, its residual left unnormalised)", "cross.q, norm2",
     norm_as_pre_applies, norm_as_pre),
)
