"""The block's steps as general formulas in symbols, and tutorial facts verified by SymPy:
`symblock derive`.

    >>> from symblock import derive
    >>> d = derive.derive()                        # the tiny built-in block (2 × 2, d_ff 2)
    >>> d["norm1"].entries[0][0]                   # LayerNorm of a 2-d row: a sign
    sign(r^{(1)}_{11} - r^{(1)}_{12})
    >>> [f.name for f in derive.facts() if f.verified]

How the formulas are made: every weight and input is a Symbol (`w^{Q}_{12}`, `x_{21}`; γ, β, ε as
the spec pins them), and each sub-layer is run by the engine's own code (block.attention,
block.norm, block.ffn) on a matrix of symbols for *its* input (`r^{(1)}_{ij}` for R_1, ...): a
step is a formula in the entries of its sub-layer's input, not the whole block expanded (that
grows exponentially: one entry of a 2 × 2 block's output has ~50,000 operations). Attention goes
further (`_Local`): each of its steps is written in its *direct* inputs, so the scores are
Σ q k (`q_{ij}`, `k_{ij}`), the weights exp(s_{11})/(exp(s_{11}) + exp(s_{12})), the head's
output Σ p v, and A = O W^O in `o_{ij}`: the engine's attention code gets, after each step, a
matrix of symbols named after the step (constants such as −∞ or a masked 0 stay). Entries with
at most SIMPLIFY_OPS operations are simplified (`sympy.simplify`); entries with more than
SHOW_OPS are refused with a message naming the limit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from symblock.calculus import derive_cross
from symblock.calculus.fact import Fact, is_zero, normal_expectation  # noqa: F401  (derive.Fact: the facts return it)

SIMPLIFY_OPS = 150   # simplify entries up to this many operations (sympy.count_ops)
SIMPLIFY_OPS_TRANSCENDENTAL = 40  # ... or this many when exp, erf, tanh or Max (ReLU) appear (simplify takes
                     # tens of seconds on a SwiGLU output entry of 83 operations and changes nothing)
SHOW_OPS = 600       # refuse to print an entry larger than this
MAX_ENTRIES = 16     # seq_len·d_model and d_ff of a derived block or model layer: each sub-layer is written
                     # in its own input's symbols, so an entry grows with d and seq_len, not with depth
                     # (the whole-block symbolic forward's limit is 8); a 4 × 4 layer takes some 25 s
FORMATS = ("latex", "markdown", "text")

TINY = {
    "title": "Tiny Post-LN block in symbols",
    "dims": {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1},
    "block": {"norm_position": "post", "norm": "layernorm", "eps": 0, "activation": "relu"},
    "random": {"seed": 1},  # placeholders only: every number is replaced by a symbol
}

# the symbol base for each sub-layer input, by its name in the step formulas
INPUT_SYMBOLS = {"X": "x", "A": "a", "F": "f", "R_1": "r^{(1)}", "R_2": "r^{(2)}",
                 "H_1": "h^{(1)}", "H_2": "h^{(2)}", "N_1": "n^{(1)}", "N_2": "n^{(2)}", "N_f": "n^{(f)}",
                 "C": "c", "R_3": "r^{(3)}", "H_3": "h^{(3)}", "N_3": "n^{(3)}", "Y": "y"}   # C …: a decoder layer's


class TooLarge(ValueError):
    """An entry over SHOW_OPS operations."""


@dataclass(frozen=True)
class Derived:
    name: str
    latex: str                   # the step's formula, e.g. "Q = X W^{Q}"
    over: str                    # the symbols it is written in, e.g. "X" (entries x_{ij})
    entries: list | None         # SymPy expressions (simplified when small), None when too large
    ops: int                     # the largest entry's operation count


def symbols(base: str, r: int, c: int):
    import sympy
    from symblock.engine.matrix import Mat
    return Mat([[sympy.Symbol(f"{base}_{{{i + 1}{j + 1}}}", real=True) for j in range(c)] for i in range(r)])


def symbolic(spec_arg=None):
    """The spec (or TINY) with weights and inputs as symbols; the size limit is the engine's."""
    from symblock.engine import block, spec as specmod
    s = specmod.from_mapping(TINY, "derive's tiny block (no SPEC)") if spec_arg is None else (
        specmod.load(spec_arg) if isinstance(spec_arg, str) else spec_arg)
    if s.given:
        name = str(s.source).removeprefix("example:")   # a built-in is edited as a copy
        copy = f" (of a copy: `symblock examples --show {name} > my.yaml`)" if name != str(s.source) else ""
        raise specmod.SpecError(s.source, "given", "derive writes every step in symbols, and a pinned step "
                                f"has no general formula: remove the `given` section{copy}")
    if s.dims.batch:
        raise specmod.SpecError(s.source, "inputs.X", "derive writes one sequence in symbols; this spec "
                                f"is a batch of {s.dims.batch}: give inputs.X one matrix")
    if s.options.attention_tiles:
        raise specmod.SpecError(s.source, "block.attention_tiles", "derive writes the steps in symbols, "
                                "but a tile's running maximum compares numbers; leave attention_tiles "
                                "out (`derive --facts` proves the tiles equal to softmax·V)")
    sym = block.symbolic_spec(s)
    sym = derive_cross.symbolize(sym) if s.options.cross_attention else sym   # a decoder layer's own weights
    from symblock.engine import cost
    cost.check_symbolic(sym.dims, sym.source, MAX_ENTRIES)
    return sym


