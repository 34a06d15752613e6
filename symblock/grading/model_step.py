"""One step of a tiny GPT (engine/model.py), recomputed exactly from whatever values its inputs
are given: onestep.py one level up. A layer's step (`gen1.layer0.attn.q`) is the block's own
step on the layer's spec for the rows it has (one new row with the cache), with the model's names
mapped onto the block's (`x` is the layer's input, `attn.k`/`attn.v` the cache when the row reads
it); the model's own steps (embedding, position, input, cache, final norm, logits, probabilities,
next token) are written here. `env` maps the model's step and parameter names to exact matrices.
"""
from __future__ import annotations

from dataclasses import replace

from symblock.engine import exact, names
from symblock.engine.matrix import Mat
from symblock.grading.onestep import compute, softmax_rows


def cached(spec, t: int) -> bool:
    return spec.kv_cache and t > 0


def rows_of(spec, t: int) -> int:
    """The rows a pass works: the prompt, one new row with the cache, else the whole sequence."""
    return 1 if cached(spec, t) else len(spec.prompt) + t


def position(spec, t: int) -> int:
    """The position (from 0) of generation step t's new token."""
    return len(spec.prompt) + t - 1


def layer_input(t: int, layer: int) -> str:
    return names.name_of("x", gen=t) if layer == 0 else names.name_of("output", gen=t, layer=layer - 1)


def old_cache(t: int, layer: int, part: str) -> str:
    """The cache before generation step t appends its row: the prompt pass's K (V) or the last cache."""
    return names.name_of(f"attn.{part}", layer=layer) if t == 1 else names.name_of(f"cache.{part}", gen=t - 1,
                                                                                  layer=layer)


def last_hidden(spec, t: int) -> str:
    return names.name_of("norm_final", gen=t) if spec.final_norm else \
        names.name_of("output", gen=t, layer=len(spec.layers) - 1)


def made_tokens(t: int) -> list[str]:
    """The next_token steps whose tokens generation steps 1 … t feed back in."""
    return [names.name_of("next_token", gen=k - 1) for k in range(1, t + 1)]


def layer_spec(spec, layer: int, t: int):
    """The BlockSpec a layer's step of pass t is worked with (one row, no mask, with the cache)."""
    block = spec.layers[layer]
    opts = replace(block.options, causal=False) if cached(spec, t) else block.options
    return replace(block, dims=replace(block.dims, seq_len=rows_of(spec, t)), options=opts)


def local_env(env: dict, t: int, layer: int, spec) -> dict:
    """The model's values under the block's names for layer `layer` of pass t: the layer's
    weights (and the prompt pass's steps), then this pass's own steps over them."""
    named = [(names.parse(k), v) for k, v in env.items()]
    out = {p.local: v for p, v in named if p.layer == layer and p.gen == 0 and not p.grad}
    if t:
        out.update({p.local: v for p, v in named if p.layer == layer and p.gen == t and not p.grad})
    if layer_input(t, layer) in env:
        out["x"] = env[layer_input(t, layer)]
    if cached(spec, t):   # the new row attends to the cache
        for p in "kv":
            if (cache := names.name_of(f"cache.{p}", gen=t, layer=layer)) in env:
                out[f"attn.{p}"] = env[cache]
    return out


def final_spec(spec, t: int):
    """A block spec whose `norm_final` is the model's final norm (read from `resid2`)."""
    block = spec.layers[-1]
    opts = replace(block.options, norm_position="pre", final_norm=True)
    return replace(block, dims=replace(block.dims, seq_len=rows_of(spec, t)), options=opts)


def final_env(env: dict, t: int, spec) -> dict:
    named = [(names.parse(k), v) for k, v in env.items()]
    out = {p.full: v for p, v in named if p.section == "ln_final"}
    out.update({p.local: v for p, v in named if p.norm == "norm_final" and p.gen == t and p.layer is None})
    out["resid2"] = env[names.name_of("output", gen=t, layer=len(spec.layers) - 1)]
    return out


