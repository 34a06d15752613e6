"""engine/printed: the one rule of how a sheet prints a number at d places, checked against
numbers worked by hand, and read by the sheets and by grading alike."""
from fractions import Fraction

from symblock.engine import exact, printed
from symblock.grading import plan, points
from symblock.sheets import numbers


def test_plain_is_an_integer_a_short_terminating_decimal_or_minus_infinity():
    r = exact.real
    assert printed.is_plain(r(3)) and printed.is_plain(r(Fraction(1, 8)))          # 0.125
    assert printed.is_plain(r(Fraction(1, 64)))                                     # 0.015625: six places
    assert not printed.is_plain(r(Fraction(1, 128)))                                # 0.0078125: seven
    assert not printed.is_plain(r(Fraction(1, 3))) and not printed.is_plain(exact.sqrt(r(2)))
    assert printed.is_plain(exact.NEG_INF)


def test_rounded_half_away_from_zero_and_scientific_outside_the_range():
    r = exact.real
    assert printed.fixed(r(Fraction(2, 3)), 3) == "0.667"
    assert printed.fraction(printed.rounded(r(Fraction(2, 3)), 3)) == Fraction(667, 1000)
    assert printed.fixed(r(Fraction(-1, 8)), 2) == "-0.13"                           # −0.125: away from zero
    assert printed.fixed(r(Fraction(-4, 10**4)), 3) == "0.000"                       # no "-0.000"
    assert printed.is_scientific(r(10**6)) and not printed.is_scientific(r(999999))
    assert not printed.is_scientific(r(Fraction(1, 10**4))) and printed.is_scientific(r(Fraction(1, 10**4 + 1)))
    assert not printed.is_scientific(r(0))
    assert printed.fraction(printed.dec_value(r(1234567), 2)) == 1230000                            # 1.23 × 10⁶


def test_sheets_and_grading_read_the_one_rule():
    assert numbers.is_plain is printed.is_plain and numbers.fixed is printed.fixed
    assert numbers.dec_value is printed.dec_value
    for name in ("_plain", "_fixed", "MAX_EXACT_PLACES"):
        assert not hasattr(points, name)
    assert not hasattr(plan, "SCI_LOW")