class _Local:
    """A tracer for block.attention that records each step's value (computed from symbols) and
    hands the next step a matrix of fresh symbols named after it (`S_0` -> `s_{ij}`, `S_0'` ->
    `s'_{ij}`, `P_0` -> `p_{ij}`; `p^{(0)}_{ij}` with several heads), so that every attention
    step is a formula in its direct inputs. Entries without symbols (−∞, a masked 0) stay."""

    def __init__(self, tracer, over: dict, src: str, known: dict | None = None):
        self._t, self._over, self._src, self._tex = tracer, over, src, dict(known or {})

    def __getattr__(self, name):
        return getattr(self._t, name)

    def step(self, name: str, latex: str, compute: Callable):
        value = self._t.step(name, latex, compute)
        if value is None:
            return None
        lhs = latex.split(" = ", 1)[0].strip()
        self._tex[name] = lhs
        ins = [self._tex[i] for i in self._t.graph[name] if i in self._tex]
        self._over[name] = ", ".join(ins) if ins else self._src
        return _renamed(value, _base(lhs, self._t.dims.heads, derive_cross.is_cross(name)))


def _base(lhs: str, heads: int, cross: bool = False) -> str:
    """A step's symbol base: `S_0'` -> `s'` (`s'^{(0)}` with several heads; cross: `p^{c}`, `p^{c,(0)}`,
    `S^{c\\prime}_0` -> `s'^{c}`)."""
    import re
    m = re.fullmatch(r"([A-Za-z])(?:\^\{c(\\prime)?\})?(?:_\{?(\w+)\}?)?('?)", lhs)
    if m is None:
        raise AssertionError(f"no symbol base for {lhs!r}")
    base = m.group(1).lower() + ("'" if m.group(2) else m.group(4))
    sup = (["c"] if cross else []) + ([f"({m.group(3)})"] if m.group(3) and heads > 1 else [])
    return base + (f"^{{{','.join(sup)}}}" if sup else "")


def _renamed(value, base: str):
    import sympy
    from symblock.engine import exact
    from symblock.engine.matrix import Mat

    def entry(e, i, j):
        if e is exact.NEG_INF or not sympy.sympify(e).free_symbols:
            return e
        return sympy.Symbol(f"{base}_{{{i + 1}{j + 1}}}", real=True)
    return Mat([[entry(e, i, j) for j, e in enumerate(r)] for i, r in enumerate(value.rows)])


def derive(spec_arg=None, only: str | None = None) -> dict[str, Derived]:
    """Every step of the block, in forward order, as formulas over its sub-layer's input; with
    `only`, that one step (the others are traced, which is cheap, but not simplified)."""
    s = symbolic(spec_arg)
    steps, over = trace(s)
    return finish(steps, over, s.source, only)


