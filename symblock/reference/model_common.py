"""What the NumPy and torch model paths share: float conversion, sinusoidal positions, the pass
over the stack (each layer through the block's own path) and the cached trace's view of a full
recompute. Each path (numeric_model, torch_model) supplies its embed, layer and head functions."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from symblock.engine.model_spec import ModelSpec, with_length


def floats(m) -> np.ndarray:
    return np.array(m.tolist(), dtype=np.float64)


def sinusoidal(m: int, d: int) -> np.ndarray:
    pos = np.arange(m)[:, None]
    i2 = (np.arange(d) // 2 * 2)[None, :]
    angle = pos / np.power(10000.0, i2 / d)
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
        nxt = _pass(spec, tokens, f"gen{t}.", out, spec.kv_cache, backend)
    return out


def _pass(spec: ModelSpec, tokens, prefix, out, cached, backend) -> int:
    embed, layer_forward, head = backend
    m = len(tokens)
    steps = embed(spec, tokens)
    h = steps["x"]
    for i, layer in enumerate(spec.layers):
        vals = layer_forward(replace(with_length(layer, m), X=h))
        steps.update({f"layer{i}.{k}": v for k, v in vals.items() if k != "x"})
        h = vals["output"]
    steps.update(head(spec, h))
    if cached:
        steps = cached_view(steps, len(spec.layers))
    out.update({prefix + k: v for k, v in steps.items()})
    return int(steps["next_token"][0, 0])


def cached_view(steps: dict[str, np.ndarray], layers: int) -> dict[str, np.ndarray]:
    """The full recompute as the cached trace names it: the last row of every step, the whole
    K and V as `cache.k`/`cache.v`; no mask step (one new row sees every cached row)."""
    out = {}
    for name, v in steps.items():
        if name.endswith(".masked"):
            continue
        if name == "next_token":
            out[name] = v
            continue
        out[name] = v[-1:]
        for i in range(layers):
            for p in "kv":  # RoPE: the cache holds the rotated keys
                if name == f"layer{i}.attn.{p}" and f"{name}_rot" not in steps or name == f"layer{i}.attn.{p}_rot":
                    out[f"layer{i}.cache.{p}"] = v
    return out
