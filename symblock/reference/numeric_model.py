"""A tiny GPT in NumPy float64: the independent path that cross-checks engine/model.py step by
step (reference/torch_model.py is the torch.nn twin; model_common.py the pass they share).

Both recompute the whole sequence at every generation step (no cache), layer by layer through the
block's own NumPy or torch path. A cached step of the exact trace is compared with the last row of
that recompute, and `cache.k`/`cache.v` with the recomputed K/V: so the cache is checked against a
computation that never had one.
"""
from __future__ import annotations

import numpy as np

from symblock.engine.model_spec import ModelSpec
from symblock.reference.model_common import floats, layer_norm, run, run_translation, sinusoidal


def forward(spec: ModelSpec) -> dict[str, np.ndarray]:
    """Every step of the exact model trace, by name, in float64."""
    from symblock.reference import numeric, numeric_cross
    if spec.kind == "encoder-decoder":
        return run_translation(spec, _embed, numeric.forward, numeric_cross.forward, _head)
    return run(spec, _embed, numeric.forward, _head)


def _embed(spec: ModelSpec, tokens: list[int]) -> dict[str, np.ndarray]:
    steps = {"embed": floats(spec.W_E)[tokens]}
    if spec.positions == "learned":
        steps["pos"] = floats(spec.W_P)[:len(tokens)]
    elif spec.positions == "sinusoidal":
        steps["pos"] = sinusoidal(len(tokens), spec.dims.d_model, spec.pe_base)
    steps["x"] = steps["embed"] + steps.get("pos", 0.0)
    if spec.embed_norm:
        steps.update(layer_norm(steps["x"], spec.embed_norm, float(spec.options.eps), "norm_embed"))
    return steps


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
    if spec.head == "none":
        return steps
    W = floats(spec.W_E).T if spec.head == "tied" else floats(spec.W_U)
    logits = steps["logits"] = h @ W
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    steps["probs"] = z / z.sum(axis=1, keepdims=True)
    steps["next_token"] = np.array([[float(np.argmax(logits[-1]))]])
    return steps