def trace(s) -> tuple[list, dict[str, str]]:
    """The symbolic block's steps (engine Steps, not simplified) and, per step, the symbols its
    formula is written in (a model's stack traces each layer with it: derive_model.py)."""
    from symblock.engine import block
    t = block._Tracer(s)
    n, d = s.dims.seq_len, s.dims.d_model
    over: dict[str, str] = {}
    local: dict[str, str] = {}   # attention steps: the direct inputs they are written in

    def inp(tex: str):
        return symbols(INPUT_SYMBOLS[tex], n, d)

    def stage(tex: str, run: Callable):
        before = len(t.steps)
        run(inp(tex))
        for st in t.steps[before:]:
            over[st.name] = local.get(st.name, tex)

    def resid(name: str, tex: str, a: str, b: str):
        over[name] = f"{a}, {b}"
        t.step(name, tex, lambda: inp(a) + inp(b))

    t.step("x", "X", lambda: t.params["X"])
    over["x"] = "X"
    if s.options.cross_attention:   # a decoder layer: calculus/derive_cross.py
        last = derive_cross.decoder_layer(t, stage, resid, over, lambda src, known: _Local(t, local, src, known), symbols)
    elif s.options.norm_position == "pre":
        stage("X", lambda m: block.norm(t, "norm1", m, "X", "ln1", "N_1"))
        stage("N_1", lambda m: block.attention(_Local(t, local, "N_1"), m, "N_1"))
        resid("resid1", "R_1 = X + A", "X", "A")
        stage("R_1", lambda m: block.norm(t, "norm2", m, "R_1", "ln2", "N_2"))
        stage("N_2", lambda m: block.ffn(t, m, "N_2"))
        resid("resid2", "R_2 = R_1 + F", "R_1", "F")
        if s.options.final_norm:
            stage("R_2", lambda m: block.norm(t, "norm_final", m, "R_2", "ln_final", "N_f"))
            last = "N_f"
        else:
            last = "R_2"
    else:
        stage("X", lambda m: block.attention(_Local(t, local, "X"), m, "X"))
        resid("resid1", "R_1 = X + A", "X", "A")
        stage("R_1", lambda m: block.norm(t, "norm1", m, "R_1", "ln1", "H_1"))
        stage("H_1", lambda m: block.ffn(t, m, "H_1"))
        resid("resid2", "R_2 = H_1 + F", "H_1", "F")
        stage("R_2", lambda m: block.norm(t, "norm2", m, "R_2", "ln2", "H_2"))
        last = "H_2"
    t.step("output", f"Y = {last}", lambda: inp(last))
    over["output"] = last
    return list(t.steps), over


def finish(steps: list, over: dict[str, str], source: str, only: str | None = None) -> dict[str, Derived]:
    """Traced steps as Derived formulas, each entry simplified when small; with `only`, that one
    step (an unknown name is refused with the names there are)."""
    import sympy
    if only is not None and only not in {st.name for st in steps}:
        from symblock.engine.spec import SpecError
        from symblock.errors import did_you_mean
        known = [st.name for st in steps]
        raise SpecError(source, "--step", f"no step {only!r}; " + did_you_mean(only, known)
                        + "expected one of " + ", ".join(known))
    out = {}
    for st in steps if only is None else [st for st in steps if st.name == only]:
        rows, worst = [], 0
        for r in st.value.rows:
            row = []
            for e in r:
                e = sympy.sympify(e)
                ops = sympy.count_ops(e)
                if ops <= (SIMPLIFY_OPS_TRANSCENDENTAL if e.has(sympy.exp, sympy.erf, sympy.tanh, sympy.Max)
                           else SIMPLIFY_OPS):
                    e = _simplify(e)
                    ops = sympy.count_ops(e)
                worst = max(worst, ops)
                row.append(e)
            rows.append(row)
        out[st.name] = Derived(st.name, st.latex, over[st.name], rows if worst <= SHOW_OPS else None, worst)
    return out


def _simplify(e):
    """sympy.simplify, writing z/|z| as sign(z) (the form tutorials use; z ≠ 0 wherever the step
    is defined, e.g. σ > 0): |z| = z·sign(z), then sign(z)^k = sign(z)^(k mod 2)."""
    import sympy
    e = sympy.simplify(e)
    if not e.has(sympy.Abs):
        return e
    e = sympy.cancel(e.replace(sympy.Abs, lambda z: z * sympy.sign(z)))
    return e.replace(lambda a: a.is_Pow and isinstance(a.base, sympy.sign) and a.exp.is_Integer,
                     lambda a: a.base ** (int(a.exp) % 2))


# ---------------------------------------------------------------- facts

