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

def parse(name: str) -> tuple[str, int, int | None, str]:
    """(prefix "gen1." or "", generation step t (0: the prompt pass), layer or None, rest)."""
    step = names.parse(name)
    if step.grad or step.batch is not None:   # not a model's step: all of it is the rest
        return "", 0, None, name
    return names.name_of("", gen=step.gen), step.gen, step.layer, name[len(step.prefix):]


def cached(spec, t: int) -> bool:
    return spec.kv_cache and t > 0


def rows_of(spec, t: int) -> int:
    """The rows a pass works: the prompt, one new row with the cache, else the whole sequence."""
    return 1 if cached(spec, t) else len(spec.prompt) + t


def position(spec, t: int) -> int:
    """The position (from 0) of generation step t's new token."""
    return len(spec.prompt) + t - 1


def layer_input(prefix: str, layer: int) -> str:
    return f"{prefix}x" if layer == 0 else f"{prefix}layer{layer - 1}.output"


def old_cache(t: int, layer: int, part: str) -> str:
    """The cache before generation step t appends its row: the prompt pass's K (V) or the last cache."""
    return f"layer{layer}.attn.{part}" if t == 1 else f"gen{t - 1}.layer{layer}.cache.{part}"


def last_hidden(spec, prefix: str) -> str:
    return f"{prefix}norm_final" if spec.final_norm else f"{prefix}layer{len(spec.layers) - 1}.output"


def layer_spec(spec, layer: int, t: int):
    """The BlockSpec a layer's step of pass t is worked with (one row, no mask, with the cache)."""
    block = spec.layers[layer]
    opts = replace(block.options, causal=False) if cached(spec, t) else block.options
    return replace(block, dims=replace(block.dims, seq_len=rows_of(spec, t)), options=opts)


def local_env(env: dict, prefix: str, layer: int, t: int, spec) -> dict:
    """The model's values under the block's names for layer `layer` of pass t: the layer's
    weights (and the prompt pass's steps), then this pass's own steps over them."""
    own, here = f"layer{layer}.", f"{prefix}layer{layer}."
    out = {k[len(own):]: v for k, v in env.items() if k.startswith(own)}
    if prefix:
        out.update({k[len(here):]: v for k, v in env.items() if k.startswith(here)})
    if layer_input(prefix, layer) in env:
        out["x"] = env[layer_input(prefix, layer)]
    if cached(spec, t):   # the new row attends to the cache
        for p in "kv":
            if f"{here}cache.{p}" in env:
                out[f"attn.{p}"] = env[f"{here}cache.{p}"]
    return out


def final_spec(spec, t: int):
    """A block spec whose `norm_final` is the model's final norm (read from `resid2`)."""
    block = spec.layers[-1]
    opts = replace(block.options, norm_position="pre", final_norm=True)
    return replace(block, dims=replace(block.dims, seq_len=rows_of(spec, t)), options=opts)


def final_env(env: dict, prefix: str, spec) -> dict:
    out = {k: v for k, v in env.items() if k.startswith("ln_final.")}
    out.update({k[len(prefix):]: v for k, v in env.items() if k.startswith(f"{prefix}norm_final")})
    out["resid2"] = env[f"{prefix}layer{len(spec.layers) - 1}.output"]
    return out


def inputs(name: str, step_inputs: tuple, spec) -> tuple:
    """What the checker tracks a step as reading: the engine's inputs, and for a generated token's
    embedding the next_token it looks up."""
    prefix, t, layer, rest = parse(name)
    if layer is None and rest == "embed" and t > 0:   # with the cache only the last token is looked up
        made = ["next_token" if k == 1 else f"gen{k - 1}.next_token" for k in range(1, t + 1)]
        return (*step_inputs, *(made[-1:] if cached(spec, t) else made))
    return tuple(step_inputs)


def recompute(name: str, env: dict, spec) -> Mat:
    """The step `name` of the model computed correctly from the values in `env`."""
    from symblock.exercises.decoder import token_index
    prefix, t, layer, rest = parse(name)
    if layer is not None:
        if rest in ("cache.k", "cache.v"):
            p = rest[-1]
            return Mat([*env[old_cache(t, layer, p)].rows, *env[f"{prefix}layer{layer}.attn.{p}"].rows])
        return compute(rest, local_env(env, prefix, layer, t, spec), layer_spec(spec, layer, t))
    if rest == "embed":
        made = [token_index(env["next_token" if k == 1 else f"gen{k - 1}.next_token"]) for k in range(1, t + 1)]
        tokens = made[-1:] if cached(spec, t) else [*spec.prompt, *made]
        if any(not 0 <= k < len(spec.vocab) for k in tokens):
            raise ValueError("no such token")
        return Mat([env["W_E"].rows[k] for k in tokens])
    if rest == "pos":
        return position_rows(spec, env, range(position(spec, t), position(spec, t) + 1) if cached(spec, t)
                             else range(rows_of(spec, t)))
    if rest == "x":
        return env[f"{prefix}embed"] + env[f"{prefix}pos"] if spec.positions != "none" else env[f"{prefix}embed"]
    if names.parse(rest).norm == "norm_final":
        return compute(rest, final_env(env, prefix, spec), final_spec(spec, t))
    if rest == "logits":
        h = env[last_hidden(spec, prefix)]
        return h @ env["W_E"].T if spec.head == "tied" else h @ env["W_U"]
    if rest == "probs":
        return softmax_rows(env[f"{prefix}logits"])
    if rest == "next_token":
        return Mat([[exact.real(argmax(env[f"{prefix}logits"].rows[-1]))]])
    raise KeyError(name)


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
