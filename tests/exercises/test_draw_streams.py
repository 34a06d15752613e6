"""The stage's batched draws (draws.ints_array, NumPy) are the very numbers of the per-tensor
stream (draws.ints, Python's random.random()), so fitting in batches never changes a variant."""
from hypothesis import given, settings
from hypothesis import strategies as st

from symblock.exercises.draws import ints, ints_array


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(0, 2**64), st.just(0), st.text(max_size=5)), st.text(max_size=12),
       st.integers(0, 3000), st.integers(-1000, 1000), st.integers(0, 10**9))
def test_batched_draws_equal_the_python_stream(seed, name, count, low, width):
    got = ints_array(seed, name, count, low, low + width)
    assert got.tolist() == ints(seed, name, count, low, low + width)


def test_at_least_and_equal_decide_near_ties_exactly():
    """The ball fast path decides clear cases; a bound within 1e-50 of √2 (inside the 128-bit
    construction ball) still gets the right answer from refinement, on either side."""
    from decimal import Decimal, getcontext
    from fractions import Fraction
    from symblock.engine import exact
    from symblock.exercises.checks import at_least, equal
    getcontext().prec = 80
    root2 = Decimal(2).sqrt()                                   # 80 digits, independent of the engine
    below = Fraction(root2 - Decimal("1e-50"))
    above = Fraction(root2 + Decimal("1e-50"))
    s = exact.sqrt(exact.real(2))
    assert at_least(s, Fraction(1)) and not at_least(s, Fraction(3, 2))
    assert at_least(s, below) and not at_least(s, above)
    assert not equal(s, exact.real(Fraction(3, 2)))
    assert equal(s * s, exact.real(2)) and not equal(s, exact.real(above))
