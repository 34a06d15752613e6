"""Exact gradients through a model's prompt pass: a loss of the logits, back through the head,
the final norm, every block (calculus/grad.py, given dL/dY from above), and into the embedding
and positions. An encoder-decoder's decoder layers also hand back dL/d the memory, which flows
on through the encoder's final norm and its stack into the source's embeddings; an encoder
without a head is differentiated through its hidden states.

    >>> g = backward(symblock.load("tiny-gpt"), loss="sum")
    >>> g.grads["W_E"]          # dL/dW_E, exact: the tied head's share plus the embedded rows'

Losses of the logits ℓ (n × vocab), or an encoder's hidden states: `sum` (dL/dℓ = 1) and `mse`
against a target T (dL/dℓ = 2 (ℓ − T) / (n·vocab)), as `symblock grad` defines them for a block's
output. The generated tokens are argmaxes and carry no gradient, so only the prompt pass is
differentiated. The forward values are the model's own trace (engine/model.py); each layer's
block trace is worked again from its input there, for grad.py's block rules.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

from symblock.calculus import grad
from symblock.engine import block, cost, parameters
from symblock.engine.matrix import Mat
from symblock.engine.model_spec import ModelSpec, with_length
from symblock.errors import SpecError

Add = Callable[[str, Mat], None]


@dataclass(frozen=True)
class ModelBackward:
    loss: str
    loss_value: object              # exact Real
    logits: Mat                     # the logits (an encoder without a head: its hidden states)
    grads: dict[str, Mat]           # dL/d every parameter (W_E, W_P, W_U, ln_final.*, layer{i}.*, enc.*)


def backward(spec: ModelSpec, loss: str = "sum", target: Mat | None = None) -> ModelBackward:
    if loss not in grad.LOSSES:
        raise SpecError(spec.source, "--loss", f"expected one of {', '.join(grad.LOSSES)}, got {loss!r}")
    from symblock.engine import model, translate
    # the prompt pass, up to the head: generated tokens carry no gradient, and a tie between the
    # largest logits (no single next token) does not stop one
    tr = model.forward(replace(spec, generate=0, head="none"))
    grads: dict[str, Mat] = {}

    def add(name: str, m: Mat) -> None:
        grads[name] = grads[name] + m if name in grads else m

    last = "norm_final" if spec.final_norm else f"layer{len(spec.layers) - 1}.output"
    h = tr[last].value
    if spec.head == "none":   # an encoder's hidden states
        out = h
        value, dh, _ = grad.loss_grad(h, loss, target)
    else:
        w = "W_E" if spec.head == "tied" else "W_U"
        head = tr.params[w]
        out = h @ head.T if spec.head == "tied" else h @ head   # ℓ = H W_Eᵀ or H W_U
        value, dl, _ = grad.loss_grad(out, loss, target)
        add(w, dl.T @ h if spec.head == "tied" else h.T @ dl)   # ℓ = H W_Eᵀ or H W_U
        dh = dl @ head if spec.head == "tied" else dl @ head.T
    if spec.final_norm:
        dh = _norm_back(tr, "norm_final", spec.layers[-1], dh, add)
    first = "norm_embed" if spec.embed_norm else "x"
    memory = tr[translate.MEMORY].value if spec.kind == "encoder-decoder" else None
    dx, dm = _stack_back(tr, spec.layers, "", first, dh, add, memory)
    if spec.embed_norm:
        dx = _norm_back(tr, "norm_embed", spec.layers[0], dx, add)
    _embed_back(tr, "", spec.prompt, dx, add)
    if dm is not None:   # the memory: the encoder's final norm of its last layer's output
        dm = _norm_back(tr, translate.MEMORY, spec.layers[-1], dm, add)
        ds, _ = _stack_back(tr, spec.encoder, "enc.", "enc.x", dm, add, None)
        _embed_back(tr, "enc.", spec.source_tokens, ds, add)
    order = {k: i for i, k in enumerate(tr.params)}   # within a part, the order the model reads them
    return ModelBackward(loss, value, out, {k: grads[k] for k in sorted(grads, key=lambda k: (_rank(k), order[k]))})


def _rank(name: str) -> int:
    """The order gradients are listed in: embeddings, the embeddings' norm, the encoder, the
    (decoder) layers, the final norm, the untied head."""
    p = parameters.parse(name)
    if p.sublayer == "embed":
        return 0
    if p.norm == "ln_embed":
        return 1
    if p.encoder:
        return 2
    if p.layer is not None:
        return 3
    return 4 if p.norm else 5


def _stack_back(tr: block.Trace, layers, prefix: str, first: str, dh: Mat, add: Add,
                memory: Mat | None) -> tuple[Mat, Mat | None]:
    """Back through a stack's layers (`prefix` "enc." for an encoder-decoder's encoder): each
    layer's parameters get their gradient; returns dL/d the stack's input and, for decoder layers
    with cross-attention, dL/d the memory (summed over the layers, which all read it)."""
    dm = None
    for i in reversed(range(len(layers))):
        x = tr[first if i == 0 else f"{prefix}layer{i - 1}.output"].value
        extra = {"memory": memory} if memory is not None else {}
        ls = replace(with_length(layers[i], x.shape[0]), X=x, **extra)
        with cost.limit(math.inf):  # the model was sized as a whole
            btr = block.forward(ls)
        params = list(ls.params)
        b = grad.backward(ls, wrt=["X", *params, *(["M"] if memory is not None else [])], trace=btr, upstream=dh)
        for p in params:
            add(f"{prefix}layer{i}.{p}", b.wrt[p].value)
        if memory is not None:
            dm = b.wrt["M"].value if dm is None else dm + b.wrt["M"].value
        dh = b.wrt["X"].value
    return dh, dm


def _norm_back(tr: block.Trace, step: str, layer, dy: Mat, add: Add) -> Mat:
    """Back through a norm of the model's own (`norm_final`, `norm_embed`, `enc.norm_final`):
    its recorded steps, reversed, with grad.py's rules; its γ, β get their gradient. Returns
    dL/d the rows it normalised."""
    from symblock.engine import names
    want = names.parse(step)
    ours = [s for s in tr.steps if (p := names.parse(s.name)).norm == want.norm and p.prefix == want.prefix]
    acc = {step: dy}

    def v(name: str) -> Mat:
        return tr[name].value if name in tr else tr.params[name]

    for s in reversed(ours):
        if s.name not in acc:
            continue
        rule, _ = grad.RULES[grad.step_kind(s.name, layer)]
        for name, m in rule(s, acc[s.name], v, layer, lambda i: True).items():
            acc[name] = acc[name] + m if name in acc else m
    for name in tr[step].inputs:
        if name in tr.params:
            add(name, acc[name])
    return acc[tr[step].inputs[0]]


def _embed_back(tr: block.Trace, prefix: str, tokens, dx: Mat, add: Add) -> None:
    """dL/d the embedding rows the tokens read and the learned positions' rows (x = E + P)."""
    emb = tr[f"{prefix}embed"]
    table = tr.params[emb.inputs[0]]
    rows = [list(r) for r in grad.zeros(*table.shape).rows]
    for r, tok in enumerate(tokens):
        rows[tok] = [a + b for a, b in zip(rows[tok], dx.rows[r])]
    add(emb.inputs[0], Mat(rows))
    pos = f"{prefix}pos"
    if pos in tr and tr[pos].inputs:   # learned positions W_P: rows 0 … n−1 (sinusoidal: constants)
        w_p = tr.params[tr[pos].inputs[0]]
        n = dx.shape[0]
        zero = list(grad.zeros(1, w_p.shape[1]).rows[0])
        add(tr[pos].inputs[0], Mat([list(dx.rows[r]) if r < n else zero for r in range(w_p.shape[0])]))

