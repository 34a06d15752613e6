"""Exact gradients through a tiny GPT's prompt pass: a loss of the logits, back through the head,
every block (calculus/grad.py, given dL/dY from above), and into the embedding and positions.

    >>> g = backward(symblock.load("tiny-gpt"), loss="sum")
    >>> g.grads["W_E"]          # dL/dW_E, exact: the tied head's share plus the embedded rows'

Losses of the logits ℓ (n × vocab): `sum` (dL/dℓ = 1) and `mse` against a target T
(dL/dℓ = 2 (ℓ − T) / (n·vocab)), as `symblock grad` defines them for a block's output. The
generated tokens are argmaxes and carry no gradient, so only the prompt pass is differentiated.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType

from symblock.calculus import grad
from symblock.engine import block
from symblock.engine.matrix import Mat
from symblock.engine.model_spec import ModelSpec, with_length
from symblock.errors import SpecError


@dataclass(frozen=True)
class ModelBackward:
    loss: str
    loss_value: object              # exact Real
    logits: Mat
    grads: dict[str, Mat]           # dL/d every parameter (W_E, W_P, W_U, ln_final.*, layer{i}.*)


def backward(spec: ModelSpec, loss: str = "sum", target: Mat | None = None) -> ModelBackward:
    if loss not in grad.LOSSES:
        raise SpecError(spec.source, "--loss", f"expected one of {', '.join(grad.LOSSES)}, got {loss!r}")
    last = spec.layers[-1]
    if spec.final_norm and last.options.norm_position != "pre":
        raise SpecError(spec.source, "model.final_norm", "gradients through a final norm after a "
                        "Post-LN layer are not supported; set final_norm: false or a Pre-LN last layer")
    tokens, m = list(spec.prompt), len(spec.prompt)
    W_E = Mat.from_sympy(spec.W_E)
    rows = [W_E.rows[t] for t in tokens]
    if spec.positions == "learned":
        W_P = Mat.from_sympy(spec.W_P)
        rows = [[a + b for a, b in zip(r, W_P.rows[i])] for i, r in enumerate(rows)]
    elif spec.positions == "sinusoidal":
        from symblock.engine.model import sinusoidal_row
        rows = [[a + b for a, b in zip(r, sinusoidal_row(i, spec.dims.d_model, spec.pe_base))] for i, r in enumerate(rows)]
    h = Mat(rows)
    layers = []
    for i, layer in enumerate(spec.layers):
        ls = replace(with_length(layer, m), X=h)
        if i == len(spec.layers) - 1 and spec.final_norm:  # the final norm as the last block's own
            params = {**ls.params, **{f"ln_final.{k}": v for k, v in spec.final_norm.items()}}
            ls = replace(ls, options=replace(ls.options, final_norm=True), params=MappingProxyType(params))
        tr = block.forward(ls)
        layers.append((ls, tr))
        h = tr["output"].value
    head = W_E.T if spec.head == "tied" else Mat.from_sympy(spec.W_U)
    logits = h @ head
    value, dl, _ = grad.loss_grad(logits, loss, target)
    grads: dict[str, Mat] = {}
    if spec.head == "tied":
        grads["W_E"] = dl.T @ h
        dh = dl @ W_E
    else:
        grads["W_U"] = h.T @ dl
        dh = dl @ head.T
    for i in reversed(range(len(layers))):
        ls, tr = layers[i]
        names = [p for p in ls.params]
        b = grad.backward(ls, wrt=["X", *names], trace=tr, upstream=dh)
        for p in names:
            key = p if p.startswith("ln_final") else f"layer{i}.{p}"
            grads[key] = b.wrt[p].value
        dh = b.wrt["X"].value
    d = spec.dims.d_model
    emb = [list(r) for r in (grads["W_E"].rows if "W_E" in grads else grad.zeros(len(spec.vocab), d).rows)]
    for r, t in enumerate(tokens):
        emb[t] = [a + b for a, b in zip(emb[t], dh.rows[r])]
    grads["W_E"] = Mat(emb)
    if spec.positions == "learned":
        pos = [list(dh.rows[r]) if r < m else list(grad.zeros(1, d).rows[0]) for r in range(spec.W_P.shape[0])]
        grads["W_P"] = Mat(pos)
    order = ["W_E", "W_P"] + [f"layer{i}.{p}" for i, (ls, _) in enumerate(layers) for p in ls.params
                              if not p.startswith("ln_final")] + [f"ln_final.{k}" for k in spec.final_norm] + ["W_U"]
    return ModelBackward(loss, value, logits, {k: grads[k] for k in order if k in grads})
