"""Step names, parsed once: the one reader of the step vocabulary's grammar.

A step name is a block-level name under optional prefixes, outermost first:

    grad.                  a gradient of the step (calculus)
    enc.                   the encoder stack of an encoder-decoder (its source pass, worked once)
    gen1.                  generation step t of a tiny GPT (0: the prompt pass, unprefixed)
    b1.                    sequence 1 of a batch
    layer0.                layer 0 of a tiny GPT
    attn.h0.scores         the block-level name (its `base`; `cross.h0.scores` in a decoder layer)
    attn.h0.tile1.sum      a head's step for key tile 1 of its online softmax (`tile`)
    .dropped               suffix: the step after its fixed dropout mask

`parse` turns a name into a `StepName`, whose `kind` is what the step computes whichever instance
it is ('q', 'scores', 'head_out', 'tile_sum', 'mean', 'norm', 'resid', 'cache_k', 'logits', …). Consumers read
these fields instead of cutting names apart with `split` and `startswith`.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

NORM_STAT_NAMES = ("mean", "var", "std", "ms", "rms")
DROPPED = ".dropped"
GRAD = "grad."

_PREFIX = re.compile(r"^(grad\.)?(enc\.)?(?:gen(\d+)\.)?(?:b(\d+)\.)?(?:layer(\d+)\.)?")
_HEAD = re.compile(r"^(attn|cross)\.h(\d+)\.(?:tile(\d+)\.)?(\w+)$")
TILE_PARTS = ("max", "sum", "acc")  # a key tile's running max, rescaled sum and accumulator
_NORM = re.compile(r"^(norm\d*|norm_final|norm_embed)(?:\.(\w+))?$")
_KINDS = {"x": "x", "attn.q": "q", "attn.k": "k", "attn.v": "v", "attn.q_rot": "q_rot",
          "attn.k_rot": "k_rot", "attn.concat": "concat",
          "attn.out": "attn_out", "resid1": "resid", "resid2": "resid", "ffn.hidden": "hidden",
          "ffn.gate": "gate", "ffn.act": "act", "ffn.out": "ffn_out", "output": "output",
          "embed": "embed", "pos": "pos", "logits": "logits", "probs": "probs",
          "next_token": "next_token", "cache.k": "cache_k", "cache.v": "cache_v",
          "cache.reused": "cache_reused", "resid3": "resid", "memory": "memory", "cross.q": "cross_q",
          "cross.k": "cross_k", "cross.v": "cross_v", "cross.concat": "cross_concat",
          "cross.out": "cross_out"}


@dataclass(frozen=True)
class StepName:
    """One step name's parts. `base` is the block-level name without prefixes or `.dropped`;
    `head` is the attention head of an `attn.hH.*` (or a decoder layer's `cross.hH.*`) step and
    `tile` the key tile of an `attn.hH.tileJ.*` step (its kind `tile_max`, `tile_sum` or
    `tile_acc`); `norm` the norm of a norm step (`norm1` for `norm1.std`) and `stat` its
    statistic (None for the normalised rows)."""
    full: str
    base: str
    kind: str
    grad: bool = False
    gen: int = 0
    batch: int | None = None
    layer: int | None = None
    head: int | None = None
    tile: int | None = None
    norm: str | None = None
    stat: str | None = None
    dropped: bool = False
    encoder: bool = False   # a step of an encoder-decoder's encoder stack (`enc.`)

    @property
    def prefix(self) -> str:
        """Everything before `base` but the gradient's `grad.`: "gen1.layer0.", "b1.", ""."""
        return ("enc." if self.encoder else "") + _prefix(gen=self.gen, batch=self.batch, layer=self.layer)

    @property
    def part(self) -> str:
        """The last part of the base: "scores" of `attn.h0.scores`, "std" of `norm1.std`."""
        return self.base.rsplit(".", 1)[-1]

    @property
    def section(self) -> str:
        """The part of the block the step belongs to: "attn", "ffn", "norm1", "cache", "resid1", …"""
        return self.base.split(".", 1)[0]

    @property
    def head_prefix(self) -> str:
        """The name of this head's steps up to the last dot: "gen1.layer0.attn.h1", "cross.h0"."""
        return f"{self.prefix}{self.section}.h{self.head}"

    def sibling(self, base: str) -> str:
        """Another step of the same instance (prefixes kept): `sibling("attn.h0.scores")`."""
        return self.prefix + base

    def head_step(self, part: str) -> str:
        """Another step of this head: `head_step("scores")` of `attn.h1.masked` is `attn.h1.scores`."""
        return f"{self.head_prefix}.{part}"


def _prefix(gen: int = 0, batch: int | None = None, layer: int | None = None) -> str:
    return ((f"gen{gen}." if gen else "") + ("" if batch is None else f"b{batch}.")
            + ("" if layer is None else f"layer{layer}."))


@functools.lru_cache(maxsize=4096)
def parse(name: str) -> StepName:
    """The parts of a step name (never fails: an unknown base has kind 'other')."""
    m = _PREFIX.match(name)
    grad, enc, gen, batch, layer = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)
    rest = name[m.end():]
    dropped = rest.endswith(DROPPED)
    base = rest[:-len(DROPPED)] if dropped else rest
    head = tile = norm = stat = None
    if (h := _HEAD.match(base)) and (h.group(3) is None or h.group(4) in TILE_PARTS):
        head, part = int(h.group(2)), h.group(4)
        if h.group(3) is not None:
            tile, kind = int(h.group(3)), f"tile_{part}"
        else:
            kind = "head_out" if part == "out" else part
        if h.group(1) == "cross":  # a decoder layer's cross-attention head
            kind = f"cross_{kind}"
    elif (n := _NORM.match(base)) and (n.group(2) is None or n.group(2) in NORM_STAT_NAMES):
        norm, stat = n.group(1), n.group(2)
        kind = stat or "norm"
    else:
        kind = _KINDS.get(base, "other")
    return StepName(full=name, base=base, kind=kind, grad=bool(grad), gen=int(gen or 0),
                    batch=None if batch is None else int(batch),
                    layer=None if layer is None else int(layer), head=head, tile=tile, norm=norm, stat=stat,
                    dropped=dropped, encoder=bool(enc))


def name_of(base: str, gen: int = 0, batch: int | None = None, layer: int | None = None) -> str:
    """The full name of a block-level step under the given prefixes (the inverse of `parse`)."""
    return _prefix(gen=gen, batch=batch, layer=layer) + base
