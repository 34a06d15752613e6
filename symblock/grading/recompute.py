"""One step of a block or a tiny GPT, recomputed exactly from whatever values its inputs are given.

The checker needs this twice: to recompute a step from a person's own earlier answers (error
carried forward, rounding carried forward) and, with a rule changed, to name a mistake
(mistakes.py, slips.py). `env` maps step and parameter names (steps.step_inputs) to exact
matrices; an absent bias is simply not in it. The formulas are the printed conventions, written per
step kind (`RECOMPUTE`); a model's layer step is its block's step under the layer's prefix, and the
model's own steps (embeddings, logits, the KV cache) are recomputed at the end of this module.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from symblock.engine import exact, names, online_softmax, parameters, rope
from symblock.engine.block import ACTIVATIONS, apply_mask, softmax
from symblock.engine.matrix import Mat
from symblock.engine.translate import MEMORY, embed_env, encoder_frame, source_rows
from symblock.engine.steps import (
    batch_index, head_columns, key_columns, masked_positions, split_batch, step_inputs, value_columns,
    step_kind as kind,)

if TYPE_CHECKING:
    from symblock.engine.spec import BlockSpec


def norm_prefix(name: str) -> str:
    """The norm a step belongs to, with its batch prefix: "b1.norm2" for "b1.norm2.std"."""
    step = names.parse(name)
    return step.sibling(step.norm)


def ln_of(prefix: str) -> str:
    """The parameters' section of a norm: "ln2" for "b1.norm2"."""
    return parameters.of_norm(names.parse(prefix).norm)


def inputs_of(name: str, spec: BlockSpec) -> tuple[str, ...]:
    """A step's inputs in the step graph (batch-prefixed, `.dropped` where a mask sits)."""
    return step_inputs(spec.dims, spec.options)[name]


def pad_of(name: str, spec: BlockSpec):
    """The padding row of the sequence step `name` belongs to (None without a padding mask)."""
    return spec.key_padding_mask[batch_index(name)] if spec.key_padding_mask else None


def attention_mask(name: str, spec: BlockSpec, causal: bool | None = None, padding: bool = True) -> list[list[bool]]:
    """Which scores of head step `name` are masked: the causal mask (unless `causal` says
    otherwise) and, with `padding`, the sequence's key padding mask."""
    n = spec.dims.seq_len
    return masked_positions(n, spec.options.causal if causal is None else causal,
                            pad_of(name, spec) if padding else None)


def norm_source(prefix: str, spec: BlockSpec) -> str:
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


def full_norm(src: Mat, env, ln: str, spec: BlockSpec) -> Mat:
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


def activate(hidden: Mat, env, spec: BlockSpec, activation: str | None = None, prefix: str = "") -> Mat:
    act = ACTIVATIONS[activation or spec.options.activation][0]
    out = hidden.map(act)
    return out * env[f"{prefix}ffn.gate"] if spec.options.gated else out


def dropout_scale(spec: BlockSpec) -> exact.Real:
    return num(1 / (1 - spec.dropout_p))


# ---------------------------------------------------------------- the correct step

def compute(name: str, env, spec: BlockSpec) -> Mat:
    """The step `name` computed correctly from the values in `env` (its inputs, and parameters):
    the recompute its kind names in RECOMPUTE."""
    ins = step_inputs(spec.dims, spec.options)[name]
    return RECOMPUTE[kind(name)](name, ins, env, spec)


def _linear(name, ins, env, spec: BlockSpec):
    """x W + b with the weight and bias the step graph gives the step (attn.q reads W_Q, b_Q)."""
    return linear(env.get(ins[0]), env, ins[1], ins[2])


def _scores(name, ins, env, spec: BlockSpec):
    """Q_h K_gᵀ: query head h against its K/V head g (grouped heads: g = ⌊h·kv_heads/heads⌋)."""
    return env[ins[0]].cols(*head_columns(name, spec.dims)) @ env[ins[1]].cols(*key_columns(name, spec.dims)).T


def _cross_scores(name, ins, env, spec: BlockSpec):
    lo, hi = head_columns(name, spec.dims)
    return env[ins[0]].cols(lo, hi) @ env[ins[1]].cols(lo, hi).T


