"""The table of step kinds: what each kind of step is, in one place.

A step's kind comes from its name (`names.parse`); the entry says the shape of its value, what
working it out by hand costs (the engine's size guard), which local rule carries a gradient back
through it (`calculus.grad.RULES`, by name) and how the key works it (`work_<name>` of the sheet
builder). The consumers look a kind up here; none of them decides these things from a name.

Adding a kind (say RoPE's rotation, `attn.h0.q_rot`): `names.parse` already reads any head
step `attn.hH.<part>` as kind `<part>`; a step outside the heads (`attn.q_rot`) gets its line in
`names._KINDS`. Then
- here: one `Kind("q_rot", shape, inner, "rotate", "rotate")` entry;
- the graph and the op: `steps.HEAD_STEPS` and `steps._one_sequence` (what it reads, who reads
  it), and the exact op that records the step (`block.py`);
- the functions keyed by the kind or by the entry's names: the backward rule
  (`calculus.grad.RULES["rotate"]`), the recompute from a person's own inputs
  (`grading.recompute.RECOMPUTE["q_rot"]`), the key's working (`work_rotate` in a
  `sheets/work_*.py` mixin) and its prose (`s.q_rot` in `sheets/lang.py`);
- the independent float paths (`reference/numeric.py`, `reference/torch_ref.py`);
- its tests: `tests/engine/test_kinds.py` fails until the rule, the recompute and the working
  exist; values against NumPy and torch, a gradient against autograd, a sheet's working.

Entries that depend on the block's options (an `attn.out` without W_O is a copy; a gated
activation has its own rule; a norm is LayerNorm or RMSNorm) are functions of `Options`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Union

from symblock.engine import names

NODE = 6   # cost units per entry a step makes: an exact node costs about 6 multiply-adds

class DimsLike(Protocol):
    """steps.Dims as this table reads it (not imported: steps reads this table)."""
    @property
    def seq_len(self) -> int: ...
    @property
    def d_model(self) -> int: ...
    @property
    def d_ff(self) -> int: ...
    @property
    def heads(self) -> int: ...
    @property
    def kv_heads(self) -> int: ...
    @property
    def mem_len(self) -> int: ...
    @property
    def d_k(self) -> int: ...
    @property
    def d_v(self) -> int: ...
    @property
    def d_head(self) -> int: ...


class OptionsLike(Protocol):
    """steps.Options as this table reads it."""
    @property
    def norm(self) -> str: ...
    @property
    def out_proj(self) -> bool: ...
    @property
    def gated(self) -> bool: ...
    @property
    def attention_tiles(self) -> int: ...
    @property
    def attention_scale(self) -> str: ...
    @property
    def memory_padding(self) -> bool: ...
    @property
    def norm_position(self) -> str: ...
    @property
    def final_norm(self) -> bool: ...
    @property
    def dropout(self) -> frozenset[str]: ...


Shape = Callable[["DimsLike"], tuple[int, int]]
Inner = Callable[["DimsLike", "OptionsLike"], Union[int, None]]
Rule = Union[str, Callable[["OptionsLike"], str]]
ByOptions = Union[str, None, Callable[["OptionsLike"], Union[str, None]]]


@dataclass(frozen=True)
class Kind:
    """One kind of step. `shape` is one sequence's; `inner` the length of the sum behind each
    entry (None: the step copies entries it does not make, and costs nothing); `rule` the
    backward rule's name; `work` the key's working (None: nothing to show)."""
    name: str
    shape: Shape
    inner: Inner
    rule: Rule
    work: ByOptions

    def rule_for(self, opts: OptionsLike) -> str:
        return self.rule(opts) if callable(self.rule) else self.rule

    def work_for(self, opts: OptionsLike) -> str | None:
        return self.work(opts) if callable(self.work) else self.work


def _model(d: DimsLike) -> tuple[int, int]:
    return d.seq_len, d.d_model


def _qk(d: DimsLike) -> tuple[int, int]:
    return d.seq_len, d.heads * d.d_k


def _k(d: DimsLike) -> tuple[int, int]:
    return d.seq_len, d.kv_heads * d.d_k


def _v(d: DimsLike) -> tuple[int, int]:
    return d.seq_len, d.kv_heads * d.d_v


def _square(d: DimsLike) -> tuple[int, int]:
    return d.seq_len, d.seq_len


def _ff(d: DimsLike) -> tuple[int, int]:
    return d.seq_len, d.d_ff


def _memory(d: DimsLike) -> tuple[int, int]:
    return d.mem_len, d.d_model


def _mem_qk(d: DimsLike) -> tuple[int, int]:
    return d.mem_len, d.heads * d.d_k


def _mem_v(d: DimsLike) -> tuple[int, int]:
    return d.mem_len, d.heads * d.d_v


def _cross(d: DimsLike) -> tuple[int, int]:
    return d.seq_len, d.mem_len


def _column(d: DimsLike) -> tuple[int, int]:
    return d.seq_len, 1


def _head_v(d: DimsLike) -> tuple[int, int]:
    return d.seq_len, d.d_v


def _tile(opts: OptionsLike) -> int:
    return opts.attention_tiles


def _const(n: int | None) -> Inner:
    return lambda dims, opts: n


def _d_model(dims: DimsLike, opts: OptionsLike) -> int:
    return dims.d_model


def _with_projection(then: str) -> Callable[[OptionsLike], str | None]:
    """attn.out: a linear map with W_O, else the concatenated heads copied."""
    return lambda opts: then if opts.out_proj else None


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("x", _model, _const(None), "identity", None),
    Kind("q", _qk, _d_model, "linear", "linear"),
    Kind("k", _k, _d_model, "linear", "linear"),
    Kind("v", _v, _d_model, "linear", "linear"),
    # RoPE: each entry x_a cos − x_b sin (or x_b cos + x_a sin) of its pair: two products
    Kind("q_rot", _qk, _const(2), "rope", "rotate"),
    Kind("k_rot", _k, _const(2), "rope", "rotate"),
    Kind("scores", _square, lambda d, o: d.d_head, "scores", "scores"),
    Kind("scaled", _square, _const(0), "scaled", "scaled"),
    Kind("masked", _square, _const(0), "masked", "masked"),
    Kind("weights", _square, _const(1 + NODE), "softmax", "weights"),   # an exp, a sum's term, a division
    Kind("head_out", lambda d: (d.seq_len, d.d_v), lambda d, o: d.seq_len, "head_out", "out"),
    # the online softmax over key tiles of B (engine/tiles.py): per row a running max (B comparisons),
    # a rescaled sum (B + 1 exps, each of a difference s − m: two nodes and a term), a rescaled
    # accumulator; then accumulator / sum. The output does not read them (they are proved equal
    # to the head's out), so no gradient flows.
    Kind("tile_max", _column, lambda d, o: _tile(o), "side", "tile_max"),
    Kind("tile_sum", _column, lambda d, o: (_tile(o) + 1) * (1 + 2 * NODE), "side", "tile_sum"),
    Kind("tile_acc", _head_v, lambda d, o: _tile(o) + 1, "side", "tile_acc"),
    Kind("tiled", _head_v, _const(0), "side", "tiled"),
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
    Kind("cross_scores", _cross, lambda d, o: d.d_head, "scores", "cross_scores"),
    Kind("cross_scaled", _cross, _const(0), "scaled", "scaled"),
    Kind("cross_masked", _cross, _const(0), "masked", "cross_masked"),
    Kind("cross_weights", _cross, _const(1 + NODE), "softmax", "weights"),
    Kind("cross_head_out", lambda d: (d.seq_len, d.d_v), lambda d, o: d.mem_len, "head_out", "cross_out"),
    Kind("cross_concat", _v, _const(None), "concat", "concat"),
    Kind("cross_out", _model, lambda d, o: d.d_model if o.out_proj else None,
         lambda o: "linear" if o.out_proj else "identity", _with_projection("linear")),
)}


def of(name: str) -> Kind:
    """The kind of a block step (a `.dropped` step: the kind of the step it masks)."""
    return KINDS[names.parse(name).kind]


def shape(name: str, dims: DimsLike) -> tuple[int, int]:
    """One sequence's shape of a block step."""
    return of(name).shape(dims)


def cost(name: str, dims: DimsLike, opts: OptionsLike) -> int:
    """Units of working one block step: its entries times (the length of the sum behind each,
    plus NODE); a dropout mask applied costs a node an entry; a copy costs nothing."""
    r, c = shape(name, dims)
    if names.parse(name).dropped:    # mask ⊙ value / (1 − p)
        return r * c * NODE
    inner = of(name).inner(dims, opts)
    return 0 if inner is None else r * c * (inner + NODE)
