"""What the NumPy and torch model paths share: float conversion, sinusoidal positions, the pass
over the stack (each layer through the block's own path) and the cached trace's view of a full
recompute. Each path (numeric_model, torch_model) supplies its embed, layer and head functions."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from symblock.engine import names
from symblock.engine.model_spec import ModelSpec, with_length
from symblock.reference.numeric import nudge


def floats(m) -> np.ndarray:
    return nudge(np.array(m.tolist(), dtype=np.float64))


def layer_norm(x: np.ndarray, table, eps: float, name: str) -> dict[str, np.ndarray]:
    """`name`'s statistics and rows: LayerNorm with γ, β of `table` (population variance, ε inside)."""
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    std = np.sqrt(var + eps)
    return {f"{name}.mean": mu, f"{name}.var": var, f"{name}.std": std,
            name: (x - mu) / std * floats(table["gamma"]) + floats(table["beta"])}


def sinusoidal(m: int, d: int, base=10000) -> np.ndarray:
    pos = np.arange(m)[:, None]
    i2 = (np.arange(d) // 2 * 2)[None, :]
    angle = pos / np.power(float(base), i2 / d)
    return np.where(np.arange(d)[None, :] % 2 == 0, np.sin(angle), np.cos(angle))


def run(spec: ModelSpec, embed, layer_forward, head) -> dict[str, np.ndarray]:
    """Every step of the exact model trace, by name, in float64, recomputing the whole sequence
    at every generation step (no cache)."""
    out: dict[str, np.ndarray] = {}
    tokens = list(spec.prompt)
    backend = (embed, layer_forward, head)
    nxt = _pass(spec, tokens, "", out, False, backend)
    for t in range(1, spec.generate + 1):
        tokens.append(nxt)
        nxt = _pass(spec, tokens, t, out, spec.kv_cache, backend)
    return out


def _pass(spec: ModelSpec, tokens, gen, out, cached, backend) -> int:
    embed, layer_forward, head = backend
    m = len(tokens)
    steps = embed(spec, tokens)
    h = steps.get("norm_embed", steps["x"])  # an encoder's norm of the embeddings, when it has one
    for i, layer in enumerate(spec.layers):
        vals = layer_forward(replace(with_length(layer, m), X=h))
        steps.update({names.name_of(k, layer=i): v for k, v in vals.items() if k != "x"})
        h = vals["output"]
    steps.update(head(spec, h))
    if cached:
        steps = cached_view(steps)
    out.update({names.name_of(k, gen=gen): v for k, v in steps.items()})
    return int(steps["next_token"][0, 0]) if "next_token" in steps else -1  # an encoder: no head


CACHED = {"attn.k": "k", "attn.v": "v", "attn.k_rot": "k"}   # a layer's step -> the cache it fills


def cached_view(steps: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The full recompute as the cached trace names it: the last row of every step, the whole
    K and V as `cache.k`/`cache.v` (and a decoder layer's cross-attention K and V, which are the
    memory's); no mask step (one new row sees every cached row)."""
    out = {}
    for name, v in steps.items():
        step = names.parse(name)
        if step.kind == "masked" and not step.dropped:
            continue
        whole = step.kind in ("next_token", "cross_k", "cross_v")   # a token; the memory's K and V
        out[name] = v if whole else v[-1:]
        part = CACHED.get(step.base) if step.layer is not None else None
        if part and (step.base != f"attn.{part}" or step.sibling(f"attn.{part}_rot") not in steps):
            out[step.sibling(f"cache.{part}")] = v   # RoPE: the cache holds the rotated keys
    return out


def run_translation(spec: ModelSpec, embed, encoder_layer, decoder_layer, head) -> dict[str, np.ndarray]:
    """An encoder-decoder's steps by name (engine/translate.py's), in float64: the encoder stack
    and its final norm once, then the decoder stack and the head for the prompt and every
    generated token, the whole target recomputed each time."""
    src = list(spec.source_tokens)
    steps = embed(spec if spec.W_E_src is None else replace(spec, W_E=spec.W_E_src), src)  # its own table
    h = steps["x"]
    for i, layer in enumerate(spec.encoder):
        vals = encoder_layer(replace(with_length(layer, len(src)), X=h))
        steps.update({f"layer{i}.{k}": v for k, v in vals.items() if k != "x"})
        h = vals["output"]
    steps.update(layer_norm(h, spec.encoder_norm, float(spec.options.eps), "norm_final"))
    memory = steps["norm_final"]
    out = {f"enc.{k}": v for k, v in steps.items()}
    tokens = list(spec.prompt)
    for t in range(spec.generate + 1):
        steps = embed(spec, tokens)
        h = steps["x"]
        for i, layer in enumerate(spec.layers):
            vals = decoder_layer(replace(with_length(layer, len(tokens)), X=h, memory=memory))
            steps.update({f"layer{i}.{k}": v for k, v in vals.items() if k not in ("x", "memory")})
            h = vals["output"]
        steps.update(head(spec, h))
        if t and spec.kv_cache:
            steps = cached_view(steps)
        out.update({(f"gen{t}." if t else "") + k: v for k, v in steps.items()})
        tokens.append(int(steps["next_token"][0, 0]))
    return out
