"""Closed forms written straight from the graph (engine/closed.py): the text that `forward --json`
and the tables print parses back (sympify) to the engine's value, reads like SymPy's own forms on
hand-worked cases, and is produced without building or printing any SymPy expression."""
from __future__ import annotations

from fractions import Fraction

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from symblock.engine import block, closed, exact, report, spec
from symblock.engine.exact import real


def q(a, b=1):
    return real(Fraction(a, b))


@pytest.mark.parametrize("value, want", [
    (lambda: exact.sqrt(q(5, 4)), "sqrt(5)/2"),
    (lambda: 1 / exact.sqrt(q(5, 4)), "2*sqrt(5)/5"),                 # 1/√(5/4) = 2/√5 = 2√5/5
    (lambda: q(2, 3) * exact.sqrt(q(8)), "4*sqrt(2)/3"),              # √8 = 2√2
    (lambda: exact.sqrt(q(3)) * exact.sqrt(q(6)) * exact.exp(q(2)), "3*sqrt(2)*exp(2)"),  # √18 = 3√2
    (lambda: exact.exp(q(1)) / (1 + exact.exp(q(1))), "E/(E + 1)"),
    (lambda: 1 / (exact.sqrt(q(3)) + 1), "1/(sqrt(3) + 1)"),
    (lambda: (exact.sqrt(q(2)) + 1) * (exact.sqrt(q(2)) + 1), "(sqrt(2) + 1)**2"),
    (lambda: exact.tanh(q(1)) - exact.erf(q(-1, 2)) * 3, "tanh(1) - 3*erf(-1/2)"),
    # (600√1500010/150001)·(900√1500010/150001) = 540000·1500010/150001² = 5400000/150001:
    # rational, though the graph cannot see it (no rational snap for a denominator that large)
    (lambda: (q(600, 150001) * exact.sqrt(q(1500010))) * (q(900, 150001) * exact.sqrt(q(1500010))),
     "5400000/150001"),
    (lambda: q(-7, 3), "-7/3"),
    (lambda: exact.NEG_INF, "-oo"),
])
def test_hand_worked_forms(value, want):
    assert exact.text(value(), 10**6) == want


def test_too_large_a_tree_is_none_without_writing_it(monkeypatch):
    big = exact.total([exact.exp(q(k, 3)) for k in range(1, 40)])
    monkeypatch.setattr(closed, "text", lambda *a: pytest.fail("text written for an over-size tree"))
    assert exact.text(big, 20) is None and report.exact_str(big, 20) is None


def test_forward_json_builds_no_sympy_expression(monkeypatch):
    trace = block.forward(spec.load("pre-ln-causal-gelu"))
    monkeypatch.setattr(closed, "sympy_form", lambda *a: pytest.fail("SymPy form built for printing"))
    out = report.to_json(list(trace))
    assert '"exact"' in out and "sqrt(" in out and "exp(" in out


def build(draw_ops, leaves):
    """A small expression graph from a Hypothesis recipe (shared nodes included)."""
    vals = [q(a, b) for a, b in leaves]
    for op, i, j in draw_ops:
        x, y = vals[i % len(vals)], vals[j % len(vals)]
        if op == "add":
            vals.append(x + y)
        elif op == "mul":
            vals.append(x * y)
        elif op == "div" and y.sign() != 0:
            vals.append(x / y)
        elif op == "sqrt":
            vals.append(exact.sqrt(x * x + q(1, 3)))
        elif op == "exp":
            vals.append(exact.exp(x / (1 + x * x)))   # a small argument
        elif op == "erf":
            vals.append(exact.erf(x))
    return vals[-1]


recipe = st.lists(st.tuples(st.sampled_from(["add", "mul", "div", "sqrt", "exp", "erf"]),
                            st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=8)
leaves = st.lists(st.tuples(st.integers(-12, 12), st.sampled_from([1, 2, 3, 4, 7, 9, 10, 1000])),
                  min_size=1, max_size=4)


@settings(max_examples=150)
@given(recipe, leaves)
def test_text_parses_back_to_the_engines_value(ops, ls):
    v = build(ops, ls)
    t = exact.text(v, 10**4)
    if t is None:
        return
    back = sympy.sympify(t)
    assert back.free_symbols == set()
    want = sympy.Float(v.digits(40), 45)  # Arb's certified digits, not SymPy's
    assert abs(sympy.N(back, 45) - want) <= sympy.Float(10) ** -35 * (1 + abs(want)), (t, v.digits(20))
