"""A tiny GPT in NumPy float64 (and, with `backend="torch"`, through real torch.nn modules): the
independent paths that cross-check engine/model.py step by step.

Both recompute the whole sequence at every generation step (no cache), layer by layer through the
block's own NumPy or torch path. A cached step of the exact trace is compared with the last row of
that recompute, and `cache.k`/`cache.v` with the recomputed K/V: so the cache is checked against a
computation that never had one.
"""
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


def forward(spec: ModelSpec, backend: str = "numpy") -> dict[str, np.ndarray]:
    """Every step of the exact model trace, by name, in float64."""
    if backend == "torch":
        from symblock.reference import torch_model
        layer_forward, embed, head = torch_model.layer_forward, torch_model.embed, torch_model.head
    else:
        from symblock.reference import numeric
        layer_forward, embed, head = numeric.forward, _embed, _head
    out: dict[str, np.ndarray] = {}
    tokens = list(spec.prompt)
    backend = (embed, layer_forward, head)
    nxt = _pass(spec, tokens, "", out, False, backend)
    for t in range(1, spec.generate + 1):
        tokens.append(nxt)
        nxt = _pass(spec, tokens, f"gen{t}.", out, spec.kv_cache, backend)
    return out


def _embed(spec: ModelSpec, tokens: list[int]) -> dict[str, np.ndarray]:
    steps = {"embed": floats(spec.W_E)[tokens]}
    if spec.positions == "learned":
        steps["pos"] = floats(spec.W_P)[:len(tokens)]
    elif spec.positions == "sinusoidal":
        steps["pos"] = sinusoidal(len(tokens), spec.dims.d_model)
    steps["x"] = steps["embed"] + steps.get("pos", 0.0)
    return steps


def _pass(spec, tokens, prefix, out, cached, backend) -> int:
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


def _head(spec: ModelSpec, h: np.ndarray) -> dict[str, np.ndarray]:
    steps = {}
    if spec.final_norm:
        gamma = floats(spec.final_norm["gamma"])
        eps = float(spec.options.eps)
        if spec.options.norm == "layernorm":
            mu = h.mean(axis=1, keepdims=True)
            var = ((h - mu) ** 2).mean(axis=1, keepdims=True)
            std = np.sqrt(var + eps)
            steps.update({"norm_final.mean": mu, "norm_final.var": var, "norm_final.std": std})
            h = (h - mu) / std * gamma + floats(spec.final_norm["beta"])
        else:
            ms = (h ** 2).mean(axis=1, keepdims=True)
            rms = np.sqrt(ms + eps)
            steps.update({"norm_final.ms": ms, "norm_final.rms": rms})
            h = h / rms * gamma
        steps["norm_final"] = h
    W = floats(spec.W_E).T if spec.head == "tied" else floats(spec.W_U)
    logits = steps["logits"] = h @ W
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    steps["probs"] = z / z.sum(axis=1, keepdims=True)
    steps["next_token"] = np.array([[float(np.argmax(logits[-1]))]])
    return steps


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
            for p in "kv":
                if name == f"layer{i}.attn.{p}":
                    out[f"layer{i}.cache.{p}"] = v
    return out
