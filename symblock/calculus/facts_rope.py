"""Facts about RoPE and grouped K/V heads, derived with the engine's own rotation and grouping on
symbols and verified by SymPy (listed by `derive.facts`)."""
from __future__ import annotations


def _rotated(vec, pos, style: str, theta):
    """The engine's RoPE turn (engine/rope.py: its pairs and its x cos ∓ y sin) of a symbolic vector at
    a symbolic position: pair i by pos·θ^(−2i/d_k)."""
    import sympy
    from symblock.engine import rope
    d = len(vec)
    out = list(vec)
    for i, (a, b) in enumerate(rope.Rope(style=style).pairs(d)):
        phi = pos * theta ** sympy.Rational(-2 * i, d)
        c, s = sympy.cos(phi), sympy.sin(phi)
        out[a], out[b] = rope.turn(vec[a], vec[b], c, s, -1), rope.turn(vec[b], vec[a], c, s, 1)
    return out


def fact_rope_relative():
    """q_m · k_n after RoPE depends on the positions only through m − n (both styles)."""
    import sympy
    from symblock.calculus.fact import Fact
    m, n = sympy.symbols("m n", real=True)
    theta = sympy.Integer(10000)
    q, k = sympy.symbols("q_0:4", real=True), sympy.symbols("k_0:4", real=True)
    ok, shown = True, None
    for style in ("half", "interleaved"):
        def score(a, b):
            return sum(x * y for x, y in zip(_rotated(q, a, style, theta), _rotated(k, b, style, theta)))
        ok &= sympy.expand(sympy.expand_trig(score(m, n) - score(m - n, 0))) == 0
        shown = shown or score(m - n, 0)
    return Fact("rope_relative",
                "after RoPE the score of a query at position m and a key at position n depends only on "
                "m − n (both the half and the interleaved pairing)",
                r"\mathrm{RoPE}_m(q) \cdot \mathrm{RoPE}_n(k) = \mathrm{RoPE}_{m-n}(q) \cdot k,\quad "
                r"d_k = 4:\ %s" % sympy.latex(shown),
                ok, "engine's RoPE pairing on symbols q_i, k_i, m, n (θ = 10000); the difference, "
                "its sines and cosines of sums expanded, is 0")


def fact_gqa_is_repeated_mha():
    """Grouped K/V heads equal multi-head attention with each K/V head's weights repeated."""
    import sympy
    from symblock.calculus.fact import Fact
    from symblock.engine import block
    from symblock.engine.matrix import Mat

    def sym(name, r, c):
        return Mat([[sympy.Symbol(f"{name}_{{{i + 1}{j + 1}}}", real=True) for j in range(c)] for i in range(r)])
    q, k, v = sym("q", 2, 2), sym("k", 2, 1), sym("v", 2, 1)       # 2 query heads of 1, one K/V head
    kk, vv = Mat([r + r for r in k.rows]), Mat([r + r for r in v.rows])  # the K/V head repeated per head

    class _T:  # the head's reads of a tracer: dims, options, steps that just compute
        def __init__(self, kv_heads):
            from symblock.engine.steps import Dims, Options
            self.dims, self.o = Dims(2, 2, 1, 2, d_k=1, d_v=1, kv_heads=kv_heads), Options(attention_scale="none")
            self.same = None   # no same-position scores known in advance (engine/rope.py `scores`)

        def step(self, name, latex, compute):
            return compute()

        def read(self, name, tex):
            return tex
    ok = True
    for h in range(2):
        g = block.head(_T(1), h, q, k, v, (h, h + 1), (0, 1), (0, 1))
        m = block.head(_T(2), h, q, kk, vv, (h, h + 1), (h, h + 1), (h, h + 1))
        ok &= all(sympy.simplify(a - b) == 0 for ra, rb in zip(g.rows, m.rows) for a, b in zip(ra, rb))
    return Fact("gqa_repeated_mha",
                "grouped K/V heads (query head h reads K/V head ⌊h/(heads/kv_heads)⌋) give the same "
                "heads as multi-head attention whose W_K, W_V repeat each K/V head's columns",
                r"O_h(Q, K_{\lfloor h / g \rfloor}, V_{\lfloor h / g \rfloor}) = O_h(Q, [K, K], [V, V])",
                ok, "the engine's attention head on symbols, 2 query heads over 1 K/V head; sympy.simplify")
