"""The catalogued slips of RoPE and of grouped K/V heads (their rows are in mistakes.CATALOGUE)."""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from symblock.engine import names, rope
from symblock.engine.matrix import Mat
from symblock.engine.steps import head_columns, kv_head
from symblock.grading.recompute import compute, inputs_of, kind


# ---------------------------------------------------------------- RoPE and grouped K/V heads
# The catalogued slips of RoPE and of grouped K/V heads (mistakes.CATALOGUE lists them): each
# recomputes ONE step from the values before it with the slip made.
#
# * rope_other_style: the pairs of the other style, (2i, 2i+1) for (i, i + d_k/2) or the other way
#   round (the same pairs when d_k = 2, so then it does not apply).
# * rope_positions_from_one: the rows' positions counted from 1 (m + 1 for m).
# * rope_sign_flipped: turned the other way, x_a cos + x_b sin and x_b cos − x_a sin (angle −φ).
# * rope_on_v: the values rotated as well (in attn.v itself, or in a head's output); d_v even only.
# * rope_unrotated: a head's scores from K (or Q, or both) as projected, not as rotated.
# * gqa_wrong_head: query head h read K/V head h mod kv_heads instead of ⌊h·kv_heads/heads⌋ (only
#   for a head where the two differ).

ROTATED = ("q_rot", "k_rot")


def rotates(name: str, spec) -> bool:
    return kind(name) in ROTATED and spec.options.rope is not None


def _turn(x: Mat, spec, rows: Sequence[int], style: str | None = None) -> Mat:
    r = spec.options.rope if style is None else replace(spec.options.rope, style=style)
    d_k = spec.dims.d_k
    return rope.rotate(x, x.shape[1] // d_k, d_k, rows, r)


def _source(name: str, env: dict, spec) -> Mat:
    return env[inputs_of(name, spec)[0]]


def other_style_applies(name: str, spec) -> bool:
    return rotates(name, spec) and spec.dims.d_k > 2


def other_style(name: str, env: dict, spec) -> list[Mat]:
    other = "interleaved" if spec.options.rope.style == "half" else "half"
    return [_turn(_source(name, env, spec), spec, spec.position_list(), other)]


def from_one(name: str, env: dict, spec) -> list[Mat]:
    return [_turn(_source(name, env, spec), spec, [m + 1 for m in spec.position_list()])]


def sign_flipped(name: str, env: dict, spec) -> list[Mat]:
    return [_turn(_source(name, env, spec), spec, [-m for m in spec.position_list()])]


def on_v_applies(name: str, spec) -> bool:
    return spec.options.rope is not None and spec.dims.d_v % 2 == 0 and kind(name) in ("v", "head_out")


def _rotated_v(v: Mat, spec) -> Mat:
    """V turned as K is (a cached V has one row per cached position, 0 … m − 1)."""
    rows = spec.position_list()
    rows = rows if len(rows) == v.shape[0] else tuple(range(v.shape[0]))
    d_v = spec.dims.d_v
    return rope.rotate(v, v.shape[1] // d_v, d_v, rows, spec.options.rope)


def on_v(name: str, env: dict, spec) -> list[Mat]:
    if kind(name) == "v":
        return [_rotated_v(compute(name, env, spec), spec)]
    p, v = inputs_of(name, spec)[:2]
    h, d_v = names.parse(name).head, spec.dims.d_v
    g = kv_head(h, spec.dims)
    return [env[p] @ _rotated_v(env[v], spec).cols(g * d_v, (g + 1) * d_v)]


def unrotated_applies(name: str, spec) -> bool:
    return spec.options.rope is not None and kind(name) == "scores"


def unrotated(name: str, env: dict, spec) -> list[Mat]:
    """The scores from the keys left unrotated (K for K'), the queries left unrotated, or both."""
    p, d = names.parse(name), spec.dims
    q_rot, k_rot = inputs_of(name, spec)[:2]
    q, k = env[p.sibling("attn.q")], env[p.sibling("attn.k")]
    g = kv_head(p.head, d)
    return [a.cols(*head_columns(name, d)) @ b.cols(g * d.d_k, (g + 1) * d.d_k).T
            for a, b in ((env[q_rot], k), (q, env[k_rot]), (q, k))]


def _wrong_head(name: str, spec) -> int:
    return names.parse(name).head % spec.dims.kv_heads


def wrong_head_applies(name: str, spec) -> bool:
    d = spec.dims
    return (kind(name) in ("scores", "head_out") and d.kv_heads != d.heads
            and _wrong_head(name, spec) != kv_head(names.parse(name).head, d))


def wrong_head(name: str, env: dict, spec) -> list[Mat]:
    a, b = inputs_of(name, spec)[:2]
    g, d = _wrong_head(name, spec), spec.dims
    if kind(name) == "scores":
        return [env[a].cols(*head_columns(name, d)) @ env[b].cols(g * d.d_k, (g + 1) * d.d_k).T]
    return [env[a] @ env[b].cols(g * d.d_v, (g + 1) * d.d_v)]


# (code, explanation, where it shows, applies, compute): mistakes.CATALOGUE makes each a Mistake
ROPE_CATALOGUE = (
    ("rope_other_style", "RoPE's pairs of the other style: (2i, 2i+1) where (i, i + d_k/2) was asked, "
     "or the other way round", "attn.q_rot, attn.k_rot (d_k > 2)",
     other_style_applies, other_style),
    ("rope_positions_from_one", "RoPE's positions counted from 1 instead of 0 (every row turned one "
     "step too far)", "attn.q_rot, attn.k_rot", rotates, from_one),
    ("rope_sign_flipped", "RoPE's rotation turned the wrong way: x_a cos + x_b sin and x_b cos − x_a sin "
     "(the sign of sin flipped)", "attn.q_rot, attn.k_rot", rotates, sign_flipped),
    ("rope_on_v", "RoPE applied to the values too: only the queries and keys are rotated",
     "attn.v, attn.h*.out (d_v even)", on_v_applies, on_v),
    ("rope_unrotated", "scores taken from unrotated keys or queries (K for K', Q for Q'): RoPE turns both "
     "before the scores", "attn.h*.scores", unrotated_applies, unrotated),
    ("gqa_wrong_head", "query head h read K/V head h mod kv_heads instead of ⌊h·kv_heads/heads⌋ "
     "(consecutive query heads share a K/V head)", "attn.h*.scores, attn.h*.out (grouped K/V heads)",
     wrong_head_applies, wrong_head),
)
