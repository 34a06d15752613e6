"""RoPE's and grouped heads' facts are proved by SymPy on the engine's own rotation and heads,
and the proof can fail: a key counted from another position does not verify."""
import sympy

from symblock.calculus import facts_rope


def test_rope_score_depends_only_on_the_distance_and_gqa_is_repeated_mha():
    r, g = facts_rope.fact_rope_relative(), facts_rope.fact_gqa_is_repeated_mha()
    assert r.verified and g.verified
    assert r.name == "rope_relative" and r"\cos{\left(m - n \right)}" in r.latex


def test_a_wrong_distance_does_not_verify():
    m, n = sympy.symbols("m n", real=True)
    q, k = sympy.symbols("q_0:4", real=True), sympy.symbols("k_0:4", real=True)
    for style in ("half", "interleaved"):
        def score(a, b):
            return sum(x * y for x, y in zip(facts_rope._rotated(q, a, style, 10000),
                                             facts_rope._rotated(k, b, style, 10000)))
        assert sympy.expand(sympy.expand_trig(score(m, n) - score(m - n + 1, 0))) != 0