def _scaled(name, ins, env, spec: BlockSpec):
    lo, hi = head_columns(name, spec.dims)
    return env[ins[0]].scale(1 / exact.sqrt(num(hi - lo)))


def _dropped(name, ins, env, spec: BlockSpec):
    return (env[ins[0]] * Mat.from_sympy(spec.dropout_masks[ins[0]])).scale(dropout_scale(spec))


def _attn_out(name, ins, env, spec: BlockSpec):
    return linear(env[ins[0]], env, ins[1], ins[2]) if spec.options.out_proj else env[ins[0]]


def _var(name, ins, env, spec: BlockSpec):
    return centred_var(env[ins[0]], env[f"{norm_prefix(name)}.mean"])


def _root(name, ins, env, spec: BlockSpec):
    eps = num(spec.options.eps)
    return env[ins[0]].map(lambda v: exact.sqrt(v + eps))


def _normalised(name, ins, env, spec: BlockSpec):
    prefix, src = norm_prefix(name), env[ins[0]]
    ln = ln_of(prefix)
    if spec.options.norm == "layernorm":
        return affine((src - env[f"{prefix}.mean"]) / env[f"{prefix}.std"], env, ln)
    return affine(src / env[f"{prefix}.rms"], env, ln, beta=False)


def _first(name, ins, env, spec: BlockSpec):
    return env[ins[0]]


def _cross_masked(name, ins, env, spec):
    """A decoder layer's cross-attention: only padded memory rows are masked, never causally."""
    return apply_mask(env[ins[0]], [list(spec.memory_padding_mask)] * env[ins[0]].shape[0])


def _cross_out(name, ins, env, spec):
    return linear(env[ins[0]], env, "cross.W_O", "cross.b_O") if spec.options.out_proj else env[ins[0]]


# The recompute of each kind of step (engine/kinds.py) from a person's own inputs.
RECOMPUTE = {
    "x": _first, "output": _first,
    "q": _linear, "k": _linear, "v": _linear,
    "scores": _scores, "scaled": _scaled,
    "masked": lambda name, ins, env, spec: apply_mask(env[ins[0]], attention_mask(name, spec)),
    "weights": lambda name, ins, env, spec: softmax_rows(env[ins[0]]),
    "head_out": lambda name, ins, env, spec: env[ins[0]] @ env[ins[1]].cols(*value_columns(name, spec.dims)),
    "dropped": _dropped,
    "concat": lambda name, ins, env, spec: Mat.hstack([env[i] for i in ins]),
    "attn_out": _attn_out,
    "resid": lambda name, ins, env, spec: env[ins[0]] + env[ins[1]],
    "hidden": _linear, "gate": _linear, "ffn_out": _linear,
    "act": lambda name, ins, env, spec: activate(env.get(ins[0]), env, spec, prefix=split_batch(name)[0]),
    "mean": lambda name, ins, env, spec: row_mean(env[ins[0]]),
    "var": _var, "std": _root, "rms": _root,
    "ms": lambda name, ins, env, spec: row_meansq(env[ins[0]]),
    "norm": _normalised,
    # a decoder layer's cross-attention (engine/cross.py): K and V read the memory
    "memory": _first, "cross_q": _linear, "cross_k": _linear, "cross_v": _linear,
    "cross_scores": _cross_scores, "cross_scaled": _scaled, "cross_masked": _cross_masked,
    "cross_weights": lambda name, ins, env, spec: softmax_rows(env[ins[0]]),
    "cross_head_out": lambda name, ins, env, spec: env[ins[0]] @ env[ins[1]].cols(*value_columns(name, spec.dims)),
    "cross_concat": lambda name, ins, env, spec: Mat.hstack([env[i] for i in ins]),
    "cross_out": _cross_out,
    **rope.RECOMPUTE,   # RoPE's rotated q and k, from the person's own attn.q / attn.k
    **online_softmax.RECOMPUTE,   # the online softmax's tiles (engine/online_softmax.py)
}


