"""Load and validate a block spec (YAML/JSON or a built-in example) into a frozen `BlockSpec`.

Every value that leaves this module is exact: matrices are `ExactMatrix` (Fraction entries, or
exact.Real for an irrational one such as sqrt(2)/2), scalars (ε, dropout p) a Fraction or, when
irrational, a SymPy expression; SymPy is imported only to parse such a form (engine/numbers.py).
Every error names the file, the field and what was expected. Weights are stored in math layout
(in, out) whatever the spec's `layout`, vectors as 1 × n rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from symblock.engine import cost, memory as memory_mod, rope, tiles, unused
from symblock.engine.numbers import parse_exact  # noqa: F401  (re-exported: spec.parse_exact is public)
from symblock.engine.matrix import ExactMatrix, Mat, SpecNumber
from symblock.engine.numbers import ExactNumber, SpecScalar
from symblock.engine.sources import (  # noqa: F401  (spec.read_spec, spec.example_names, ... stay public)
    block_example_names, example_names, example_text, read_mapping, read_spec)
from symblock.engine.fields import check_keys, check_text, choice, int_field, kind_of, near, title_field  # noqa: F401
from symblock.engine.random_section import (  # noqa: F401  (spec.draw, spec.RANDOM_KEYS, ... stay public)
    PLAIN_RANDOM, RANDOM_KEYS, draw, has_constraints, random_section)
from symblock.errors import SpecError, did_you_mean  # noqa: F401  (re-exported: spec.SpecError is public)
from symblock.engine import inputs as inputs_mod
from symblock.engine.steps import (Dims, Options, batch_prefixes, needed_params, norm_names, param_names,
                                   param_shape, step_shapes)

if TYPE_CHECKING:
    import numpy as np

TOP_KEYS = ("title", "layout", "dims", "block", "weights", "inputs", "given", "random", "exercise",
            "dropout")
CHOICES = {
    "norm_position": ("post", "pre"),
    "norm": ("layernorm", "rmsnorm"),
    "activation": ("relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu"),
    "attention_scale": ("sqrt_dk", "none"),
}
FLAGS = ("final_norm", "causal", "bias", "out_proj", "cross_attention")


Matrix = ExactMatrix  # exact entries, read like a SymPy ImmutableMatrix (engine/matrix.py)


@dataclass(frozen=True)
class BlockSpec:
    """A validated spec: everything the engine and the NumPy/torch paths need, exact."""
    dims: Dims
    options: Options
    params: Mapping[str, Matrix]   # math layout; only the parameters the computed steps read
    X: Matrix | Mat | np.ndarray | None  # None only when `x` is given; a stack's layer: a Mat (or floats)
    given: Mapping[str, Matrix | Mat]  # a Mat where a stack's layer is given its attention's output
    title: str = ""
    source: str = "<spec>"
    seed: int | None = None
    exercise: Mapping[str, Any] = field(default_factory=dict)
    titles: Mapping[str, str] = field(default_factory=dict)   # per language, from `title: {en, zh}`
    batch: tuple[Matrix | None, ...] = ()  # a batch: each sequence's X (None where `bI.x` is given); X is None
    key_padding_mask: tuple[tuple[bool, ...], ...] = ()  # a tuple of bools per sequence (True: a padding key)
    dropout_p: SpecScalar = 0      # exact; the masks scale what they keep by 1/(1 − p)
    dropout_masks: Mapping[str, Matrix] = field(default_factory=dict)  # full step name -> 0/1
    memory: Matrix | Mat | None = None  # a decoder layer's memory, mem_len × d_model (engine/memory.py)
    memory_padding_mask: tuple = ()  # its padding row (True = a padded memory row), or ()
    positions: tuple = ()          # RoPE's position of each row (inputs.positions); () = 0 … seq_len − 1
    supplied: frozenset = frozenset()  # parameters read from `weights:` (not defaulted, drawn or unread):
                                       #   a bias or β given although block.bias is false is one (params counts it)
    no_beta: frozenset = frozenset()  # β the block has not (bias: false written, β not given): 0 in params, never shown
    v1_words: bool = False         # drawn by generator version 1: its sheets keep that version's words, byte for byte
    x_symbol: str = "X"            # what the formulas call the rows the block reads (a model's first
                                   #   layer after BERT's embedding norm reads N_e)

    def position_list(self) -> tuple[int, ...]:
        """The position of each row, as RoPE turns it."""
        return self.positions or tuple(range(self.dims.seq_len))

    @property
    def form(self) -> str:
        """What the spec is: "block" (one Transformer block) or "model" (a tiny GPT, ModelSpec).
        Consumers key their tables on it instead of testing the spec's type."""
        return "block"

    @property
    def blocks(self) -> tuple:
        """The BlockSpecs the spec runs: itself (a model's are its layers)."""
        return (self,)

    def sequences(self) -> list[tuple[str, Matrix | Mat | np.ndarray | None, tuple[bool, ...] | None]]:
        """(step prefix, X, padding row or None) of each sequence: one, or a batch's."""
        xs = self.batch if self.dims.batch else (self.X,)
        pads = self.key_padding_mask or (None,) * len(xs)
        return list(zip(batch_prefixes(self.dims), xs, pads))


