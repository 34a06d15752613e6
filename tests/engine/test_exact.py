"""The exact number type: rational fast path, certified decimals and signs, closed forms.

Every comparison is against SymPy/mpmath computed independently at high precision.
"""
from decimal import Decimal
from fractions import Fraction

import mpmath
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from symblock.engine import exact
from symblock.engine.exact import Real, real

fractions = st.fractions(min_value=-20, max_value=20, max_denominator=50)


def agrees(text: str, expr: sympy.Expr, digits: int = 30) -> bool:
    """`text` (engine digits) matches the SymPy value to `digits` significant digits."""
    with mpmath.workdps(80):
        want = mpmath.mpf(str(sympy.N(expr, 70)))
        return abs(mpmath.mpf(text) - want) <= abs(want) * mpmath.mpf(10) ** (1 - digits)


@given(fractions, fractions)
def test_rational_arithmetic_stays_rational(a, b):
    x, y = real(a), real(b)
    assert (x + y).is_rational and Fraction(str((x + y).q)) == a + b
    assert Fraction(str((x * y).q)) == a * b
    assert Fraction(str((x - y).q)) == a - b
    if b:
        assert Fraction(str((x / y).q)) == a / b


@given(st.lists(st.tuples(fractions, st.integers(2, 30)), min_size=1, max_size=5))
@settings(max_examples=60)
def test_combinations_of_roots_match_sympy_to_30_digits(terms):
    """Σ c·√n built by the engine equals the SymPy value to at least 30 significant digits."""
    x = exact.total([real(c) * exact.sqrt(real(n)) for c, n in terms])
    s = sympy.Add(*[sympy.Rational(c.numerator, c.denominator) * sympy.sqrt(n) for c, n in terms])
    if s == 0:
        assert x.sign() == 0
        return
    assert agrees(x.digits(30), s)


@given(fractions)
@settings(max_examples=60)
def test_transcendental_functions(a):
    x = real(a)
    s = sympy.Rational(a.numerator, a.denominator)
    for f, g in ((exact.exp, sympy.exp), (exact.erf, sympy.erf), (exact.tanh, sympy.tanh)):
        v = f(x)
        assert float(v) == float(sympy.N(g(s), 40))  # correctly rounded double
        if g(s) != 0:
            assert agrees(v.digits(30), g(s))


def test_exp_zero_and_friends_are_exact():
    assert exact.exp(real(0)).q == 1 and exact.erf(real(0)).q == 0 and exact.tanh(real(0)).q == 0
    assert exact.sqrt(real(Fraction(9, 4))).q == exact.fmpq(3, 2)
    assert not exact.sqrt(real(2)).is_rational


def test_cancellation_is_exact():
    r = exact.sqrt(real(3))
    assert ((r + 1) - r).q == 1            # like terms merge
    s = exact.sqrt(real(5))
    assert (s / s).q == 1                  # x · 1/x cancels
    w = exact.exp(real(Fraction(3, 7)))
    assert (w / exact.total([w])).q == 1   # a softmax over one entry is exactly 1


def test_sign_is_certified_beyond_double_precision():
    # √(10^20 + 1) − 10^10 ≈ 5e-11 > 0, and its negative twin: doubles lose it, balls don't.
    big = real(10 ** 20 + 1)
    d = exact.sqrt(big) - real(10 ** 10)
    assert d.sign() == 1 and (-d).sign() == -1
    assert exact.relu(d) is d and exact.relu(-d).q == 0
    # A difference equal to zero only after simplification: decided through its closed form.
    z = exact.sqrt(real(2)) * exact.sqrt(real(8)) - real(4)
    assert z.sign() == 0


def test_decimal_rounds_half_away_from_zero_exactly():
    assert real(Fraction(5, 2)).decimal(0) == Decimal("3")
    assert real(Fraction(-5, 2)).decimal(0) == Decimal("-3")
    assert real(Fraction(1, 8)).decimal(2) == Decimal("0.13")
    assert real(Fraction(2401, 1000)).decimal(2) == Decimal("2.40")
    assert exact.sqrt(real(2)).decimal(4) == Decimal("1.4142")
    assert exact.exp(real(1)).decimal(10) == Decimal("2.7182818285")


def test_float_is_correctly_rounded():
    for n in (2, 3, 5, 7, 1000001):
        assert float(exact.sqrt(real(n))) == float(sympy.N(sympy.sqrt(n), 50))
    assert float(real(Fraction(1, 3))) == 1 / 3