def facts() -> list[Fact]:
    """Facts tutorials state in prose, each derived with the engine's own functions on symbols and
    verified by SymPy."""
    from symblock.calculus.facts_rope import fact_gqa_is_repeated_mha, fact_rope_relative
    return [f() for f in (fact_layernorm_2d, fact_layernorm_stats, fact_softmax_shift,
                          fact_softmax_sums_to_one, fact_causal_first_row, fact_scaling, fact_online_softmax,
                          fact_rope_relative, fact_gqa_is_repeated_mha)]


def _engine_norm(row, **block_opts):
    """norm1 of a 1-row Pre-LN block whose X is `row` (symbols): the engine's own LayerNorm."""
    import sympy
    from symblock.engine import block, spec as specmod
    d = len(row)
    s = specmod.from_mapping({"dims": {"seq_len": 1, "d_model": d, "d_ff": 1, "heads": 1},
                              "block": {"norm_position": "pre", **block_opts},
                              "random": {"seed": 0}}, "<fact>")
    from dataclasses import replace
    sym = replace(block.symbolic_spec(s), X=sympy.ImmutableMatrix([list(row)]))
    t = block._Tracer(sym)
    x = t.step("x", "X", lambda: t.params["X"])
    return [sympy.sympify(e) for e in block.norm(t, "norm1", x, "X", "ln1", "N_1").rows[0]]


def fact_layernorm_2d() -> Fact:
    import sympy
    a, b = sympy.symbols("a b", real=True)
    y = _engine_norm([a, b])
    want = [sympy.sign(a - b), sympy.sign(b - a)]
    # a ≠ b: a = b + t with t > 0, then with t < 0
    ok = True
    for t in (sympy.Symbol("t", positive=True), sympy.Symbol("t", negative=True)):
        for got, w in zip(y, want):
            ok &= sympy.simplify(got.subs(a, b + t) - w.subs(a, b + t)) == 0
    return Fact("layernorm_2d",
                "LayerNorm (γ = 1, β = 0, ε = 0) of any 2-d row [a, b] with a ≠ b is [sign(a − b), sign(b − a)]: "
                "±1 whatever the numbers (as the article “手算一个完整TransformerBlock” finds by hand)",
                r"\mathrm{LN}([a, b]) = \left[%s,\ %s\right] = [\operatorname{sign}(a - b),\ \operatorname{sign}(b - a)]"
                % (sympy.latex(sympy.simplify(y[0])), sympy.latex(sympy.simplify(y[1]))),
                ok, "engine's LayerNorm on symbols a, b; simplified with a = b + t for t > 0 and t < 0")


def fact_layernorm_stats() -> Fact:
    import sympy
    xs = sympy.symbols("x_1:4", real=True)
    y = _engine_norm(list(xs))
    mean = sympy.simplify(sum(y) / 3)
    var = sympy.simplify(sum(e ** 2 for e in y) / 3 - mean ** 2)
    return Fact("layernorm_mean_var",
                "LayerNorm (γ = 1, β = 0, ε = 0) output rows have mean 0 and (population) variance 1",
                r"\tfrac13 \textstyle\sum_j y_j = %s,\quad \tfrac13 \textstyle\sum_j y_j^2 - \bar y^2 = %s"
                % (sympy.latex(mean), sympy.latex(var)),
                mean == 0 and var == 1, "engine's LayerNorm on a symbolic row [x_1, x_2, x_3]; sympy.simplify")


def fact_softmax_shift() -> Fact:
    import sympy
    from symblock.engine.block import softmax
    s = sympy.symbols("s_1:4", real=True)
    c = sympy.Symbol("c", real=True)
    p, q = softmax(list(s)), softmax([si + c for si in s])
    ok = all(sympy.simplify(pi - qi) == 0 for pi, qi in zip(p, q))
    return Fact("softmax_shift",
                "softmax is unchanged by adding the same constant to every score in a row",
                r"\mathrm{softmax}(s + c)_j = %s = %s = \mathrm{softmax}(s)_j"
                % (sympy.latex(q[0]), sympy.latex(sympy.simplify(q[0]))),
                ok, "engine's softmax on symbols s_1..s_3 and c; sympy.simplify of the difference")


def fact_softmax_sums_to_one() -> Fact:
    import sympy
    from symblock.engine.block import softmax
    s = sympy.symbols("s_1:4", real=True)
    total = sympy.simplify(sum(softmax(list(s))))
    return Fact("softmax_sums_to_one", "each row of attention weights sums to 1",
                r"\textstyle\sum_j \mathrm{softmax}(s)_j = %s" % sympy.latex(total),
                total == 1, "engine's softmax on symbols; sympy.simplify")