def load(name_or_path: str | Path) -> BlockSpec:
    """A spec from a file path, or a built-in example by name (no generation constraints:
    `symblock.load` draws those)."""
    return from_mapping(*read_spec(name_or_path))


# ---------------------------------------------------------------- exact numbers

def parse_matrix(value: Any, shape: tuple[int, int] | None, source: str, where: str,
                 vector: bool = False, allow_inf: bool = False) -> Matrix:
    """A list of rows (or, with vector=True, a flat list read as one row) of exact numbers."""
    if vector and isinstance(value, list) and all(not isinstance(v, list) for v in value):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(r, list) for r in value):
        what = "a list of numbers" if vector else "a matrix: a list of rows, e.g. [[1, 0], [0, 1]]"
        raise SpecError(source, where, f"expected {what}, got {kind_of(value)}")
    widths = {len(r) for r in value}
    if len(widths) != 1 or 0 in widths:
        raise SpecError(source, where, f"rows have different lengths {sorted(widths)}; "
                                       "expected every row to have the same number of entries")
    got = (len(value), len(value[0]))
    if shape is not None and got != shape:
        want = f"{shape[1]} entries" if vector else f"shape {shape[0]}×{shape[1]}"
        have = f"{got[1]} entries" if vector else f"{got[0]}×{got[1]}"
        raise SpecError(source, where, f"expected {want}, got {have}")
    entries = [[_entry(parse_exact(v, source, f"{where}[{j}]" if vector else f"{where}[{i}][{j}]",
                                   allow_inf=allow_inf)) for j, v in enumerate(row)]
               for i, row in enumerate(value)]
    return Matrix(entries)


def _entry(v: ExactNumber) -> SpecNumber:
    """A matrix entry: a Fraction as it is, an irrational SymPy form as an exact.Real."""
    if isinstance(v, Fraction):
        return v
    from symblock.engine import exact
    return exact.from_sympy(v)


# ---------------------------------------------------------------- the spec