def frame(name: str, env: dict, spec):
    """The block step a model's step is, with the model's values under the block's names and the
    block spec it is worked on: (name, env, spec) of a layer's step or the final norm's, None for
    the model's own steps (embedding, position, input, cache, logits, probabilities, next token)."""
    step = names.parse(name)
    if step.layer is not None and step.section != "cache":
        return step.local, local_env(env, step.gen, step.layer, spec), layer_spec(spec, step.layer, step.gen)
    if step.norm == "norm_final":
        return step.local, final_env(env, step.gen, spec), final_spec(spec, step.gen)
    return None


def inputs(name: str, step_inputs: tuple, spec) -> tuple:
    """What the checker tracks a step as reading: the engine's inputs, and for a generated token's
    embedding the next_token it looks up (with the cache only the last one)."""
    step = names.parse(name)
    if step.kind == "embed" and step.layer is None and step.gen > 0:
        made = made_tokens(step.gen)
        return (*step_inputs, *(made[-1:] if cached(spec, step.gen) else made))
    return tuple(step_inputs)


def model_step(name: str, env: dict, spec) -> Mat:
    """The step `name` of a model computed correctly from the values in `env`: a layer's or the
    final norm's step is the block's own (`compute`) in its frame, the model's own by its kind."""
    local = frame(name, env, spec)
    if local is not None:
        return compute(*local)
    step = names.parse(name)
    return MODEL_RECOMPUTE[step.kind](step, env, spec)


def _embed(step, env: dict, spec) -> Mat:
    from symblock.exercises.decoder import token_index
    t = step.gen
    made = [token_index(env[n]) for n in made_tokens(t)]
    tokens = made[-1:] if cached(spec, t) else [*spec.prompt, *made]
    if any(not 0 <= k < len(spec.vocab) for k in tokens):
        raise ValueError("no such token")
    return Mat([env["W_E"].rows[k] for k in tokens])


def _pos(step, env: dict, spec) -> Mat:
    t = step.gen
    p = position(spec, t)
    return position_rows(spec, env, range(p, p + 1) if cached(spec, t) else range(rows_of(spec, t)))


def _x(step, env: dict, spec) -> Mat:
    embedded = env[step.sibling("embed")]
    return embedded + env[step.sibling("pos")] if spec.positions != "none" else embedded


def _cache(step, env: dict, spec) -> Mat:
    """The cache after appending the new row: the old rows, then this pass's k (v)."""
    part = step.part
    return Mat([*env[old_cache(step.gen, step.layer, part)].rows, *env[step.sibling(f"attn.{part}")].rows])


def _logits(step, env: dict, spec) -> Mat:
    h = env[last_hidden(spec, step.gen)]
    return h @ env["W_E"].T if spec.head == "tied" else h @ env["W_U"]


# The recompute of each of the model's own kinds of step (names.parse's kind)
MODEL_RECOMPUTE = {
    "embed": _embed, "pos": _pos, "x": _x, "cache_k": _cache, "cache_v": _cache, "logits": _logits,
    "probs": lambda step, env, spec: softmax_rows(env[step.sibling("logits")]),
    "next_token": lambda step, env, spec: Mat([[exact.real(argmax(env[step.sibling("logits")].rows[-1]))]]),
}


def recompute(name: str, env: dict, spec) -> Mat:
    """Any step of a block or a model computed correctly from the values in `env`: the checker's
    one recompute, keyed on the spec's form and then on the step's kind."""
    return BY_FORM[spec.form](name, env, spec)


BY_FORM = {"block": compute, "model": model_step}


def position_rows(spec, env: dict, rows) -> Mat:
    from symblock.engine.model import sinusoidal_row
    if spec.positions == "learned":
        return Mat([env["W_P"].rows[r] for r in rows])
    return Mat([sinusoidal_row(r, spec.dims.d_model) for r in rows])


def argmax(row) -> int:
    """The index of the largest entry; a tie has no answer (ValueError)."""
    best = 0
    for j in range(1, len(row)):
        if (row[j] - row[best]).sign() > 0:
            best = j
    if any(j != best and (row[j] - row[best]).sign() == 0 for j in range(len(row))):
        raise ValueError("tied logits")
    return best
