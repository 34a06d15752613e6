"""Exact parameter counts and FLOPs per token of one Transformer block: `symblock params`.

    >>> from symblock.calculus.params import count
    >>> c = count(d_model=32, heads=4, d_ff=128)
    >>> c.attention, c.ffn, c.norm, c.total
    (4224, 8352, 128, 12704)
    >>> str(c.formula("attention")), c.formula("attention").substituted(c.env)
    ('4·d² + 4·d', '4·32² + 4·32')

What is counted (the conventions of docs/reference/conventions.md; d = d_model, f = d_ff):

- attention: W_Q, W_K, W_V, W_O (d × d each) and, with biases, b_Q, b_K, b_V, b_O (d each).
  `out_proj=False` (a spec's `block.out_proj: false`) has no output projection: the heads'
  concatenation is the attention's output, so W_O and b_O (and cross.W_O, cross.b_O) are not there.
  The number of heads changes nothing here: the h heads are column blocks of the same d × d
  matrices (d_head = d / h), so `heads` is only checked to divide d_model.
- ffn: W_1 (d × f), b_1 (f), W_2 (f × d), b_2 (d); gated activations (swiglu, geglu) add the gate
  W_3 (d × f) and b_3 (f), as in `(act(x W_1 + b_1) ⊙ (x W_3 + b_3)) W_2 + b_2`.
- norm: ln1 and ln2, plus ln_final with `final_norm`; LayerNorm has γ and β (d each),
  RMSNorm γ only.
- a decoder layer (`cross_attention=True`, torch's `nn.TransformerDecoderLayer`) adds the
  cross-attention's cross.W_Q … cross.b_O (as many as the self-attention's) and a third norm ln3.
- `bias=False` drops every additive bias: the linear layers' b_* and LayerNorm's β, as torch's
  `nn.TransformerEncoderLayer(bias=False)` and nanoGPT's `bias=False` do.
- Not counted: token/position embeddings and the unembedding (they belong to the model, not the
  block), dropout and activations (no parameters).

Counts are Python ints; every total comes with its formula (a `Formula`, printed like
`4·d² + 4·d`, with `.substituted(env)` giving `4·32² + 4·32` and `.sympy()` a SymPy
expression).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from symblock.calculus.formula import Formula, sum_of
from symblock.calculus.kv_cache import grouped_heads

from symblock.engine import parameters

NORMS = ("layernorm", "rmsnorm")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu")
GATED = ("swiglu", "geglu")
COMPONENTS = ("attention", "ffn", "norm")
DEFAULT_SEQ_LEN = 512  # the context length of the original Transformer and BERT
MAX_SIZE = 10**9  # d_model, heads, d_ff, seq_len: beyond any model, and printable

# --------------------------------------------------------------------------------- counts

@dataclass(frozen=True)
class Param:
    """One parameter tensor: its name (as in a spec's `weights:`), component, math-layout shape
    ((in, out) for a weight, (1, n) for a vector), formula and exact count."""
    name: str
    component: str
    shape: tuple[int, int]
    formula: Formula
    count: int


@dataclass(frozen=True)
class Flop:
    """One matmul of the block: FLOPs per token (2 per multiply-add), formula and exact count."""
    name: str
    formula: Formula
    count: int


@dataclass(frozen=True)
class Counts:
    """The parameters and FLOPs per token of one block, exact. Build it with `count(...)`."""
    d_model: int
    heads: int
    d_ff: int
    bias: bool
    norm_type: str      # "layernorm" | "rmsnorm" (`norm` is the norms' parameter count)
    activation: str
    final_norm: bool
    seq_len: int
    params: tuple[Param, ...] = field(repr=False)
    flops: tuple[Flop, ...] = field(repr=False)
    d_k: int | None = None  # per-head widths when given (then the formulas use h, k, v)
    d_v: int | None = None
    kv_heads: int | None = None  # grouped K/V heads when fewer than heads (the formulas use g)
    cross_attention: bool = False  # a decoder layer: self-attention, cross-attention, FFN
    out_proj: bool = True   # False: no W_O, b_O (the heads' concatenation is the attention's output)
    mem_len: int | None = None   # a decoder layer's memory rows, which its cross-attention attends (m)

    @property
    def kv_cache(self):
        """What one token adds to a KV cache in this block (calculus/kv_cache.py)."""
        from symblock.calculus.kv_cache import per_token
        return per_token(self.kv_heads or self.heads, self.d_head, self.d_v or self.d_head)

    @property
    def env(self) -> dict[str, int]:
        """The values of the formulas' symbols: n = seq_len, d = d_model, f = d_ff (and h =
        heads, k = d_k, v = d_v with other projection widths)."""
        env = {"n": self.seq_len, "d": self.d_model, "f": self.d_ff}
        if self.cross_attention:
            env["m"] = self.mem_len or self.seq_len
        if self.d_k is not None:
            env |= {"h": self.heads, "k": self.d_k, "v": self.d_v}
        if self.kv_heads is not None:
            env["g"] = self.kv_heads
        return env

    @property
    def d_head(self) -> int:
        return self.d_k if self.d_k is not None else self.d_model // self.heads

    def given_biases(self) -> list[str]:
        """The bias vectors and β counted although `bias` is False (`count`'s `extra`)."""
        return [] if self.bias else [p.name for p in self.params if parameters.parse(p.name).kind in ("bias", "beta")]

    def of(self, component: str) -> tuple[Param, ...]:
        if component not in COMPONENTS:
            raise KeyError(f"unknown component {component!r}; "
                           f"expected one of {', '.join(COMPONENTS)}")
        return tuple(p for p in self.params if p.component == component)

    @property
    def attention(self) -> int:
        return sum(p.count for p in self.of("attention"))

    @property
    def ffn(self) -> int:
        return sum(p.count for p in self.of("ffn"))

    @property
    def norm(self) -> int:
        return sum(p.count for p in self.of("norm"))

    @property
    def total(self) -> int:
        return sum(p.count for p in self.params)

    def formula(self, component: str = "total") -> Formula:
        """`attention`, `ffn`, `norm`, `total`, or a parameter name such as `W_Q`."""
        if component == "total":
            return sum_of(p.formula for p in self.params)
        if component in COMPONENTS:
            return sum_of(p.formula for p in self.of(component))
        for p in self.params:
            if p.name == component:
                return p.formula
        raise KeyError(f"unknown component or parameter {component!r}")

    def share(self, component: str) -> float:
        """The fraction of the block's parameters in a component or a single parameter."""
        part = self.formula(component).value(self.env) if component != "total" else self.total
        return part / self.total

    @property
    def flops_per_token(self) -> int:
        return sum(f.count for f in self.flops)

    @property
    def flops_formula(self) -> Formula:
        return sum_of(f.formula for f in self.flops)

    def to_dict(self) -> dict:
        """The `--json` document: component counts at the top, then the detail."""
        env = self.env
        names = ["attention", "ffn", "norm", "total"]
        return {
            "attention": self.attention,
            "ffn": self.ffn,
            "norm": self.norm,
            "total": self.total,
            "shares": {c: self.share(c) for c in COMPONENTS},
            "formulas": {c: str(self.formula(c)) for c in names},
            "substituted": {c: self.formula(c).substituted(env) for c in names},
            "params": {p.name: p.count for p in self.params},
            "kv_cache": self.kv_cache.to_dict(),
            "shapes": {p.name: list(p.shape) for p in self.params},
            "flops_per_token": {
                **{f.name: f.count for f in self.flops},
                "total": self.flops_per_token,
                "formula": str(self.flops_formula),
                "substituted": self.flops_formula.substituted(env),
                "seq_len": self.seq_len,
                **({"mem_len": self.env["m"]} if self.cross_attention else {}),
                "convention": "forward pass, matmuls only, 2 FLOPs per multiply-add; each token attends to "
                              "seq_len positions" + (" and the memory's mem_len rows" if self.cross_attention else ""),
            },
            "config": {"d_model": self.d_model, "heads": self.heads, "d_head": self.d_head,
                       "d_ff": self.d_ff, "bias": self.bias, "norm": self.norm_type,
                       "activation": self.activation, "final_norm": self.final_norm,
                       "seq_len": self.seq_len, "out_proj": self.out_proj,
                       **({"d_k": self.d_k, "d_v": self.d_v} if self.d_k is not None else {}),
                       **({"kv_heads": self.kv_heads} if self.kv_heads is not None else {})},
        }

    def latex(self) -> str:
        """A snippet for notes (amsmath only): each parameter and component with its formula,
        the numbers put in and the count, then the FLOPs per token."""
        env = self.env
        lines = [rf"% symblock params: d = {self.d_model}, heads = {self.heads}, f = {self.d_ff}, "
                 rf"n = {self.seq_len}; needs \usepackage{{amsmath}}", r"\begin{align*}"]
        rows = []
        for comp in COMPONENTS:
            for p in self.of(comp):
                rows.append((_param_tex(p.name), p.formula, p.count))
            rows.append((rf"P_{{\text{{{comp}}}}}", self.formula(comp), self.formula(comp).value(env)))
        rows.append((r"P_{\text{total}}", self.formula("total"), self.total))
        rows.append((r"\text{FLOPs per token}", self.flops_formula, self.flops_per_token))
        body = [_row(sym, f.latex(), f.latex(env), n) for sym, f, n in rows]
        if self.kv_heads is not None:   # grouped K/V heads: what they save, as the text table's last line says it
            kv = self.kv_cache
            body.append(rf"\text{{KV cache per token}} &= g (k + v) = {kv.kv_heads} \cdot ({kv.d_k} + {kv.d_v}) = "
                        rf"{group(kv.entries)} \quad \text{{entries (K and V rows)}}")
        lines.append(" \\\\\n".join(body))
        lines.append(r"\end{align*}")
        return "\n".join(lines)

    def shape_line(self) -> str:
        """The block's sizes as the tables' title lines say them."""
        widths = (f"d_head = {self.d_head}" if self.d_k is None
                  else f"k = d_k = {self.d_k}, v = d_v = {self.d_v} per head")
        if self.kv_heads is not None:
            widths += f"; g = {self.kv_heads} K/V head{'s' * (self.kv_heads != 1)}"
        return f"d = d_model = {self.d_model}, heads = {self.heads} ({widths}), f = d_ff = {self.d_ff}"

    def table(self) -> str:
        """The human-readable report: aligned rows (component, formula, numbers, count, share)."""
        env = self.env
        norms = 2 + self.final_norm + self.cross_attention
        kind = "LayerNorm" if self.norm_type == "layernorm" else "RMSNorm"
        what = "Decoder layer with cross-attention" if self.cross_attention else "Transformer block"
        head = [f"{what}: {self.shape_line()}",
                f"{kind} ×{norms}, {self.activation} FFN"
                f"{' (gated)' if self.activation in GATED else ''}, "
                f"{'with' if self.bias else 'no'} biases"
                + (f" but the given {', '.join(given)}" if (given := self.given_biases()) else "")
                + ("" if self.out_proj else ", no output projection W_O (A = concat of the heads)"), ""]
        rows = []
        for comp in COMPONENTS:
            form = self.formula(comp)
            rows.append((comp, str(form), form.substituted(env), self.formula(comp).value(env),
                         self.share(comp)))
            for p in self.of(comp):
                rows.append(("  " + p.name, str(p.formula), p.formula.substituted(env), p.count,
                             p.count / self.total))
        total = self.formula("total")
        rows.append(("total", str(total), total.substituted(env), self.total, 1.0))
        out = head + _aligned(("parameters", "formula", "with numbers", "count", "share"), rows)
        out += ["", f"FLOPs per token, forward pass (matmuls only, 2 per multiply-add; "
                    f"n = seq_len = {self.seq_len} positions attended"
                + (f"; m = {self.env['m']} memory rows by the cross-attention" if self.cross_attention else "") + "):"]
        ftotal = self.flops_per_token
        frows = [(f.name, str(f.formula), f.formula.substituted(env), f.count, f.count / ftotal)
                 for f in self.flops]
        frows.append(("total", str(self.flops_formula), self.flops_formula.substituted(env),
                      ftotal, 1.0))
        out += _aligned(("FLOPs", "formula", "with numbers", "count", "share"), frows)
        return "\n".join(out)


def _param_tex(name: str) -> str:
    """W_Q -> W_{Q}, b_1 -> b_{1}, ln1.gamma -> \\gamma_{\\text{ln1}}."""
    p = parameters.parse(name)
    if p.norm:
        return rf"\{p.kind}_{{\text{{{p.norm.replace('_', '')}}}}}"
    return f"{'W' if p.kind == 'weight' else 'b'}_{{{p.sub}}}"


def _row(sym: str, formula: str, numbers: str, n: int) -> str:
    """`sym &= formula = numbers = n`; when that is wider than a page's line (a sum of many terms: a
    grouped-heads block's total), the numbers go under it, as many of their terms to a line as fit."""
    from symblock.engine.tex_width import width
    from symblock.options import LATEX_LINE
    rest = (f"{numbers} = " if numbers != str(n) else "") + group(n)
    line = rf"{sym} &= {formula} = {rest}"
    if width(line) <= LATEX_LINE or numbers == str(n):
        return line
    terms = rest.split(" + ")
    if any(t.count("(") != t.count(")") for t in terms):   # a sum inside parentheses: not broken there
        terms = [rest]
    lines, current = [rf"{sym} &= {formula}"], "&= " + terms[0]
    for t in terms[1:]:
        if width(f"{current} + {t}") > LATEX_LINE:
            lines.append(current)
            current = r"&\quad + " + t
        else:
            current += " + " + t
    return r" \\ ".join([*lines, current])


def group(n: int) -> str:
    """7087872 -> 7\\,087\\,872 (thin spaces between groups of three digits: every count in LaTeX)."""
    return f"{n:,}".replace(",", r"\,")


def _aligned(header: tuple[str, ...], rows: list[tuple]) -> list[str]:
    cells = [list(header)] + [[r[0], r[1], r[2], f"{r[3]:,}", f"{r[4]:.2%}"] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    right = (False, False, False, True, True)
    lines = []
    for i, row in enumerate(cells):
        lines.append("  ".join(c.rjust(w) if r else c.ljust(w)
                               for c, w, r in zip(row, widths, right)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


class BadArgument(ValueError):
    """A count's argument out of its range: `arg` names the Python argument (which the command
    line says as its flag), `expected` what it must be and what it got."""

    def __init__(self, arg: str, expected: str):
        super().__init__(f"{arg} {expected}")
        self.arg, self.expected = arg, expected


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadArgument(name, f"must be a positive integer, got {value!r}")
    if value <= 0:
        raise BadArgument(name, f"must be a positive integer, got {value}")
    if value > MAX_SIZE:
        raise BadArgument(name, f"must be at most {MAX_SIZE:,} (10**9), got a number of "
                          f"{len(str(value)) if value.bit_length() < 14000 else 'over 4000'} digits")
    return value


def _flops(gated: bool, widths: bool, grouped: bool, cross_attention: bool = False,
           out_proj: bool = True) -> list[tuple[str, Formula]]:
    """The matmuls' FLOPs per token, as `count` documents them."""
    flops = [("attention_proj", Formula.of("d", "d", coef=8 if out_proj else 6)),
             ("attention_scores", Formula.of("n", "d", coef=2)),
             ("attention_values", Formula.of("n", "d", coef=2)),
             ("ffn", Formula.of("d", "f", coef=6 if gated else 4))]
    if widths:  # x W_Q, x W_K: 2·2·d·h·k; x W_V and concat W_O: 2·2·d·h·v (K, V: g heads when grouped)
        g = "g" if grouped else "h"
        proj = (Formula.of("d", "h", "k", coef=2) + Formula.of("d", g, "k", coef=2)
                + Formula.of("d", g, "v", coef=2))
        if out_proj:
            proj = proj + Formula.of("d", "h", "v", coef=2)
        flops[:3] = [("attention_proj", proj),
                     ("attention_scores", Formula.of("n", "h", "k", coef=2)),
                     ("attention_values", Formula.of("n", "h", "v", coef=2))]
    if cross_attention:  # the cross-attention's: each token attends the memory's m rows
        flops += [(f"cross_{name[len('attention_'):]}", form if name == "attention_proj" else form.over("m"))
                  for name, form in flops[:3]]
    return flops


def _checked(d_model, heads, d_ff, seq_len, d_k, d_v, kv_heads, norm, activation):
    """count's arguments checked, with d_ff, d_k, d_v filled in: a one-line ValueError for each fault."""
    d_model = _positive_int("d_model", d_model)
    heads = _positive_int("heads", heads)
    d_ff = 4 * d_model if d_ff is None else _positive_int("d_ff", d_ff)
    seq_len = _positive_int("seq_len", seq_len)
    kv_heads = grouped_heads(_positive_int("kv_heads", kv_heads) if kv_heads is not None else None, heads)
    widths = d_k is not None or d_v is not None or kv_heads is not None  # W_Q is d × h·d_k, W_O h·d_v × d
    if widths and (d_k is None or d_v is None) and d_model % heads:
        raise ValueError(f"d_model = {d_model} is not divisible by heads = {heads}: give both d_k and d_v")
    if widths:
        d_k, d_v = (_positive_int(n, w if w is not None else d_model // heads) for n, w in (("d_k", d_k), ("d_v", d_v)))
    elif d_model % heads:
        raise ValueError(f"d_model = {d_model} is not divisible by heads = {heads} "
                         f"(each head gets d_model / heads columns)")
    if norm not in NORMS:
        raise BadArgument("norm", f"must be one of {', '.join(NORMS)}, got {norm!r}")
    if activation not in ACTIVATIONS:
        raise BadArgument("activation", f"must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    return d_model, heads, d_ff, seq_len, d_k, d_v, kv_heads, widths


def count(d_model: int, heads: int, d_ff: int | None = None, bias: bool = True,
          norm: str = "layernorm", activation: str = "relu", final_norm: bool = False,
          seq_len: int = DEFAULT_SEQ_LEN, d_k: int | None = None, d_v: int | None = None,
          kv_heads: int | None = None, cross_attention: bool = False,
          extra: Iterable[str] = (), out_proj: bool = True, mem_len: int | None = None) -> Counts:
    """Count the parameters of one Transformer block exactly, and its FLOPs per token.

    `d_ff=None` means 4·d_model. Raises ValueError with a one-line message for a non-positive
    dimension, heads not dividing d_model, or an unknown norm/activation. `extra` names bias
    vectors and β counted although `bias` is False: those a spec with `block.bias: false` gives,
    which its forward adds (`b_Q`, `cross.b_O`, `ln1.beta`). `out_proj=False`: no output
    projection (no W_O, b_O, cross.W_O, cross.b_O; the attention's FLOPs lose concat W_O's).
    `mem_len`: the memory rows a decoder layer's cross-attention attends (m; default n = seq_len).

    FLOPs convention (per token, forward pass): matrix multiplications only, 2 FLOPs per
    multiply-add (the convention of Kaplan et al. 2020 and torch's FlopCounterMode):
      attention_proj    x W_Q, x W_K, x W_V and concat(heads) W_O: 4 · 2·d² = 8·d²
                        (6·d² without the output projection)
      attention_scores  q_h · k_h over n = seq_len positions, all heads: 2·n·d
      attention_values  weights_h · V_h over n positions, all heads: 2·n·d
      ffn               x W_1 and h W_2 (and x W_3 when gated): 2·2·d·f (3·2·d·f gated)
    The score and value terms assume the token attends to all n positions (no causal mask; with
    one, a token at position i attends to i, (n + 1)/2 on average). Not counted: bias additions,
    scaling, softmax, activation, gating product, norms and residual additions — element-wise
    work of order d + n·h per token. So the total is 2·(weight-matrix parameters) + 4·n·d.
    """
    extra = frozenset(extra)
    d_model, heads, d_ff, seq_len, d_k, d_v, kv_heads, widths = _checked(
        d_model, heads, d_ff, seq_len, d_k, d_v, kv_heads, norm, activation)
    bias, final_norm = bool(bias), bool(final_norm)
    gated = activation in GATED
    env = {"n": seq_len, "d": d_model, "f": d_ff}
    if cross_attention:
        env["m"] = _positive_int("mem_len", mem_len) if mem_len is not None else seq_len
    if widths:
        env |= {"h": heads, "k": d_k, "v": d_v}
    if kv_heads is not None:
        env["g"] = kv_heads

    params: list[Param] = []

    def add(name: str, component: str, shape: tuple[str, str]) -> None:
        symbols = [f for s in shape if s != "1" for f in s.split("·")]  # "h·k": heads·d_k
        form = Formula.of(*symbols, as_given=True)  # W_2 reads f·d, like its shape
        dims = tuple(Formula.of(*s.split("·"), as_given=True).value(env) if s != "1" else 1
                     for s in shape)
        params.append(Param(name, component, dims, form, form.value(env)))

    qk, v = ("h·k", "h·v") if widths else ("d", "d")
    kk, kv = ("g·k", "g·v") if kv_heads is not None else (qk, v)   # grouped: W_K, W_V are d × g·k
    attentions = [("", kk, kv)] + ([("cross.", qk, v)] if cross_attention else [])  # cross K/V: never grouped
    for pre, p, shape in ((pre, p, shape) for pre, k_w, v_w in attentions
                          for p, shape in (("Q", ("d", qk)), ("K", ("d", k_w)), ("V", ("d", v_w)), ("O", (v, "d")))
                          if p != "O" or out_proj):
        add(f"{pre}W_{p}", "attention", shape)
        if bias or f"{pre}b_{p}" in extra:
            add(f"{pre}b_{p}", "attention", ("1", shape[1]))
    for w, b, shape in (("W_1", "b_1", ("d", "f")), ("W_3", "b_3", ("d", "f")),
                        ("W_2", "b_2", ("f", "d"))):
        if w == "W_3" and not gated:
            continue
        add(w, "ffn", shape)
        if bias or b in extra:
            add(b, "ffn", ("1", shape[1]))
    for ln in ("ln1", "ln2") + (("ln3",) if cross_attention else ()) + (("ln_final",) if final_norm else ()):
        add(f"{ln}.gamma", "norm", ("1", "d"))
        if norm == "layernorm" and (bias or f"{ln}.beta" in extra):
            add(f"{ln}.beta", "norm", ("1", "d"))

    flops = _flops(gated, widths, kv_heads is not None, cross_attention, bool(out_proj))
    return Counts(d_model, heads, d_ff, bias, norm, activation, final_norm, seq_len,
                  params=tuple(params),
                  flops=tuple(Flop(name, form, form.value(env)) for name, form in flops),
                  d_k=d_k if widths else None, d_v=d_v if widths else None, kv_heads=kv_heads,
                  cross_attention=bool(cross_attention), out_proj=bool(out_proj),
                  mem_len=env.get("m") if cross_attention else None)
