"""The table of step kinds: what each kind of step is, in one place.

A step's kind comes from its name (`names.parse`); the entry says the shape of its value, what
working it out by hand costs (the engine's size guard), which local rule carries a gradient back
through it (`calculus.grad.RULES`, by name) and how the key works it (`work_<name>` of the sheet
builder). The consumers look a kind up here; none of them decides these things from a name.
A new kind is one entry (plus its exact op, its rule and its working, each named here).

Entries that depend on the block's options (an `attn.out` without W_O is a copy; a gated
activation has its own rule; a norm is LayerNorm or RMSNorm) are functions of `Options`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

from symblock.engine import names

NODE = 6   # cost units per entry a step makes: an exact node costs about 6 multiply-adds

# steps.Dims and steps.Options (not imported: steps reads this table)
Shape = Callable[[Any], tuple[int, int]]
ByOptions = Union[str, None, Callable[[Any], Union[str, None]]]


@dataclass(frozen=True)
class Kind:
    """One kind of step. `shape` is one sequence's; `inner` the length of the sum behind each
    entry (None: the step copies entries it does not make, and costs nothing); `rule` the
    backward rule's name; `work` the key's working (None: nothing to show)."""
    name: str
    shape: Shape
    inner: Callable[[Any, Any], Union[int, None]]
    rule: ByOptions
    work: ByOptions

    def rule_for(self, opts) -> str:
        return self.rule(opts) if callable(self.rule) else self.rule

    def work_for(self, opts) -> str | None:
        return self.work(opts) if callable(self.work) else self.work


def _model(d):
    return d.seq_len, d.d_model


def _qk(d):
    return d.seq_len, d.heads * d.d_k


def _k(d):
    return d.seq_len, d.kv_heads * d.d_k


def _v(d):
    return d.seq_len, d.kv_heads * d.d_v


def _square(d):
    return d.seq_len, d.seq_len


def _ff(d):
    return d.seq_len, d.d_ff


def _memory(d):
    return d.mem_len, d.d_model


def _mem_qk(d):
    return d.mem_len, d.heads * d.d_k


def _mem_v(d):
    return d.mem_len, d.heads * d.d_v


def _cross(d):
    return d.seq_len, d.mem_len


def _column(d):
    return d.seq_len, 1


def _head_v(d):
    return d.seq_len, d.d_v


def _tile(opts) -> int:
    return opts.attention_tiles


def _const(n):
    return lambda dims, opts: n


def _d_model(dims, opts):
    return dims.d_model


def _with_projection(then):
    """attn.out: a linear map with W_O, else the concatenated heads copied."""
    return lambda opts: then if opts.out_proj else None


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("x", _model, _const(None), "identity", None),
    Kind("q", _qk, _d_model, "linear", "linear"),
    Kind("k", _k, _d_model, "linear", "linear"),
    Kind("v", _v, _d_model, "linear", "linear"),
    # RoPE: each entry x_a cos − x_b sin (or x_b cos + x_a sin) of its pair: two products
    # (no working in the key yet: the sheet builder has no work_rope)
    Kind("q_rot", _qk, _const(2), "rope", None),
    Kind("k_rot", _k, _const(2), "rope", None),
    Kind("scores", _square, lambda d, o: d.d_head, "scores", "scores"),
    Kind("scaled", _square, _const(0), "scaled", "scaled"),
    Kind("masked", _square, _const(0), "masked", "masked"),
    Kind("weights", _square, _const(1 + NODE), "softmax", "weights"),   # an exp, a sum's term, a division
    Kind("head_out", lambda d: (d.seq_len, d.d_v), lambda d, o: d.seq_len, "head_out", "out"),
    # the online softmax over key tiles of B (engine/tiles.py): per row a running max (B comparisons),
    # a rescaled sum (B + 1 exps, each of a difference s − m: two nodes and a term), a rescaled
    # accumulator; then accumulator / sum. The output does not read them (they are proved equal
    # to the head's out), so no gradient flows.
    Kind("tile_max", _column, lambda d, o: _tile(o), "side", None),
    Kind("tile_sum", _column, lambda d, o: (_tile(o) + 1) * (1 + 2 * NODE), "side", None),
    Kind("tile_acc", _head_v, lambda d, o: _tile(o) + 1, "side", None),
    Kind("tiled", _head_v, _const(0), "side", None),
    Kind("concat", lambda d: (d.seq_len, d.heads * d.d_v), _const(None), "concat", "concat"),
    Kind("attn_out", _model, lambda d, o: d.d_model if o.out_proj else None,
         lambda o: "linear" if o.out_proj else "identity", _with_projection("linear")),
    Kind("resid", _model, _const(0), "residual", "add"),
    Kind("hidden", _ff, _d_model, "linear", "linear"),
    Kind("gate", _ff, _d_model, "linear", "linear"),
    Kind("act", _ff, _const(3 * NODE), lambda o: "gated" if o.gated else "activation", "act"),  # GELU/SiLU: a few nodes
    Kind("ffn_out", _model, lambda d, o: d.d_ff, "linear", "linear"),
    Kind("mean", _column, _d_model, "mean", "mean"),
    Kind("var", _column, _d_model, "var", "var"),
    Kind("std", _column, _const(0), "root", "std"),
    Kind("ms", _column, _d_model, "ms", "ms"),
    Kind("rms", _column, _const(0), "root", "rms"),
    Kind("norm", _model, _const(0), lambda o: o.norm, lambda o: o.norm),
    Kind("output", _model, _const(None), "identity", "copy"),
    # a decoder layer's cross-attention (engine/cross.py): queries from the decoder, keys and
    # values from the memory, so its keys, values and scores have the memory's rows
    Kind("memory", _memory, _const(None), "identity", None),
    Kind("cross_q", _qk, _d_model, "linear", "linear"),
    Kind("cross_k", _mem_qk, _d_model, "linear", "linear"),
    Kind("cross_v", _mem_v, _d_model, "linear", "linear"),
    Kind("cross_scores", _cross, lambda d, o: d.d_head, "scores", "scores"),
    Kind("cross_scaled", _cross, _const(0), "scaled", "scaled"),
    Kind("cross_masked", _cross, _const(0), "masked", "masked"),
    Kind("cross_weights", _cross, _const(1 + NODE), "softmax", "weights"),
    Kind("cross_head_out", lambda d: (d.seq_len, d.d_v), lambda d, o: d.mem_len, "head_out", "out"),
    Kind("cross_concat", _v, _const(None), "concat", "concat"),
    Kind("cross_out", _model, lambda d, o: d.d_model if o.out_proj else None,
         lambda o: "linear" if o.out_proj else "identity", _with_projection("linear")),
)}


def of(name: str) -> Kind:
    """The kind of a block step (a `.dropped` step: the kind of the step it masks)."""
    return KINDS[names.parse(name).kind]


def shape(name: str, dims) -> tuple[int, int]:
    """One sequence's shape of a block step."""
    return of(name).shape(dims)


def cost(name: str, dims, opts) -> int:
    """Units of working one block step: its entries times (the length of the sum behind each,
    plus NODE); a dropout mask applied costs a node an entry; a copy costs nothing."""
    r, c = shape(name, dims)
    if names.parse(name).dropped:    # mask ⊙ value / (1 − p)
        return r * c * NODE
    inner = of(name).inner(dims, opts)
    return 0 if inner is None else r * c * (inner + NODE)
