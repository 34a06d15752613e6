"""A model's own norms (model_spec.py): the final norm `ln_final`, BERT's norm of the embeddings
`ln_embed` and an encoder-decoder's encoder norm `ln_encoder`, each γ (ones) and, for LayerNorm,
β (zeros) unless `weights:` gives them; and the β a model has not.

`block.bias: false` means missing biases are absent: as a block's norms lose
their β (BlockSpec.no_beta), so do each layer's and the model's own norms, unless a β is given.
"""
from __future__ import annotations

from typing import Any, Mapping

from symblock.engine import spec as specmod
from symblock.engine.matrix import ExactMatrix
from symblock.errors import SpecError

# weights key -> the name the trace gives the norm's parameters (an encoder-decoder's encoder norm
# is worked as the encoder's final norm, enc.ln_final)
TRACE_NAMES = {"ln_final": "ln_final", "ln_embed": "ln_embed", "ln_encoder": "enc.ln_final"}


def parse(raw: Any, norm: str, d: int, source: str, ln: str = "ln_final") -> dict[str, ExactMatrix]:
    """The norm `weights.<ln>`: {"gamma": 1×d, "beta": 1×d (LayerNorm only)}, defaults filled in."""
    raw = raw or {}
    if not isinstance(raw, dict):
        raise SpecError(source, f"weights.{ln}", f"expected a mapping, got {specmod.kind_of(raw)}")
    specmod.check_keys(raw, ("gamma", "beta") if norm == "layernorm" else ("gamma",), source,
                       f"weights.{ln}")
    out = {"gamma": specmod.Matrix.ones(1, d)}
    if norm == "layernorm":
        out["beta"] = specmod.Matrix.zeros(1, d)
    for key in out:
        if raw.get(key) is not None:
            out[key] = specmod.parse_matrix(raw[key], (1, d), source, f"weights.{ln}.{key}", vector=True)
    return out


def supplied(weights: Mapping, norms: Mapping[str, Mapping]) -> frozenset:
    """The model's own norm parameters `weights:` gives ("ln_final.beta"), not defaulted."""
    return frozenset(f"{ln}.{k}" for ln, norm in norms.items() for k in norm
                     if (weights.get(ln) or {}).get(k) is not None)


def no_beta(block: Mapping, stacks: tuple, norms: Mapping[str, Mapping], given: frozenset) -> frozenset:
    """The β a model has not (`bias: false` written, β not given), named as its trace names its
    parameters: each layer's (BlockSpec.no_beta: layer0.ln1.beta, enc.layer0.ln2.beta) and its own
    norms' (ln_final.beta). `stacks`: the layers and an encoder-decoder's encoder layers."""
    out = {f"{prefix}layer{i}.{n}" for prefix, stack in zip(("", "enc."), stacks)
           for i, layer in enumerate(stack) for n in layer.no_beta}
    if block.get("bias") is False:
        out |= {f"{TRACE_NAMES[ln]}.beta" for ln, norm in norms.items() if "beta" in norm and f"{ln}.beta" not in given}
    return frozenset(out)
