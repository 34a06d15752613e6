"""The block, forward, exactly: `forward(spec) -> Trace` of named steps (docs/reference/steps.md).

`forward` reads like the architecture; every `t.step(...)` records one named Step with its
formula, its inputs (from the step graph in steps.py) and its exact value. A step that is given in
the spec is taken as given, and a step that only fed given steps is never computed, so weights it
would read may be left out. The same code runs on SymPy Symbols (`symbolic_spec`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterator, Mapping, Protocol, TypeVar, cast

from symblock.engine import cost as costmod, cross, exact, online_softmax, rope
from symblock.engine.matrix import Entry, Mat
from symblock.engine.spec import BlockSpec, SpecError
from symblock.engine.steps import DROPPED, Dims, Options, computed_steps, masked_positions, step_inputs

MAX_COST = costmod.MAX_COST  # the size guard's default (engine/cost.py); SYMBLOCK_MAX_COST is read when used
MAX_SYMBOLIC_ENTRIES = costmod.MAX_SYMBOLIC_ENTRIES


@dataclass(frozen=True)
class Step:
    name: str
    latex: str                 # the formula, e.g. "Q = X W^{Q}"
    inputs: tuple[str, ...]    # step or parameter names (steps.step_inputs)
    value: Mat
    given: bool = False        # pinned by the spec, not computed

    @property
    def symbol(self) -> str:
        """The symbol its formula gives it (`Q` of `Q = X W^{Q}`), as the formulas that read it name it."""
        return self.latex.split(" = ")[0].strip()

    # ---- Jupyter display: name, formula, exact value and decimal
    def _repr_latex_(self) -> str:
        return rf"$\text{{{self.name}}}:\quad {self.latex} \quad {self.value.latex()}$"

    def _repr_markdown_(self) -> str:
        given = " (given)" if self.given else ""
        return f"**`{self.name}`**{given} ${self.latex}$\n\n$$\n{self.value.latex()}\n$$\n"


class TracedSpec(Protocol):
    """What every spec a Trace keeps has: a BlockSpec, or a model's ModelSpec (model_spec.Spec,
    not named here: a model's spec reaches the block through the model)."""
    @property
    def title(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def dims(self) -> Dims: ...
    @property
    def options(self) -> Options: ...
    @property
    def form(self) -> str: ...


S = TypeVar("S", bound=TracedSpec, covariant=True)


class Trace(Generic[S]):
    """The ordered, named steps of one forward; consumers only read it. `Trace[BlockSpec]` is a
    block's (block.forward), `Trace[ModelSpec]` a model's (model.forward)."""

    def __init__(self, steps: list[Step], params: Mapping[str, Mat], spec: S) -> None:
        self.steps = tuple(steps)
        self.params = params
        self.spec = spec
        self._by_name = {s.name: s for s in steps}

    def __getitem__(self, name: str) -> Step:
        return self._by_name[name]

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def names(self) -> list[str]:
        return [s.name for s in self.steps]

    @property
    def form(self) -> str:
        """The spec's form, "block" or "model" (BlockSpec.form)."""
        return self.spec.form

    # ---- Jupyter display: a table of steps (formula, exact value, decimal)
    def _rows(self) -> Iterator[tuple[Step, str, str]]:
        for s in self.steps:
            m = s.value.latex()
            exact_part, _, dec = m.partition(r" \approx ")
            if exact_part.startswith(r"\approx"):
                exact_part, dec = "", exact_part[len(r"\approx "):]
            yield s, exact_part, dec or exact_part

    def _repr_markdown_(self) -> str:
        def cell(tex: str) -> str:
            return f"${tex}$" if tex else "≈"
        lines = ["| step | formula | exact | decimal |", "|---|---|---|---|"]
        for s, ex, dec in self._rows():
            lines.append(f"| `{s.name}`{' (given)' if s.given else ''} | {cell(s.latex)} | {cell(ex)} | {cell(dec)} |")
        return "\n".join(lines) + "\n"

    def _repr_html_(self) -> str:
        from html import escape

        def cell(tex: str) -> str:
            return f"<td>${escape(tex)}$</td>" if tex else "<td>≈</td>"
        rows = "".join(f"<tr><td><code>{escape(s.name)}</code>{' (given)' if s.given else ''}</td>{cell(s.latex)}"
                       f"{cell(ex)}{cell(dec)}</tr>" for s, ex, dec in self._rows())
        return ('<table class="symblock-trace"><thead><tr><th>step</th><th>formula</th><th>exact</th>'
                f"<th>decimal</th></tr></thead><tbody>{rows}</tbody></table>")


def cost(spec: BlockSpec) -> int:
    """Exact operations of the forward (engine/cost.py): what the size guard limits."""
    return costmod.cost(spec.dims, spec.options, spec.given)


def is_symbolic(spec: BlockSpec) -> bool:
    mats = list(spec.params.values()) + [X for _, X, _ in spec.sequences() if X is not None and not isinstance(X, Mat)]
    return any(getattr(e, "free_symbols", None) for m in mats for e in m)


def check_size(spec: BlockSpec) -> None:
    if is_symbolic(spec):
        costmod.check_symbolic(spec.dims, spec.source)
    else:
        costmod.check(spec.dims, spec.options, spec.source, spec.given)


class _Tracer:
    def __init__(self, spec: BlockSpec, upto: str | None = None, keep: Mapping[str, Mat] | None = None) -> None:
        self.spec, self.o, self.dims = spec, spec.options, spec.dims
        self.graph = step_inputs(spec.dims, spec.options)
        todo = computed_steps(spec.dims, spec.options, set(spec.given))
        if upto is not None:  # the steps up to `upto` in forward order; none after it
            order = list(self.graph)
            todo = [n for n in todo if order.index(n) <= order.index(upto)]
        self.todo = set(todo)
        self.keep = keep or {}
        self.symbolic = is_symbolic(spec)
        self.params = {k: Mat.from_sympy(v, self.symbolic) for k, v in spec.params.items()}
        for prefix, X, _ in spec.sequences():  # X is a Mat when a stack feeds a layer's output on
            if X is not None:
                self.params[f"{prefix}X"] = X if isinstance(X, Mat) else Mat.from_sympy(X, self.symbolic)
        if spec.memory is not None:  # a decoder layer's memory (engine/cross.py)
            m = spec.memory
            self.params["M"] = m if isinstance(m, Mat) else Mat.from_sympy(m, self.symbolic)
        self.steps: list[Step] = []
        self.same: rope.Same | None = None  # the heads' q and k, for `rope.scores`
        # the sequence being worked (a batch: b0., b1., …) and its padding row
        self.prefix, self.pad = "", spec.key_padding_mask[0] if spec.key_padding_mask else None

    def step(self, name: str, latex: str, compute: Callable[..., Mat]) -> Mat:
        """Record step `name` (of the current sequence); with a dropout mask on it, also
        `<name>.dropped`, whose value is what the readers of the step get."""
        name = self.prefix + name
        value = self._record(name, latex, compute)
        if name + DROPPED not in self.graph:
            return value
        mask = Mat.from_sympy(self.spec.dropout_masks[name], self.symbolic)
        p = self.spec.dropout_p
        lhs = latex.split(" = ")[0]
        tex = (rf"\tilde{{{lhs}}} = D \odot {lhs} \cdot \tfrac{{1}}{{1 - p}},\ "
               rf"p = {number_latex(p)}")
        return self._record(name + DROPPED, tex, lambda: (value * mask).scale(self.num(1 / (1 - p))))

    def read(self, name: str, tex: str) -> str:
        """The symbol a reader of step `name` sees: `\\tilde{tex}` when a dropout mask is on it
        (its readers read the dropped value, so the formula says so)."""
        return rf"\tilde{{{tex}}}" if self.prefix + name + DROPPED in self.graph else tex

    def _record(self, name: str, latex: str, compute: Callable[..., Mat]) -> Mat:
        if name in self.spec.given:
            value, given = self.spec.given[name], True
            if not isinstance(value, Mat):
                value = Mat.from_sympy(value, self.symbolic)
        elif name in self.todo:
            value, given = self.keep[name] if name in self.keep else compute(), False
        else:
            return NOT_COMPUTED  # only fed given steps
        self.steps.append(Step(name, latex, () if given else self.graph[name], value, given))
        return value

    def linear(self, x: Mat, w: str, b: str) -> Mat:
        y = x @ self.params[w]
        return y + self.params[b] if b in self.params else y

    def num(self, v: Any) -> Entry:
        """A constant in this forward's number type (exact Real, or SymPy when symbolic)."""
        if self.symbolic:
            import sympy
            return sympy.sympify(v)
        return exact.from_sympy(v)


# A step that only fed given steps is not computed and has no value: None, typed as a Mat for the
# sub-layers that pass it on (their steps that would read it are not computed either).
NOT_COMPUTED = cast(Mat, None)


def number_latex(v: Any) -> str:
    """A spec scalar (a Fraction, or a SymPy form) as LaTeX, as sympy.latex writes it."""
    from fractions import Fraction
    if isinstance(v, Fraction):
        sign = "- " if v < 0 else ""
        return str(v) if v.denominator == 1 else rf"{sign}\frac{{{abs(v.numerator)}}}{{{v.denominator}}}"
    import sympy
    return sympy.latex(v)


Tracer = _Tracer  # public: a stack (engine/model.py) runs sub-layers on rows of its own


def forward(spec: BlockSpec, upto: str | None = None, keep: Mapping[str, Mat] | None = None) -> Trace[BlockSpec]:
    """Run the block on the spec and record every step (the step vocabulary, in forward order).

    For the generator, which works many candidates: `upto` stops after that step (the trace
    holds the steps up to it), and `keep` takes the values of steps known not to have changed
    (from an earlier trace of the same block with other weights downstream) instead of working
    them again; each is recorded exactly as computed (not as given)."""
    check_size(spec)
    t = _Tracer(spec, upto, keep)
    with costmod.acyclic():
        for prefix, _, pad in spec.sequences():
            t.prefix, t.pad = prefix, pad
            sequence(t)
    return Trace(t.steps, t.params, spec)


def sequence(t: _Tracer) -> None:
    """One sequence through the block (a batch works each in turn, with its step prefix)."""
    if t.o.cross_attention:  # a decoder layer: engine/cross.py, with this module's sub-layers
        return cross.decoder_layer(t, cross.SubLayers(norm, attention, ffn, softmax, apply_mask))
    x = t.step("x", xs := t.spec.x_symbol, lambda: t.params[f"{t.prefix}X"])   # X, or N_e (model.py)
    if t.o.norm_position == "pre":
        n1 = norm(t, "norm1", x, xs, "ln1", "N_1")
        a = attention(t, n1, "N_1")
        r1 = t.step("resid1", f"R_1 = {xs} + {t.read('attn.out', 'A')}", lambda: x + a)
        n2 = norm(t, "norm2", r1, "R_1", "ln2", "N_2")
        f = ffn(t, n2, "N_2")
        r2 = t.step("resid2", f"R_2 = R_1 + {t.read('ffn.out', 'F')}", lambda: r1 + f)
        y, y_tex = (norm(t, "norm_final", r2, "R_2", "ln_final", "N_f"), "N_f") if t.o.final_norm \
            else (r2, "R_2")
    else:
        a = attention(t, x, xs)
        r1 = t.step("resid1", f"R_1 = {xs} + {t.read('attn.out', 'A')}", lambda: x + a)
        h1 = norm(t, "norm1", r1, "R_1", "ln1", "H_1")
        f = ffn(t, h1, "H_1")
        r2 = t.step("resid2", f"R_2 = H_1 + {t.read('ffn.out', 'F')}", lambda: h1 + f)
        y, y_tex = norm(t, "norm2", r2, "R_2", "ln2", "H_2"), "H_2"
    t.step("output", f"Y = {y_tex}", lambda: y)


# ---------------------------------------------------------------- sub-layers

def attention(t: _Tracer, x: Mat, src: str) -> Mat:
    dk, dv, heads = t.dims.d_k, t.dims.d_v, t.dims.heads
    proj = {}
    for p in "QKV":
        bias = f" + b^{{{p}}}" if f"b_{p}" in t.params else ""
        proj[p] = t.step(f"attn.{p.lower()}", f"{p} = {src} W^{{{p}}}{bias}",
                         lambda p=p: t.linear(x, f"W_{p}", f"b_{p}"))
    q, k = rope.queries_and_keys(t, proj["Q"], proj["K"])
    outs = [head(t, h, q, k, proj["V"], (h * dk, (h + 1) * dk), kv_columns(t, h, dv), kv_columns(t, h, dk))
            for h in range(heads)]
    if heads > 1:
        cat = t.step("attn.concat", r"O = [O_0, \dots, O_{%d}]" % (heads - 1), lambda: Mat.hstack(outs))
    else:
        cat = outs[0]
    cat_tex = "O" if heads > 1 else "O_0"
    if not t.o.out_proj:
        return t.step("attn.out", f"A = {cat_tex}", lambda: cat)
    bias = " + b^{O}" if "b_O" in t.params else ""
    return t.step("attn.out", f"A = {cat_tex} W^{{O}}{bias}", lambda: t.linear(cat, "W_O", "b_O"))


MASK_TEX = {(True, False): "j > i", (False, True): r"\text{key } j \text{ is padding}",
            (True, True): r"j > i \text{ or key } j \text{ is padding}"}


def kv_columns(t: _Tracer, h: int, width: int) -> tuple[int, int]:
    """The K (width d_k) or V (d_v) columns query head h reads: its K/V head's (grouped heads)."""
    g = h // t.dims.group
    return g * width, (g + 1) * width


def head(t: _Tracer, h: int, q: Mat, k: Mat, v: Mat, qk: tuple[int, int], vcols: tuple[int, int],
         kcols: tuple[int, int] | None = None) -> Mat:
    name, (lo, hi) = f"attn.h{h}", qk
    klo, khi = kcols or qk
    g = h // t.dims.group
    rot = "'" if t.o.rope else ""
    s = t.step(f"{name}.scores", f"S_{h} = Q{rot}_{h} " + (f"{{K'_{g}}}" if rot else f"K_{g}") + "^{\\top}",
               lambda: rope.scores(t, q, k, qk, (klo, khi)))
    tex = f"S_{h}"
    if t.o.attention_scale == "sqrt_dk":
        s = t.step(f"{name}.scaled", f"S_{h}' = S_{h} / \\sqrt{{d_k}},\\ d_k = {hi - lo}",
                   lambda s=s: s.scale(1 / exact.sqrt(t.num(hi - lo))))
        tex = f"S_{h}'"
    if t.o.causal or t.o.padding:
        where = MASK_TEX[t.o.causal, t.o.padding]
        s = t.step(f"{name}.masked", f"M_{h} = {tex} + \\mathrm{{mask}}\\ (-\\infty \\text{{ where }} {where})",
                   lambda s=s: apply_mask(s, masked_positions(s.shape[0], t.o.causal, t.pad)))
        tex = f"M_{h}"
    w = t.step(f"{name}.weights", f"P_{h} = \\mathrm{{softmax}}({tex})\\ \\text{{(each row)}}",
               lambda s=s: s.map_rows(softmax))
    out = t.step(f"{name}.out", f"O_{h} = {t.read(name + '.weights', f'P_{h}')} V_{g}",
                 lambda: w @ v.cols(*vcols))
    if t.o.attention_tiles:  # the same softmax·V as an online softmax over key tiles, beside it
        online_softmax.work(t, h, s, None if v is None else v.cols(*vcols), tex)
    return out


def apply_mask(s: Mat, masked: list[list[bool]], fill: Entry = exact.NEG_INF) -> Mat:
    """Entries where `masked` is true replaced by `fill` (−∞: no weight after the softmax)."""
    return Mat([[fill if m else e for e, m in zip(r, mr)] for r, mr in zip(s.rows, masked)])


def causal_mask(s: Mat) -> Mat:
    return apply_mask(s, masked_positions(s.shape[0], True, None))


def softmax(row: tuple[Entry, ...]) -> list[Entry]:
    """exp(s_j) / Σ_k exp(s_k); masked entries (−∞) get an exact 0. Equal scores share one exp."""
    cache: dict = {}

    def e(s: Entry) -> Entry:
        key = (s.q,) if isinstance(s, exact.Real) and s.is_rational else id(s)
        if key not in cache:
            cache[key] = exact.exp(s)
        return cache[key]

    live = [None if s is exact.NEG_INF else e(s) for s in row]
    kept = [x for x in live if x is not None]
    total, zero = exact.total(kept), exact.like(kept[0], 0)
    return [zero if x is None else x / total for x in live]


def ffn(t: _Tracer, x: Mat, src: str) -> Mat:
    b1 = " + b_1" if "b_1" in t.params else ""
    z = t.step("ffn.hidden", f"Z = {src} W_1{b1}", lambda: t.linear(x, "W_1", "b_1"))
    act, act_tex = ACTIVATIONS[t.o.activation]
    if t.o.gated:
        b3 = " + b_3" if "b_3" in t.params else ""
        g = t.step("ffn.gate", f"G = {src} W_3{b3}", lambda: t.linear(x, "W_3", "b_3"))
        u = t.step("ffn.act", f"U = \\mathrm{{{act_tex}}}(Z) \\odot G", lambda: z.map(act) * g)
    else:
        u = t.step("ffn.act", f"U = \\mathrm{{{act_tex}}}(Z)", lambda: z.map(act))
    b2 = " + b_2" if "b_2" in t.params else ""
    return t.step("ffn.out", f"F = {t.read('ffn.act', 'U')} W_2{b2}", lambda: t.linear(u, "W_2", "b_2"))


def norm(t: _Tracer, name: str, x: Mat, src: str, ln: str, out: str) -> Mat:
    """LayerNorm (population variance, ε inside the root) or RMSNorm, with per-row statistics."""
    d = t.dims.d_model
    eps = t.num(t.o.eps)
    xij = f"({src})_{{ij}}" if "_" in src else f"{src}_{{ij}}"
    gamma = t.params.get(f"{ln}.gamma", NOT_COMPUTED)  # absent when no computed step reads it
    eps_tex = " + \\varepsilon" if t.o.eps != 0 else ""
    if t.o.norm == "layernorm":
        mu = t.step(f"{name}.mean", f"\\mu = \\tfrac{{1}}{{{d}}} \\textstyle\\sum_j {xij}",
                    lambda: x.map_rows(lambda r: [exact.total(r) / d]))
        var = t.step(f"{name}.var", f"\\sigma^2 = \\tfrac{{1}}{{{d}}} \\textstyle\\sum_j ({xij} - \\mu_i)^2",
                     lambda: (x - mu).map_rows(lambda r: [exact.dot(r, r) / d]))
        std = t.step(f"{name}.std", f"\\sigma = \\sqrt{{\\sigma^2{eps_tex}}}",
                     lambda: _root(t, name, "var", var, eps))
        beta_tex = "" if f"{ln}.beta" in t.spec.no_beta else " + \\beta"   # bias: false: no β (a 0 in params)
        return t.step(name, f"{out} = ({src} - \\mu) / \\sigma \\cdot \\gamma{beta_tex}",
                      lambda: ((x - mu) / std) * gamma + t.params.get(f"{ln}.beta", NOT_COMPUTED))
    ms = t.step(f"{name}.ms", f"m = \\tfrac{{1}}{{{d}}} \\textstyle\\sum_j {xij}^2",
                lambda: x.map_rows(lambda r: [exact.dot(r, r) / d]))
    rms = t.step(f"{name}.rms", f"r = \\sqrt{{m{eps_tex}}}", lambda: _root(t, name, "ms", ms, eps))
    return t.step(name, f"{out} = {src} / r \\cdot \\gamma", lambda: (x / rms) * gamma)


def _root(t: _Tracer, name: str, stat: str, m: Mat, eps: Entry) -> Mat:
    for i, (v,) in enumerate(m.rows):
        if not exact.is_symbolic(v) and not exact.is_symbolic(eps) and exact.sign(v + eps) == 0:
            what = "variance" if stat == "var" else "mean square"
            raise SpecError(t.spec.source, f"{t.prefix}{name}.{stat}[{i}]",
                            f"row {i + 1} of the {name} input has zero {what} and ε = 0, so the norm would "
                            "divide by zero; set block.eps > 0 (e.g. \"1e-5\") or change the inputs")
    return m.map(lambda v: exact.sqrt(v + eps))


# ---------------------------------------------------------------- activations (exact and symbolic)

def gelu(x: Entry) -> Entry:
    """Exact erf form (torch's default): x/2 · (1 + erf(x/√2))."""
    return x / 2 * (1 + exact.erf(x / exact.sqrt(exact.like(x, 2))))


def gelu_tanh(x: Entry) -> Entry:
    """The tanh approximation: x/2 · (1 + tanh(√(2/π) (x + 0.044715 x³)))."""
    c, k = _tanh_constants(exact.is_symbolic(x))
    return x / 2 * (1 + exact.tanh(c * (x + k * x * x * x)))


@functools.cache
def _tanh_constants(symbolic: bool) -> tuple:
    """√(2/π) and 0.044715, made once (a node is immutable, so every entry may share one; SymPy
    built them anew for each entry: ~3 ms an entry)."""
    import sympy
    c, k = sympy.sqrt(2 / sympy.pi), sympy.Rational(44715, 1000000)
    return (c, k) if symbolic else (exact.from_sympy(c), exact.from_sympy(k))


def silu(x: Entry) -> Entry:
    return x / (1 + exact.exp(-x))


ACTIVATIONS: dict[str, tuple[Callable[[Entry], Entry], str]] = {
    "relu": (exact.relu, "ReLU"),
    "gelu": (gelu, "GELU"),
    "gelu_tanh": (gelu_tanh, "GELU_{tanh}"),
    "silu": (silu, "SiLU"),
    "swiglu": (silu, "SiLU"),
    "geglu": (gelu, "GELU"),
}


def symbolic_spec(spec: BlockSpec) -> BlockSpec:
    """The same block with every weight and input replaced by a Symbol (w^{Q}_{12}, x_{21});
    γ, β and ε stay as the spec pins them. For tiny dimensions only (see check_size)."""
    import sympy
    from dataclasses import replace
    from types import MappingProxyType

    def syms(name: str, m: Any) -> Any:
        base = {"X": "x"}.get(name, name)
        if name.startswith("W_"):
            base = f"w^{{{name[2:]}}}"
        elif name.startswith("b_"):
            base = f"b^{{{name[2:]}}}"
        if name.endswith(("gamma", "beta")):
            return m
        r, c = m.shape
        if name.startswith("b_"):
            return sympy.ImmutableMatrix(1, c, [sympy.Symbol(f"{base}_{{{j + 1}}}", real=True) for j in range(c)])
        return sympy.ImmutableMatrix(r, c, [sympy.Symbol(f"{base}_{{{i + 1}{j + 1}}}", real=True)
                                            for i in range(r) for j in range(c)])

    params = {k: syms(k, v) for k, v in spec.params.items()}
    X = syms("X", spec.X) if spec.X is not None else None
    return replace(spec, params=MappingProxyType(params), X=X)