def from_mapping(data: Mapping, source: str = "<spec>") -> BlockSpec:
    """Validate a parsed spec. Missing weights/inputs are drawn from `random` (seed, low, high)
    when present; a `random:` section with constraints is `exercises.generate.from_mapping`'s.
    The size guard (engine/cost.py, under the limit in force) runs as soon as the dims are known, before any
    matrix is parsed or drawn."""
    check_keys(data, TOP_KEYS, source, "")
    _no_constraints(data.get("random"), source)
    title, titles = title_field(data.get("title") or "", source)
    layout = data.get("layout", "math")
    if layout not in ("math", "torch"):
        raise SpecError(source, "layout", f"expected math or torch, got {kind_of(layout)}{near(layout, ('math', 'torch'))}")
    opts = _options(data.get("block") or {}, source)
    weights, inputs = _weights_section(data.get("weights") or {}, source), data.get("inputs") or {}
    check_keys(inputs, ("X", "key_padding_mask", "positions", *memory_mod.KEYS), source, "inputs")
    dims = _dims(data.get("dims") or {}, inputs, weights, layout, source)
    rope.check_dims(opts.rope, dims.d_k, source)
    positions = rope.positions(inputs.get("positions"), dims.seq_len, source)
    opts = memory_mod.structure(opts, data.get("dims") or {}, inputs, dims.batch, source)
    dims = replace(dims, mem_len=memory_mod.mem_len(data.get("dims") or {}, inputs, opts, source))
    opts = inputs_mod.structure(opts, dims, inputs, data.get("dropout"), source)
    unused.block(weights, opts, source)
    tiles.check_dropout(opts, source)
    given_raw = data.get("given") or {}
    if not isinstance(given_raw, dict):
        raise SpecError(source, "given", f"expected a mapping of step names to matrices, got {kind_of(given_raw)}")
    cost.check(dims, opts, source, set(given_raw))
    given = _given(given_raw, dims, opts, source)
    seed, low, high = random_section(data.get("random"), source)
    params = _params(weights, dims, opts, layout, set(given), (seed, low, high), source)
    X, batch = _inputs_X(inputs, dims, given, seed, low, high, source)
    padding = inputs_mod.padding(inputs.get("key_padding_mask"), dims, opts, source, seed)
    mem = _memory(inputs.get("memory"), dims, given, (seed, low, high), source)
    dropout = data.get("dropout")
    dropout_p = inputs_mod.dropout_p(parse_exact((dropout or {}).get("p", 0), source, "dropout.p"), source)
    masks = inputs_mod.dropout_masks(dropout, step_shapes(dims, opts), source, seed, dropout_p)
    exercise = data.get("exercise") or {}
    if not isinstance(exercise, dict):
        raise SpecError(source, "exercise", f"expected a mapping, got {kind_of(exercise)}")
    return BlockSpec(dims=dims, options=opts, params=MappingProxyType(params), X=X,
                     given=MappingProxyType(given), title=title, source=source, seed=seed,
                     exercise=MappingProxyType(dict(exercise)), batch=batch,
                     key_padding_mask=padding, dropout_p=dropout_p,
                     dropout_masks=MappingProxyType(masks), titles=MappingProxyType(titles), memory=mem,
                     memory_padding_mask=memory_mod.padding(inputs.get("memory_padding_mask"), dims, source),
                     positions=positions, supplied=frozenset(n for n in params if _lookup(weights, n) is not None),
                     no_beta=_no_beta(data.get("block") or {}, params, weights))


def _no_beta(block: Mapping, params: Mapping, weights: Mapping) -> frozenset:  # bias unwritten: β = 0 shown
    return frozenset(n for n, m in params.items() if block.get("bias") is False and n.endswith(".beta")
                     and _lookup(weights, n) is None and all(v == 0 for v in m))


def _memory(raw: Any, dims: Dims, given: Mapping, rnd: tuple, source: str) -> Matrix | None:
    """A decoder layer's memory: as written, drawn from `random`, or None (no cross-attention,
    or the step `memory` given)."""
    shape, seed = (dims.mem_len, dims.d_model), rnd[0]
    if not dims.mem_len or "memory" in given:
        return None
    if raw is not None:
        return parse_matrix(raw, shape, source, "inputs.memory")
    if seed is None:
        raise SpecError(source, "inputs.memory", f"missing; expected a {shape[0]}×{shape[1]} matrix "
                        "(or a `random` section)")
    return draw(seed, "M", shape, rnd[1], rnd[2])


