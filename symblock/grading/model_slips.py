"""The slips of a tiny GPT's steps (mistakes.MODEL_CATALOGUE): each recomputes ONE model step
from the values before it (the person's chain, else the truth) with the slip made.

* cache_not_appended: the new row's scores and weights taken against the cache *before* its own
  key and value were appended (m − 1 keys). Its last column then does not exist: the candidate
  has −∞ there for scores (a person who writes it as masked) and 0 for weights, and a blank is
  not held against it; the head's output mixes the old value rows only.
* position_reused: the new token given the position of an earlier one (rows 1 … p of W_P, or
  those sinusoids, instead of row p + 1): shows in gen*.pos, gen*.x and the first layer's steps
  that read x.
* logits_untied_transpose: the head used the wrong way round: H W_E for a tied head (instead of
  H W_Eᵀ) or H W_Uᵀ for an untied one. Both need d_model = vocabulary size (W_E is vocab × d):
  for any other model the slip cannot be written down, so it does not apply.
"""
from __future__ import annotations

from symblock.engine import exact, names
from symblock.engine.matrix import Mat
from symblock.grading import model_step
from symblock.grading.onestep import softmax_rows


# ---------------------------------------------------------------- cache_not_appended

def not_appended_applies(name: str, spec) -> bool:
    step = names.parse(name)
    return step.layer is not None and model_step.cached(spec, step.gen) and step.head is not None \
        and step.part in ("scores", "scaled", "weights", "out")


def _pad(m: Mat, fill) -> Mat:
    return Mat([[*row, fill] for row in m.rows])


def _drop_last(m: Mat) -> Mat:
    return Mat([list(row[:-1]) for row in m.rows])


def not_appended(name: str, env: dict, spec) -> list[Mat]:
    step = names.parse(name)
    t, layer, kind, h = step.gen, step.layer, step.part, step.head
    dims, o = spec.layers[layer].dims, spec.layers[layer].options
    k_old, v_old = env[model_step.old_cache(t, layer, "k")], env[model_step.old_cache(t, layer, "v")]
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
    if not model_step.cached(spec, step.gen):
        return False
    return (step.layer is None and step.local in ("pos", "x")) or (step.layer == 0 and _reads_x(step, spec))


def position_reused(name: str, env: dict, spec) -> list[Mat]:
    step = names.parse(name)
    t = step.gen
    out = []
    for j in range(model_step.position(spec, t)):   # every earlier position, the first and the last one above all
        pos = model_step.position_rows(spec, env, [j])
        if step.local == "pos":
            out.append(pos)
            continue
        x = env[names.name_of("embed", gen=t)] + pos
        if step.local == "x":
            out.append(x)
            continue
        out.append(model_step.recompute(name, {**env, names.name_of("x", gen=t): x}, spec))
    return out


# ---------------------------------------------------------------- logits_untied_transpose

def transpose_applies(name: str, spec) -> bool:
    step = names.parse(name)
    return step.layer is None and step.kind in ("logits", "probs") and spec.dims.d_model == len(spec.vocab)


def untied_transpose(name: str, env: dict, spec) -> list[Mat]:
    step = names.parse(name)
    h = env[model_step.last_hidden(spec, step.gen)]
    logits = h @ env["W_E"] if spec.head == "tied" else h @ env["W_U"].T
    return [logits] if step.kind == "logits" else [softmax_rows(logits)]