def test_closed_form_round_trips_and_respects_size():
    e = exact.exp(real(1))
    w = e / (1 + e)
    assert sympy.simplify(w.to_sympy() - sympy.E / (1 + sympy.E)) == 0
    assert exact.from_sympy(sympy.sympify(str(w.to_sympy()))).digits(30) == w.digits(30)
    big = exact.total([exact.exp(real(Fraction(k, 3))) for k in range(1, 40)])
    assert big.to_sympy(max_size=20) is None and big.to_sympy(max_size=10 ** 6) is not None


def test_graph_keeps_sharing():
    """A chain that doubles a tree each step stays a small graph: evaluation is linear."""
    x = exact.sqrt(real(2))
    for _ in range(60):
        x = x * x / (x + 1)  # tree size ~2^60; graph size ~180 nodes
    assert x.size > 10 ** 6 and x.to_sympy() is None
    assert len(x.digits(30)) >= 30


def test_from_sympy_rejects_what_it_cannot_represent():
    with pytest.raises(ValueError, match="cannot represent"):
        exact.from_sympy(sympy.log(3))


def test_square_root_of_negative_is_an_error():
    with pytest.raises(ValueError):
        exact.sqrt(real(-1))
    with pytest.raises(ZeroDivisionError):
        real(1) / real(0)


def test_real_is_not_a_float_in_disguise():
    v = exact.sqrt(real(2)) * exact.sqrt(real(2))
    assert isinstance(v, Real) and v.to_sympy() == 2
    assert isinstance(exact.exp(real(1)).ball, type(exact.ONE.ball))


def test_decimals_are_certified_right_next_to_a_rounding_tie():
    """0.525 − e^−120 (≈ 8·10⁻⁵³ below the tie) is not snapped to 21/40 and rounds down, 0.525 + e^−120 up: both ends of the ball
    are rounded in exact arithmetic, so no guard digits can carry a value across the tie."""
    from fractions import Fraction
    tiny = exact.exp(exact.real(-120))
    assert not (exact.real(Fraction(21, 40)) - tiny).is_rational  # not snapped to 21/40 (balls.snap)
    assert (exact.real(Fraction(21, 40)) - tiny).decimal(2) == Decimal("0.52")
    assert (exact.real(Fraction(21, 40)) + tiny).decimal(2) == Decimal("0.53")
    assert (tiny - exact.real(Fraction(21, 40))).decimal(2) == Decimal("-0.52")


def softmax_row(args):
    """The engine's softmax as block.py builds it: e^(x − max), their sum S, each e/S."""
    xs = [exact.sqrt(real(2)) * real(a) for a in args]
    top = max(xs, key=float)
    es = [exact.exp(x - top) for x in xs]
    s = es[0]
    for e in es[1:]:
        s = s + e
    return [e / s for e in es]


@given(st.lists(fractions, min_size=2, max_size=5, unique=True), fractions)
@settings(deadline=None, max_examples=40)
def test_softmax_weighted_constant_is_rational_by_algebra_not_numerics(args, k):
    """Σ_j k·w_j over a softmax row is k: cancelled as k·S·(1/S), with the numeric snap switched
    off; two different values per row stay an irrational node, at SymPy's value."""
    w = softmax_row(args)
    orig = exact.snap
    exact.snap = lambda r, known=None: None  # no rational recognised from balls: only the algebra is left
    try:
        total = exact.dot(w, [real(k)] * len(w))
        mixed = exact.dot(w, [real(k + 1)] + [real(k)] * (len(w) - 1))
    finally:
        exact.snap = orig
    assert total.is_rational and Fraction(int(total.q.p), int(total.q.q)) == k
    x = [sympy.sqrt(2) * sympy.Rational(a.numerator, a.denominator) for a in args]
    top = max(x, key=lambda v: float(v))
    e = [sympy.exp(v - top) for v in x]
    want = sympy.Rational(k.numerator, k.denominator) + e[0] / sum(e)  # k·Σw + w_0
    assert not mixed.is_rational and agrees(mixed.digits(30), want)


def test_partial_softmax_sums_are_not_cancelled():
    w = softmax_row([Fraction(1), Fraction(-1, 2), Fraction(3)])
    two = w[0] * 2 + w[1] * 2          # only two of the three weights: 2·(1 − w_2), irrational
    assert not two.is_rational
    x = [sympy.sqrt(2), -sympy.sqrt(2) / 2, 3 * sympy.sqrt(2)]
    e = [sympy.exp(v - x[2]) for v in x]
    assert agrees(two.digits(30), 2 * (e[0] + e[1]) / sum(e))