def with_tensors(spec: BlockSpec, params: Mapping[str, Any], xs: list | None = None) -> BlockSpec:
    """`spec` with drawn parameters (math layout) and, when given, X replaced (`xs`: one matrix
    per sequence): the generator's candidates, which share everything else with one spec
    validated once. Entries are ints or Fractions; shapes must be the spec's (a bug otherwise)."""
    new = {n: _exact(m) for n, m in params.items()}
    assert all(n in spec.params and m.shape == spec.params[n].shape for n, m in new.items()), \
        "a drawn tensor the spec does not read, or of another shape"
    kw: dict[str, Any] = {"params": MappingProxyType({**spec.params, **new})}
    if xs is not None:
        kw.update(batch=tuple(_exact(m) for m in xs)) if spec.dims.batch else kw.update(X=_exact(xs[0]))
    return replace(spec, **kw)


def with_given(spec: BlockSpec, given_raw: Mapping) -> BlockSpec:
    """`spec` with more steps given (raw spec values, validated as `given:` is), keeping only the
    parameters the computed steps still read."""
    given = {**spec.given, **_given(given_raw, spec.dims, spec.options, spec.source)}
    need = needed_params(spec.dims, spec.options, set(given))
    return replace(spec, given=MappingProxyType(given),
                   params=MappingProxyType({n: m for n, m in spec.params.items() if n in need}))


def _exact(m: Iterable[Iterable[int | Fraction]]) -> Matrix:
    return Matrix([[Fraction(e) for e in row] for row in m])


def _no_constraints(rnd: Any, source: str) -> None:
    if has_constraints(rnd):  # drawn until the constraints hold: exercises.generate
        check_keys(rnd, RANDOM_KEYS, source, "random")   # a misspelt key is no constraint: said as unknown
        key = next(k for k in rnd if k not in PLAIN_RANDOM)
        raise SpecError(source, f"random.{key}", "a generation constraint: load this spec with "
                        "symblock.load (symblock.exercises.generate.load), which draws until it holds")


def _weights_section(weights: Any, source: str) -> Mapping:
    check_keys(weights, tuple(all_param_keys()), source, "weights")
    for ln in ("ln1", "ln2", "ln3", "ln_final"):
        if weights.get(ln) is not None:
            check_keys(weights[ln], ("gamma", "beta"), source, f"weights.{ln}")
    if weights.get("cross") is not None:
        check_keys(weights["cross"], memory_mod.CROSS_WEIGHTS, source, "weights.cross")
    return weights


def _given(given_raw: Mapping, dims: Dims, opts: Options, source: str) -> dict[str, Matrix]:
    """The pinned steps; −∞ only where a mask puts it, and never a whole row of it."""
    from symblock.engine import exact
    shapes = step_shapes(dims, opts)
    given = {}
    for name, value in given_raw.items():
        if name not in shapes:
            raise SpecError(source, f"given.{name}", "no such step in this block; " + did_you_mean(name, shapes)
                            + "expected one of " + ", ".join(shapes))
        given[name] = m = parse_matrix(value, shapes[name], source, f"given.{name}",
                                       allow_inf=name.endswith(".masked"))
        for i in range(m.rows):
            if all(e is exact.NEG_INF for e in m.row(i)):
                raise SpecError(source, f"given.{name}[{i}]", "every entry of this row is −∞, so its "
                                "softmax divides by zero; expected at least one finite score a row")
        _check_sign(name, m, source)
    return given


def _check_sign(name: str, m: Matrix, source: str) -> None:
    """A given variance or mean square is >= 0, a given σ or rms > 0 (the norm takes its root,
    or divides by it)."""
    last = name.rsplit(".", 1)[-1]
    if last not in ("var", "ms", "std", "rms"):
        return
    from symblock.engine import exact
    for i in range(m.rows):
        v = exact.from_sympy(m[i, 0])
        s = v.sign()
        if s < 0 or (s == 0 and last in ("std", "rms")):
            what = {"var": "a variance is never negative", "ms": "a mean square is never negative",
                    "std": "the norm divides by σ, so it must be > 0",
                    "rms": "the norm divides by the rms, so it must be > 0"}[last]
            raise SpecError(source, f"given.{name}[{i}][0]", f"{what}; got {exact.text(v, 10**9)}")


