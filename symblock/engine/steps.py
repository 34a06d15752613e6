"""The step vocabulary (docs/reference/steps.md): which named steps a configuration has, in forward order,
their shapes, and which parameters each one reads.

Shared by the spec loader (to validate `given` and decide which weights are needed), the exact
engine, and the NumPy/torch paths (so every backend produces the same names). Pure data, no maths.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from symblock.engine import cross_steps, kinds, names, tiles
from symblock.engine.names import DROPPED

if TYPE_CHECKING:
    from symblock.engine.numbers import SpecScalar
    from symblock.engine.rope import Rope

NORM_STATS = {"layernorm": ("mean", "var", "std"), "rmsnorm": ("ms", "rms")}
HEAD_STEPS = ("scores", "scaled", "masked", "weights", "out")
GATED = ("swiglu", "geglu")
ROPE_STEPS = ("attn.q_rot", "attn.k_rot")  # q and k turned by their positions (block.rope)
DROPOUT_KINDS = ("weights", "attn_out", "act", "ffn_out")  # where a fixed dropout mask may sit


@dataclass(frozen=True)
class Dims:
    """Shapes. `d_k`, `d_v` are per-head widths of Q/K and V (0 = the default d_model/heads);
    `batch` is the number of sequences of a batch (0 = one sequence, steps unprefixed);
    `mem_len` the memory's rows of a decoder layer with cross-attention (0: none)."""
    seq_len: int
    d_model: int
    d_ff: int
    heads: int
    d_k: int = 0
    d_v: int = 0
    batch: int = 0
    kv_heads: int = 0   # grouped K/V heads (0 = heads: one K/V head per query head)
    mem_len: int = 0

    def __post_init__(self) -> None:
        for key in ("d_k", "d_v"):
            if not getattr(self, key):
                object.__setattr__(self, key, self.d_model // self.heads)
        if not self.kv_heads:
            object.__setattr__(self, "kv_heads", self.heads)

    @property
    def group(self) -> int:
        """Query heads per K/V head: query head h reads K/V head h // group."""
        return self.heads // self.kv_heads

    @property
    def d_head(self) -> int:
        """The width of one head's queries and keys: the d_k of the 1/√d_k scale."""
        return self.d_k


@dataclass(frozen=True)
class Options:
    """The `block:` section of a spec (its defaults: docs/reference/spec.md)."""
    norm_position: str = "post"
    norm: str = "layernorm"
    eps: SpecScalar = 0  # exact once loaded: a Fraction (a SymPy expression when irrational)
    final_norm: bool = False
    activation: str = "relu"
    attention_scale: str = "sqrt_dk"
    causal: bool = False
    bias: bool = False
    out_proj: bool = True
    padding: bool = False  # inputs.key_padding_mask given: every head has a `.masked` step
    dropout: frozenset[str] = field(default_factory=frozenset)  # full names of steps with a mask
    attention_tiles: int = 0  # keys per tile of the online softmax (engine/tiles.py); 0 = none
    rope: Rope | None = None  # engine/rope.Rope (θ and pair style), or None: no rotation of q and k
    cross_attention: bool = False  # a decoder layer: self-attention, cross-attention, FFN (cross_steps.py)
    memory_padding: bool = False   # inputs.memory_padding_mask given: every cross head has `.masked`

    @property
    def gated(self) -> bool:
        return self.activation in GATED


def norm_steps(name: str, opts: Options) -> list[str]:
    return [f"{name}.{s}" for s in NORM_STATS[opts.norm]] + [name]


def head_steps(h: int, opts: Options) -> list[str]:
    keep = {"scores", "weights", "out"}
    if opts.attention_scale != "none":
        keep.add("scaled")
    if opts.causal or opts.padding:
        keep.add("masked")
    return [f"attn.h{h}.{s}" for s in HEAD_STEPS if s in keep]


def attention_steps(dims: Dims, opts: Options) -> list[str]:
    names = ["attn.q", "attn.k", "attn.v"] + (list(ROPE_STEPS) if opts.rope else [])
    for h in range(dims.heads):
        names += head_steps(h, opts) + tiles.tile_steps(h, dims, opts)
    if dims.heads > 1:
        names.append("attn.concat")
    return names + ["attn.out"]


def ffn_steps(opts: Options) -> list[str]:
    return ["ffn.hidden"] + (["ffn.gate"] if opts.gated else []) + ["ffn.act", "ffn.out"]


def step_names(dims: Dims, opts: Options) -> list[str]:
    """Every step of the block, in forward order (a batch: each sequence's, prefixed)."""
    return list(step_inputs(dims, opts))


def batch_prefixes(dims: Dims) -> list[str]:
    """The step-name prefix of each sequence: `b0.`, `b1.`, … for a batch, else one ``."""
    return [f"b{i}." for i in range(dims.batch)] if dims.batch else [""]


def split_batch(name: str) -> tuple[str, str]:
    """("b1.", "attn.q") for "b1.attn.q"; ("", name) outside a batch."""
    batch = names.parse(name).batch
    prefix = "" if batch is None else names.name_of("", batch=batch)
    return (prefix, name[len(prefix):]) if prefix and name.startswith(prefix) else ("", name)


def batch_index(name: str) -> int:
    """The sequence a step belongs to (0 outside a batch)."""
    prefix = split_batch(name)[0]
    return int(prefix[1:-1]) if prefix else 0


def _base_names(dims: Dims, opts: Options) -> list[str]:
    """One sequence's steps without dropout, in forward order."""
    if opts.norm_position == "pre":
        names = ["x", *norm_steps("norm1", opts), *attention_steps(dims, opts), "resid1",
                 *norm_steps("norm2", opts), *ffn_steps(opts), "resid2"]
        if opts.final_norm:
            names += norm_steps("norm_final", opts)
    else:
        names = ["x", *attention_steps(dims, opts), "resid1", *norm_steps("norm1", opts),
                 *ffn_steps(opts), "resid2", *norm_steps("norm2", opts)]
    return names + ["output"]


def step_kind(name: str) -> str:
    """What a step computes, whichever instance it is (names.parse's kind), or 'dropped' for a
    `<step>.dropped`; a batch's `b1.` prefix changes nothing."""
    parsed = names.parse(name)
    return "dropped" if parsed.dropped else parsed.kind


def head_index(name: str) -> int:
    head = names.parse(name).head
    if head is None:
        raise ValueError(f"{name!r} is not a step of an attention head")
    return head


def head_columns(name: str, dims: Dims) -> tuple[int, int]:
    """The columns of Q and K that head step `attn.hH.*` uses: [H·d_k, (H+1)·d_k)."""
    h = head_index(name)
    return h * dims.d_k, (h + 1) * dims.d_k


def kv_head(h: int, dims: Dims) -> int:
    """The K/V head query head h reads: h // (heads/kv_heads), as Hugging Face's repeat_kv."""
    return h // dims.group


def key_columns(name: str, dims: Dims) -> tuple[int, int]:
    """The columns of K that head step `attn.hH.*` uses: its K/V head G's [G·d_k, (G+1)·d_k)."""
    g = kv_head(head_index(name), dims)
    return g * dims.d_k, (g + 1) * dims.d_k


def value_columns(name: str, dims: Dims) -> tuple[int, int]:
    """The columns of V that head step `attn.hH.*` uses: its K/V head G's [G·d_v, (G+1)·d_v)."""
    g = kv_head(head_index(name), dims)
    return g * dims.d_v, (g + 1) * dims.d_v


def step_shape(name: str, dims: Dims) -> tuple[int, int]:
    """One sequence's shape of a block step (the table of kinds says)."""
    return kinds.shape(name, dims)


def step_shapes(dims: Dims, opts: Options) -> dict[str, tuple[int, int]]:
    return {name: step_shape(name, dims) for name in step_names(dims, opts)}


# ---------------------------------------------------------------- parameters

def norm_names(opts: Options) -> list[str]:
    names = ["ln1", "ln2"] + (["ln3"] if opts.cross_attention else [])
    if opts.norm_position == "pre" and opts.final_norm:
        names.append("ln_final")
    return names


def param_shape(name: str, dims: Dims) -> tuple[int, int]:
    """Math layout: weights (in, out); vectors as 1 × n rows."""
    d, f = dims.d_model, dims.d_ff
    q, o = dims.heads * dims.d_k, dims.heads * dims.d_v
    k, v = dims.kv_heads * dims.d_k, dims.kv_heads * dims.d_v
    return {
        "W_Q": (d, q), "W_K": (d, k), "W_V": (d, v), "W_O": (o, d),
        "b_Q": (1, q), "b_K": (1, k), "b_V": (1, v), "b_O": (1, d),
        "W_1": (d, f), "b_1": (1, f), "W_3": (d, f), "b_3": (1, f),
        "W_2": (f, d), "b_2": (1, d),
    }.get(name.removeprefix("cross."), (1, d))  # ln*.gamma / ln*.beta; cross.W_Q as W_Q


def param_names(opts: Options) -> list[str]:
    """Every parameter this configuration can use, in a fixed order (random draws follow it)."""
    names = ["W_Q", "b_Q", "W_K", "b_K", "W_V", "b_V"]
    if opts.out_proj:
        names += ["W_O", "b_O"]
    if opts.cross_attention:
        names += cross_steps.param_names(opts)
    names += ["W_1", "b_1"] + (["W_3", "b_3"] if opts.gated else []) + ["W_2", "b_2"]
    for ln in norm_names(opts):
        names += [f"{ln}.gamma"] + ([f"{ln}.beta"] if opts.norm == "layernorm" else [])
    return names


def step_inputs(dims: Dims, opts: Options) -> dict[str, tuple[str, ...]]:
    """The dependency graph: each step's inputs (step or parameter names), in forward order.

    The engine records these as `Step.inputs`; `computed_steps` walks them backwards. A batch
    repeats one sequence's graph per prefix (its input `X` becomes `b0.X`, …; parameters are
    shared); a step with a dropout mask is followed by `<step>.dropped`, which its readers read.
    Built once per configuration (the generator asks for it many times a variant); each caller
    gets its own copy."""
    return dict(_graph(dims, opts))


@functools.lru_cache(maxsize=256)
def _graph(dims: Dims, opts: Options) -> dict[str, tuple[str, ...]]:
    one = _one_sequence(dims, opts)
    g: dict[str, tuple[str, ...]] = {}
    for prefix in batch_prefixes(dims):
        for name, ins in one.items():
            full = prefix + name
            g[full] = tuple(prefix + i + (DROPPED if prefix + i in opts.dropout else "")
                            if i in one or i == "X" else i for i in ins)
            if full in opts.dropout:
                g[full + DROPPED] = (full,)
    return g


def _one_sequence(dims: Dims, opts: Options) -> dict[str, tuple[str, ...]]:
    g: dict[str, tuple[str, ...]] = {"x": ("X",)}

    def norm(name: str, src: str, ln: str) -> str:
        if opts.norm == "layernorm":
            g[f"{name}.mean"] = (src,)
            g[f"{name}.var"] = (src, f"{name}.mean")
            g[f"{name}.std"] = (f"{name}.var",)
            g[name] = (src, f"{name}.mean", f"{name}.std", f"{ln}.gamma", f"{ln}.beta")
        else:
            g[f"{name}.ms"] = (src,)
            g[f"{name}.rms"] = (f"{name}.ms",)
            g[name] = (src, f"{name}.rms", f"{ln}.gamma")
        return name

    def attention(src: str) -> str:
        for p in "qkv":
            g[f"attn.{p}"] = (src, f"W_{p.upper()}", f"b_{p.upper()}")
        q, k = "attn.q", "attn.k"
        if opts.rope:
            g["attn.q_rot"], g["attn.k_rot"] = (q,), (k,)
            q, k = ROPE_STEPS
        outs = []
        for h in range(dims.heads):
            prev = f"attn.h{h}.scores"
            g[prev] = (q, k)
            for step in head_steps(h, opts)[1:-2]:  # scaled, masked
                g[step] = (prev,)
                prev = step
            g[f"attn.h{h}.weights"] = (prev,)
            g[f"attn.h{h}.out"] = (f"attn.h{h}.weights", "attn.v")
            g.update(tiles.tile_graph(h, prev, dims, opts))
            outs.append(f"attn.h{h}.out")
        if dims.heads > 1:
            g["attn.concat"] = tuple(outs)
        heads = "attn.concat" if dims.heads > 1 else outs[0]
        g["attn.out"] = (heads, "W_O", "b_O") if opts.out_proj else (heads,)
        return "attn.out"

    def ffn(src: str) -> str:
        g["ffn.hidden"] = (src, "W_1", "b_1")
        if opts.gated:
            g["ffn.gate"] = (src, "W_3", "b_3")
        g["ffn.act"] = ("ffn.hidden", "ffn.gate") if opts.gated else ("ffn.hidden",)
        g["ffn.out"] = ("ffn.act", "W_2", "b_2")
        return "ffn.out"

    if opts.cross_attention:  # a decoder layer: its own order of sub-layers
        g["output"] = (cross_steps.graph(g, dims, opts, norm, attention, ffn),)
        return g
    if opts.norm_position == "pre":
        g["resid1"] = ("x", attention(norm("norm1", "x", "ln1")))
        g["resid2"] = ("resid1", ffn(norm("norm2", "resid1", "ln2")))
        last = norm("norm_final", "resid2", "ln_final") if opts.final_norm else "resid2"
    else:
        g["resid1"] = ("x", attention("x"))
        h1 = norm("norm1", "resid1", "ln1")
        g["resid2"] = (h1, ffn(h1))
        last = norm("norm2", "resid2", "ln2")
    g["output"] = (last,)
    assert list(g) == _base_names(dims, opts)
    return g


def computed_steps(dims: Dims, opts: Options, given: set[str]) -> list[str]:
    """Steps the engine computes: those `output` depends on without passing through a given
    step, in forward order. A given step cuts off everything that only fed it. The online
    softmax's tiles, which the output does not read, come with their head's `out`."""
    return list(_computed(dims, opts, frozenset(given)))


@functools.lru_cache(maxsize=256)
def _computed(dims: Dims, opts: Options, given: frozenset) -> tuple[str, ...]:
    graph = _graph(dims, opts)
    need, todo = set(), [p + "output" for p in batch_prefixes(dims)]
    while todo:
        name = todo.pop()
        if name in need or name not in graph:
            continue
        need.add(name)
        if name not in given:
            todo.extend(graph[name])
    return tuple(tiles.with_side_steps(graph, [n for n in graph if n in need and n not in given], given))


def needed_params(dims: Dims, opts: Options, given: set[str]) -> list[str]:
    """Parameters read by a computed step, in `param_names` order (biases included; whether an
    absent one is an error, a draw or zero is the spec loader's call)."""
    graph = step_inputs(dims, opts)
    reads = {p for s in computed_steps(dims, opts, given) for p in graph[s]}
    return [p for p in param_names(opts) if p in reads]


def masked_positions(n: int, causal: bool, pad: Sequence[bool] | None) -> list[list[bool]]:
    """Which scores a mask sets to −∞: [i][j] is true when query i may not attend to key j
    (causal: j > i; padding: key j is padding, `pad[j]`, torch's key_padding_mask)."""
    return [[(causal and j > i) or bool(pad and pad[j]) for j in range(n)] for i in range(n)]