def fact_causal_first_row() -> Fact:
    import sympy
    from symblock.engine import exact
    from symblock.engine.block import causal_mask, softmax
    from symblock.engine.matrix import Mat
    n = 3
    S = Mat([[sympy.Symbol(f"s_{{{i + 1}{j + 1}}}", real=True) for j in range(n)] for i in range(n)])
    P = causal_mask(S).map_rows(softmax)
    w = [sympy.simplify(exact.to_sympy(e)) for e in P.rows[0]]
    v = sympy.symbols("v_1:4", real=True)
    out = sympy.simplify(sum(wi * vi for wi, vi in zip(w, v)))
    ok = w == [1, 0, 0] and out == v[0]
    return Fact("causal_first_row",
                "with a causal mask the first token attends only to itself: its attention weights are "
                "[1, 0, …, 0] and its output is its own value vector (p_1, o_1, v_1: row 1 of P, O, V)",
                r"p_{1} = \mathrm{softmax}([s_{11}, -\infty, -\infty]) = [%s],\quad o_{1} = p_{1} V = %s"
                % (", ".join(sympy.latex(e) for e in w), sympy.latex(out)),
                ok, "engine's causal mask and softmax on symbols s_ij; sympy.simplify")


def fact_scaling() -> Fact:
    """Var(q·k) = d_k for independent q_i, k_i of mean 0 and variance 1, so q·k/√d_k has variance 1."""
    import sympy
    dk = 4
    q = sympy.symbols(f"q_0:{dk}", real=True)
    k = sympy.symbols(f"k_0:{dk}", real=True)
    dot = sum(a * b for a, b in zip(q, k))
    mean = normal_expectation(dot, q + k)
    v_raw = normal_expectation(dot ** 2, q + k) - mean ** 2
    v_scaled = normal_expectation((dot / sympy.sqrt(dk)) ** 2, q + k) - (mean / sympy.sqrt(dk)) ** 2
    return Fact("scaling_sqrt_dk",
                "scores q·k of independent unit-variance entries have variance d_k; dividing by √d_k "
                "brings it back to 1 (why attention is scaled)",
                r"d_k = %d:\ \mathrm{Var}(q \cdot k) = %s,\quad \mathrm{Var}(q \cdot k / \sqrt{d_k}) = %s"
                % (dk, sympy.latex(v_raw), sympy.latex(v_scaled)),
                v_raw == dk and v_scaled == 1 and mean == 0,
                "E and Var of the polynomial in q_i, k_i ~ N(0, 1) independent, term by term from the "
                "normal moments E[z^n] = (n − 1)!! (n even), 0 (n odd)")