TRANSPOSED = {  # a W of the transposed shape, by the spec's layout
    "math": ", its transpose: in layout: math (the default) W is (in, out), for y = x W; a matrix as "
            "nn.Linear stores it, (out, in), needs `layout: torch`",
    "torch": ", its transpose: with layout: torch, W is written as nn.Linear stores it, (out, in)"}


def _params(weights: Mapping, dims: Dims, opts: Options, layout: str, given: set[str],
            rnd: tuple[int | None, int, int], source: str) -> dict[str, Matrix]:
    """The parameters the computed steps read: as given (math layout), defaulted (γ = 1, β = 0)
    or drawn from `random`."""
    seed, low, high = rnd
    need = needed_params(dims, opts, given)
    params: dict[str, Matrix] = {}
    for name in param_names(opts):
        raw = _lookup(weights, name)
        shape = param_shape(name, dims)
        is_vec = name.startswith(("b_", "cross.b_")) or name.endswith(("gamma", "beta"))  # lists, never transposed
        if raw is not None:
            if name not in need:
                continue  # feeds only given steps: ignored, as docs/reference/spec.md says
            want = shape if (layout == "math" or is_vec) else (shape[1], shape[0])
            try:
                m = parse_matrix(raw, want, source, f"weights.{name}", vector=is_vec)
            except SpecError as e:   # W as the other layout writes it: said, with the layout that reads it so
                if is_vec or want[0] == want[1] or not e.message.endswith(f"got {want[1]}×{want[0]}"):
                    raise
                raise SpecError(source, e.where, e.message + TRANSPOSED[layout]) from None
            params[name] = m if (layout == "math" or is_vec) else m.T
        elif name in need:
            if name.endswith(".gamma"):
                params[name] = Matrix.ones(*shape)
            elif name.endswith(".beta"):
                params[name] = Matrix.zeros(*shape)
            elif seed is not None and (opts.bias or not _is_bias(name)):
                params[name] = draw(seed, name, shape, low, high)
            elif not _is_bias(name):
                raise SpecError(source, f"weights.{name}", f"missing; expected a {shape[0]}×{shape[1]} "
                                "matrix (or add a `random: {seed: 1}` section to draw missing weights)")
    if opts.bias and seed is None:
        missing = [b for b in need if _is_bias(b) and b not in params]
        if missing:
            raise SpecError(source, f"weights.{missing[0]}", "missing, and block.bias is true; give the "
                            "bias vectors or add a `random: {seed: 1}` section to draw them")
    return params


def _is_bias(name: str) -> bool:
    return name.startswith(("b_", "cross.b_"))


def all_param_keys() -> list[str]:
    full = Options(norm_position="pre", final_norm=True, activation="swiglu", cross_attention=True)
    return [p for p in param_names(full) if "." not in p] + norm_names(full) + ["cross"]


def _lookup(weights: Mapping, name: str) -> Any:
    """weights.W_Q, or weights.ln1.gamma for a norm parameter (sections checked beforehand)."""
    if "." not in name:
        return weights.get(name)
    ln, part = name.split(".")
    return (weights.get(ln) or {}).get(part)


def _options(block: Any, source: str) -> Options:
    check_keys(block, tuple(CHOICES) + FLAGS + ("eps", "attention_tiles", "rope"), source, "block")
    kw: dict[str, Any] = {}
    for key, choices in CHOICES.items():
        if key in block:
            kw[key] = choice(block[key], choices, source, f"block.{key}")
    for key in FLAGS:
        if key in block:
            if not isinstance(block[key], bool):
                raise SpecError(source, f"block.{key}", f"expected true or false, got {kind_of(block[key])}")
            kw[key] = block[key]
    eps = parse_exact(block.get("eps", 0), source, "block.eps")
    if eps < 0:
        raise SpecError(source, "block.eps", f"expected ε >= 0, got {eps}")
    kw["eps"] = eps
    kw["attention_tiles"] = tiles.check(block.get("attention_tiles"), source)
    kw["rope"] = rope.parse(block.get("rope"), source)
    opts = Options(**kw)
    if opts.cross_attention and "causal" not in block:  # a decoder's self-attention is causal
        opts = replace(opts, causal=True)
    if opts.final_norm and opts.norm_position != "pre":
        raise SpecError(source, "block.final_norm", "only a Pre-LN block has a final norm; "
                                                    "set norm_position: pre or final_norm: false")
    return opts


