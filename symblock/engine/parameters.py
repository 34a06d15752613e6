"""Parameter names, parsed once: the one reader of the parameters' grammar (beside `names`).

A parameter name is a block-level name under optional prefixes, outermost first:

    grad.                  the gradient of the parameter (calculus)
    enc.                   the encoder stack of an encoder-decoder
    b1.                    sequence 1 of a batch (only its input: `b1.X`)
    layer0.                layer 0 of a tiny GPT
    cross.                 a decoder layer's cross-attention (`cross.W_Q`, `layer0.cross.b_O`)
    W_Q, b_1               a weight matrix or a bias row, with its subscript (`sub`)
    ln1.gamma              a norm's scale or shift (`norm` "ln1", kind "gamma")
    X                      the block's input

`parse` never fails: a name that is none of these has kind 'other'. Consumers read the fields
instead of cutting names apart with `split`, `startswith` and `endswith`.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_PREFIX = re.compile(r"^(grad\.)?(enc\.)?(?:b(\d+)\.)?(?:layer(\d+)\.)?(cross\.)?")
_LINEAR = re.compile(r"^([Wb])_([A-Za-z0-9]+)$")
_NORM = re.compile(r"^(ln\w*)\.(gamma|beta)$")
_NORM_STEP = re.compile(r"^norm(\d*|_final|_embed)$")
_SUBLAYERS = {**{s: "attn" for s in "QKVO"}, **{s: "ffn" for s in "123"},
              "E": "embed", "P": "embed", "U": "head"}


@dataclass(frozen=True)
class ParamName:
    """One parameter name's parts. `kind` is 'weight' (W_*), 'bias' (b_*), 'gamma', 'beta',
    'input' (X) or 'other'; `sub` the subscript of a weight or bias ("Q" of W_Q, "1" of b_1);
    `norm` the norm of a γ or β ("ln1", "ln_final")."""
    full: str
    base: str
    kind: str
    grad: bool = False
    batch: int | None = None
    layer: int | None = None
    sub: str | None = None
    norm: str | None = None
    encoder: bool = False   # a parameter of an encoder-decoder's encoder stack (`enc.`)
    cross: bool = False     # a weight of a decoder layer's cross-attention (`cross.`)

    @property
    def prefix(self) -> str:
        """Everything before `base` but the gradient's `grad.`: "b1.", "layer0.", "layer0.cross.", ""."""
        return (("enc." if self.encoder else "") + ("" if self.batch is None else f"b{self.batch}.")
                + ("" if self.layer is None else f"layer{self.layer}.") + ("cross." if self.cross else ""))

    @property
    def vector(self) -> bool:
        """A bias, γ or β: one row in math layout, a 1-D tensor in torch's."""
        return self.kind in ("bias", "gamma", "beta")

    @property
    def linear(self) -> bool:
        """A weight matrix or a bias of a linear map (W_Q, b_1, W_E)."""
        return self.kind in ("weight", "bias")

    @property
    def sublayer(self) -> str | None:
        """What the parameter belongs to: "attn" (W_Q…b_O), "ffn" (W_1…b_3), "norm" (γ, β),
        "embed" (W_E, W_P), "head" (W_U); None for X."""
        if self.norm:
            return "norm"
        if self.cross and self.sub in ("Q", "K", "V", "O"):
            return "cross"
        return _SUBLAYERS.get(self.sub or "")


@functools.lru_cache(maxsize=1024)
def parse(name: str) -> ParamName:
    """The parts of a parameter name (never fails: anything else has kind 'other')."""
    m = _PREFIX.match(name)
    assert m is not None  # every part of the prefix is optional: it matches any name
    grad, enc, batch, layer, cross = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)
    base = name[m.end():]
    kw: dict = {"full": name, "base": base, "grad": bool(grad),
                "batch": None if batch is None else int(batch),
                "layer": None if layer is None else int(layer), "encoder": bool(enc), "cross": bool(cross)}
    if (w := _LINEAR.match(base)):
        return ParamName(kind="weight" if w.group(1) == "W" else "bias", sub=w.group(2), **kw)
    if (n := _NORM.match(base)):
        return ParamName(kind=n.group(2), norm=n.group(1), **kw)
    return ParamName(kind="input" if base == "X" else "other", **kw)


def of_norm(norm: str) -> str:
    """The parameters' section of a norm step: "ln1" of `norm1`, "ln_final" of `norm_final`
    (its γ is `ln1.gamma`)."""
    if not _NORM_STEP.match(norm):
        raise ValueError(f"{norm!r} is not a norm step")
    return "ln" + norm[len("norm"):]