def fact_online_softmax() -> Fact:
    """The online softmax over key tiles is softmax·V: two tiles of symbols worked by the engine's
    own tile functions, and the invariant behind any number of tiles (engine/online_softmax.py)."""
    import sympy
    from symblock.engine import online_softmax as tiles
    from symblock.engine.matrix import Mat
    s, v = sympy.symbols("s_1:5", real=True), sympy.symbols("v_1:5", real=True)
    m1, m2 = sympy.symbols("m_1 m_2", real=True)   # any running references, the maxima among them
    S, V, M1, M2 = Mat([list(s)]), Mat([[x] for x in v]), Mat([[m1]]), Mat([[m2]])
    l1, a1 = tiles.running_sum(S, range(2), None, M1, None), tiles.running_acc(S, V, range(2), None, M1, None)
    l2, a2 = tiles.running_sum(S, range(2, 4), M1, M2, l1), tiles.running_acc(S, V, range(2, 4), M1, M2, a1)
    tiled = a2.rows[0][0] / l2.rows[0][0]
    softmax_v = sum(sympy.exp(x) * y for x, y in zip(s, v)) / sum(sympy.exp(x) for x in s)
    two = is_zero(tiled - softmax_v)
    # any number: l_j = e^(−m_j) Σ_{k so far} e^(s_k), a_j = e^(−m_j) Σ e^(s_k) v_k holds after the
    # first tile and after each next one (P, Q: the sums so far; t, w: the next block's scores, values)
    P, Q, mp, m = sympy.Symbol("P", positive=True), *sympy.symbols("Q m' m", real=True)
    t, w = sympy.symbols("t_1:3", real=True), sympy.symbols("w_1:3", real=True)
    T, W, Mp, Mm = Mat([list(t)]), Mat([[x] for x in w]), Mat([[mp]]), Mat([[m]])
    new_p = P + sum(sympy.exp(x) for x in t)
    new_q = Q + sum(sympy.exp(x) * y for x, y in zip(t, w))
    first = tiles.running_sum(T, range(2), None, Mm, None).rows[0][0]
    nxt = tiles.running_sum(T, range(2), Mp, Mm, Mat([[sympy.exp(-mp) * P]])).rows[0][0]
    acc = tiles.running_acc(T, W, range(2), Mp, Mm, Mat([[sympy.exp(-mp) * Q]])).rows[0][0]
    keeps = all(is_zero(a - b) for a, b in (
        (first, sympy.exp(-m) * (new_p - P)), (nxt, sympy.exp(-m) * new_p), (acc, sympy.exp(-m) * new_q)))
    return Fact("online_softmax_tiles",
                "the online softmax over key tiles (FlashAttention's running max, rescaled sum and "
                "accumulator) equals softmax·V for any number of tiles",
                r"\ell_2 = %s,\quad \frac{a_2}{\ell_2} = \frac{\sum_k e^{s_k} v_k}{\sum_k e^{s_k}},\quad "
                r"\ell_j = e^{-m_j} \textstyle\sum_{k \le j} e^{s_k},\ a_j = e^{-m_j} \sum_{k \le j} e^{s_k} v_k"
                % sympy.latex(l2.rows[0][0]),
                two and keeps, "engine's tile functions on symbols s_1..s_4, v_1..v_4 in two tiles of 2, "
                "any m_1, m_2; then the invariant at the first tile and kept by a next one (induction "
                "on the tiles); the differences' numerators expanded (e^(a+b) = e^a e^b) are 0")


# ---------------------------------------------------------------- rendering

def _matrix_latex(entries) -> str:
    import sympy
    return sympy.latex(sympy.Matrix(entries), mat_delim="", mat_str="bmatrix")


def render(steps: list[Derived], fmt: str, title: str = "", strict: bool = False) -> str:
    """The steps in LaTeX, Markdown or text. A too-large step raises TooLarge when `strict`,
    else it is named with a note."""
    import sympy
    out = []
    for d in steps:
        over = f"in the entries of {d.over}"
        if d.entries is None:
            msg = (f"step {d.name}: an entry has {d.ops} operations, over the limit of "
                   f"SHOW_OPS = {SHOW_OPS} (symblock.calculus.derive.SHOW_OPS); use smaller dims")
            if strict:
                raise TooLarge(msg)
            out.append({"latex": "% ", "markdown": "", "text": "■ "}[fmt] + msg)
            continue
        if fmt == "latex":
            out.append(f"% {d.name} ({over})\n\\[ {d.latex} = {_matrix_latex(d.entries)} \\]")
        elif fmt == "markdown":
            out.append(f"### `{d.name}` ({over})\n\n$$\n{d.latex} = {_matrix_latex(d.entries)}\n$$")
        else:
            lines = [f"■ {d.name}   {d.latex}   ({over})"]
            for i, r in enumerate(d.entries):
                for j, e in enumerate(r):
                    lines.append(f"    ({i + 1},{j + 1}) = {sympy.sstr(e)}")   # row, column from 1, as the subscripts
            out.append("\n".join(lines))
    head = {"latex": f"% {title}\n" if title else "", "markdown": f"## {title}\n\n" if title else "",
            "text": f"{title}\n\n" if title else ""}[fmt]
    return head + "\n\n".join(out) + "\n"


def render_facts(fs: list[Fact], fmt: str) -> str:
    out = []
    for f in fs:
        mark = "verified by SymPy" if f.verified else "NOT VERIFIED"
        if fmt == "latex":
            out.append(f"% {f.name}: {f.statement} ({mark}: {f.how})\n\\[ {f.latex} \\]")
        elif fmt == "markdown":
            out.append(f"**{f.statement}** ({mark}: {f.how})\n\n$$\n{f.latex}\n$$")
        else:
            out.append(f"■ {f.name}: {f.statement}\n    {f.latex}\n    {mark}: {f.how}")
    return "\n\n".join(out) + "\n"


# ---------------------------------------------------------------- command
