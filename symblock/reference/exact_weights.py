"""A model's numbers as a spec writes them: each float64 weight as its exact decimal, a
configuration's ε or θ as written (the shortest decimal of its float), matrices in math layout, a block's `weights:` and `inputs:` sections, and the refusal of what the block cannot
express. The readers of spec_from.py and spec_from_llama.py share them."""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Mapping, NamedTuple

import numpy as np

from symblock.errors import SpecError


class Unsupported(SpecError):
    """The object has an option the exact block cannot express (`where`: the config field that says so)."""

    def __init__(self, what: str, why: str, where: str = ""):
        super().__init__(what, where, why)


class Source(NamedTuple):
    """Where a reader's config and weights came from, as its messages name them: a live object by
    its kind ("gpt2"), a saved model by its files and the fields inside them (a nanoGPT ckpt.pt
    holds both, as `model_args.` and `model.`); `prompt` is what the token ids are called."""
    config: str
    weights: str
    config_field: str = ""
    weights_field: str = ""
    prompt: str = "the prompt"

    def bad_config(self, key: str, message: str) -> SpecError:
        return SpecError(self.config, self.config_field + key, message)

    def bad_weight(self, key: str, message: str) -> SpecError:
        return SpecError(self.weights, self.weights_field + key, message)


def exact(x: float) -> str:
    """The exact decimal of a float64 value ("0.1000000000000000055511151231257827...")."""
    d = Decimal(float(x))
    return "0" if d == 0 else format(d, "f")   # no normalize(): it rounds to 28 digits


def written(x: float) -> str:
    """A configuration's number (LayerNorm's ε, RoPE's θ) as its author wrote it: the shortest decimal
    that reads back as the same float ("1e-05", not the 1e-05 float's 71 digits), read exactly by
    the spec (1e-05 = 1/100000)."""
    text = repr(float(x))
    return "0" if float(x) == 0 else text[:-2] if text.endswith(".0") else text


def matrix(a) -> list:
    """A 2-D array as rows of exact decimals (a 1-D array as one row)."""
    a = np.asarray(a, dtype=np.float64)
    return [[exact(v) for v in row] for row in (a.reshape(1, -1) if a.ndim == 1 else a)]


def vector(a) -> list:
    return [exact(v) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def arrays(state: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """A state dict (torch tensors or arrays) as float64 NumPy arrays."""
    out = {}
    for k, v in state.items():
        if hasattr(v, "detach"):
            v = v.detach().to("cpu").double().numpy()
        out[k] = np.asarray(v, dtype=np.float64)
    return out


def refuse(obj_name: str, checks: list[tuple[bool, str]]) -> None:
    for bad, why in checks:
        if bad:
            raise Unsupported(obj_name, why)


# ---------------------------------------------------------------- one block's weights

def block_weights(q, k, v, o, w1, w2, biases: Mapping[str, Any], norms: Mapping[str, tuple]) -> dict:
    """A block's `weights:` in math layout (x W): every matrix d_in × d_out, biases as rows,
    norms as {gamma, beta}; a None bias is left out."""
    w = {"W_Q": matrix(q), "W_K": matrix(k), "W_V": matrix(v), "W_O": matrix(o),
         "W_1": matrix(w1), "W_2": matrix(w2)}
    w.update({name: vector(b) for name, b in biases.items() if b is not None})
    for name, (gamma, beta) in norms.items():
        w[name] = {"gamma": vector(gamma), **({"beta": vector(beta)} if beta is not None else {})}
    return w


def inputs_of(x, padding=None) -> dict:
    """`inputs:` from a (seq, d) or (batch, seq, d) array (a batch of one is one sequence) and an
    optional (batch, seq) padding mask (torch semantics: True = padding)."""
    x = np.asarray(x, dtype=np.float64)
    one = x.ndim == 2 or len(x) == 1
    out: dict[str, Any] = {"X": matrix(x.reshape(x.shape[-2:])) if one else [matrix(m) for m in x]}
    if padding is not None:
        p = np.asarray(padding, dtype=bool).reshape(-1, x.shape[-2])
        out["key_padding_mask"] = [bool(b) for b in p[0]] if one else [[bool(b) for b in row] for row in p]
    return out


def host(x):
    """A tensor or array as float64 NumPy (on the host)."""
    return x.detach().to("cpu").double().numpy() if hasattr(x, "detach") else np.asarray(x, dtype=np.float64)


def as_array(mask):
    """A tensor or array (a mask, token ids) as a NumPy array of its own dtype; None stays None."""
    return None if mask is None else (mask.detach().cpu().numpy() if hasattr(mask, "detach") else mask)