def _dims(dims: Any, inputs: Mapping, weights: Mapping, layout: str, source: str) -> Dims:
    check_keys(dims, ("seq_len", "d_model", "d_ff", "heads", "d_k", "d_v", "kv_heads", "mem_len"), source, "dims")
    guess: dict[str, int] = {}
    batch = inputs_mod.batch_size(inputs)
    X = inputs_mod.first_matrix(inputs.get("X"))
    if isinstance(X, list) and X and isinstance(X[0], list):
        guess["seq_len"], guess["d_model"] = len(X), len(X[0])
    elif isinstance(pad := inputs_mod.first_mask(inputs.get("key_padding_mask")), list):
        guess["seq_len"] = len(pad)
    W1 = weights.get("W_1")
    if isinstance(W1, list) and W1 and isinstance(W1[0], list):
        guess["d_ff"] = len(W1[0]) if layout == "math" else len(W1)
    guess["heads"] = 1
    vals = {}
    for key in ("seq_len", "d_model", "d_ff", "heads"):
        if key in dims:
            vals[key] = int_field(dims[key], source, f"dims.{key}")
        elif key in guess:
            vals[key] = guess[key]
        elif key == "d_ff" and W1 is not None:   # W_1 is what d_ff is read from: its fault, named
            raise SpecError(source, "weights.W_1", f"expected a matrix (a list of rows), got {kind_of(W1)}; "
                                                   "dims.d_ff is read from its shape")
        else:
            raise SpecError(source, f"dims.{key}", "missing; expected a whole number")
    for key in ("d_k", "d_v", "kv_heads"):
        if key in dims:
            vals[key] = int_field(dims[key], source, f"dims.{key}")
    if vals.get("kv_heads", vals["heads"]) > vals["heads"] or vals["heads"] % vals.get("kv_heads", 1):
        raise SpecError(source, "dims.kv_heads", f"expected a divisor of heads = {vals['heads']} (each K/V "
                        f"head serves heads/kv_heads query heads; 1 = multi-query), got {vals['kv_heads']}")
    if vals["d_model"] % vals["heads"] and not ("d_k" in vals and "d_v" in vals):
        raise SpecError(source, "dims.heads", f"expected a divisor of d_model = {vals['d_model']}, "
                                              f"got {vals['heads']} (or give dims.d_k and dims.d_v, "
                                              "the per-head widths)")
    return Dims(**vals, batch=batch)


def _inputs_X(inputs: Mapping, dims: Dims, given: Mapping, seed: int | None, low: int, high: int,
              source: str) -> tuple[Matrix | None, tuple]:
    """(X, ()) for one sequence, (None, (X_0, X_1, …)) for a batch; None where `x` is given."""
    shape = (dims.seq_len, dims.d_model)
    out: list[Matrix | None] = []
    for prefix, where, raw in inputs_mod.x_sources(inputs, dims, given, source):
        if raw is inputs_mod.GIVEN:
            out.append(None)
        elif raw is not inputs_mod.MISSING:
            out.append(parse_matrix(raw, shape, source, where))
        elif seed is not None:
            out.append(draw(seed, f"{prefix}X", shape, low, high))
        else:
            raise SpecError(source, "inputs.X", f"missing; expected a {shape[0]}×{shape[1]} matrix"
                            + (f" for each of the {dims.batch} sequences" if dims.batch else "")
                            + " (or a `random` section)")
    return (None, tuple(out)) if dims.batch else (out[0], ())