def equivalents(name: str, env, spec) -> list[Mat]:
    """Other right values of step `name`: the orders marked correct too. Masking the raw
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


# One step of a tiny GPT (engine/model.py), recomputed exactly from whatever values its inputs
# are given: the block's steps above. A layer's step (`gen1.layer0.attn.q`) is the block's own
# step on the layer's spec for the rows it has (one new row with the cache), with the model's names
# mapped onto the block's (`x` is the layer's input, `attn.k`/`attn.v` the cache when the row reads
# it); the model's own steps (embedding, position, input, cache, final norm, logits, probabilities,
# next token) are written here. `env` maps the model's step and parameter names to exact matrices.


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


def old_cache(t: int, layer: int, part: str, spec=None) -> str:
    """The cache before generation step t appends its row: the prompt pass's K (V) or the last cache
    (with RoPE the cache holds the rotated keys: `spec` says)."""
    return names.name_of(cached_step(spec, layer, part), layer=layer) if t == 1 else \
        names.name_of(f"cache.{part}", gen=t - 1, layer=layer)


def cached_step(spec, layer: int, part: str) -> str:
    """The block step a layer's cache holds: attn.v, and attn.k (attn.k_rot with RoPE)."""
    rot = part == "k" and spec is not None and spec.layers[layer].options.rope
    return "attn.k_rot" if rot else f"attn.{part}"


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
    rows = (position(spec, t),) if cached(spec, t) else tuple(range(rows_of(spec, t)))  # RoPE's angles
    return replace(block, dims=replace(block.dims, seq_len=rows_of(spec, t)), options=opts, positions=rows)


def local_env(env: dict, t: int, layer: int, spec) -> dict:
    """The model's values under the block's names for layer `layer` of pass t: the layer's
    weights (and the prompt pass's steps), then this pass's own steps over them."""
    named = [(p, v) for k, v in env.items() if not (p := names.parse(k)).encoder]   # enc.layer0.W_Q is not layer0's
    out = {p.local: v for p, v in named if p.layer == layer and p.gen == 0 and not p.grad}
    if t:
        out.update({p.local: v for p, v in named if p.layer == layer and p.gen == t and not p.grad})
    first = names.name_of("norm_embed", gen=t) if layer == 0 and getattr(spec, "embed_norm", None) else None
    if (src := first or layer_input(t, layer)) in env:   # BERT's first layer reads the embeddings' norm
        out["x"] = env[src]
    if cached(spec, t):   # the new row attends to the cache
        for p in "kv":
            if (cache := names.name_of(f"cache.{p}", gen=t, layer=layer)) in env:
                out[cached_step(spec, layer, p)] = env[cache]
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
    out["resid2"] = out["resid3"] = env[names.name_of("output", gen=t, layer=len(spec.layers) - 1)]
    return out   # (a decoder layer's final norm reads resid3)


def frame(name: str, env: dict, spec):
    """The block step a model's step is, with the model's values under the block's names and the
    block spec it is worked on: (name, env, spec) of a layer's step or the final norm's, None for
    the model's own steps (embedding, position, input, cache, logits, probabilities, next token)."""
    step = names.parse(name)
    if step.encoder:
        return encoder_frame(step, env, spec)
    if step.layer is not None and step.section != "cache":
        local = local_env(env, step.gen, step.layer, spec)
        if MEMORY in env:   # an encoder-decoder's decoder layer: its cross-attention reads the memory
            local["memory"] = env[MEMORY]
        return step.local, local, layer_spec(spec, step.layer, step.gen)
    if step.norm == "norm_final":
        return step.local, final_env(env, step.gen, spec), final_spec(spec, step.gen)
    if step.norm == "norm_embed":   # BERT's norm of the embeddings: the engine works it as a final norm
        local = "norm_final" + (f".{step.stat}" if step.stat else "")
        return local, embed_env(env, step.gen), final_spec(spec, step.gen)
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
    if step.encoder and step.kind in ("embed", "pos"):
        return source_rows(step, env, spec, position_rows)
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
    return Mat([*env[old_cache(step.gen, step.layer, part, spec)].rows,
                *env[step.sibling(cached_step(spec, step.layer, part))].rows])


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
    return Mat([sinusoidal_row(r, spec.dims.d_model, spec.pe_base) for r in rows])


def argmax(row) -> int:
    """The index of the largest entry; a tie has no answer (ValueError)."""
    best = 0
    for j in range(1, len(row)):
        if (row[j] - row[best]).sign() > 0:
            best = j
    if any(j != best and (row[j] - row[best]).sign() == 0 for j in range(len(row))):
        raise ValueError("tied logits")
    return best
