"""How a sheet prints a number at d places, stated once for the sheets (which print it) and for
grading (which reads what a person read off a sheet, and what an LMS question accepts).

* plain: an integer, a terminating decimal of at most MAX_EXACT_PLACES places, or −∞ — exact and
  already a decimal, so it is printed as it is (`is_plain`);
* otherwise rounded half away from zero to d places (`fixed`: the text; `rounded`: the number);
* a magnitude outside [10⁻⁴, 10⁶) (options.SCI_LOW, SCI_HIGH) in scientific notation, its
  mantissa to d places (`is_scientific`, `scientific`); `dec_value` is the number so printed.
"""
from __future__ import annotations

from decimal import Context, Decimal
from fractions import Fraction
from typing import Union

from flint import arb, fmpq

from symblock import options
from symblock.engine import exact
from symblock.engine.exact import Real

Number = Union[Real, Fraction, int]   # what exact.real takes

MAX_EXACT_PLACES = 6        # a terminating decimal up to this many places is printed exactly
SCI_HIGH, SCI_LOW = options.SCI_HIGH, options.SCI_LOW   # outside [10⁻⁴, 10⁶): scientific notation


def fraction(e: Real) -> Fraction | None:
    """The value of a rational Real as a Fraction (None for −∞ and the irrationals)."""
    if e is exact.NEG_INF or e.q is None:   # e.is_rational, spelled for the type checker
        return None
    return Fraction(int(e.q.p), int(e.q.q))   # from the fmpq itself: SymPy costs ~0.3 s to import


def terminating(q: Fraction, places: int = MAX_EXACT_PLACES) -> str | None:
    """The exact decimal text of q when it terminates within `places` places (a sheet's rule:
    MAX_EXACT_PLACES)."""
    scaled = q * 10 ** places
    if scaled.denominator != 1:
        return None
    wide = Context(prec=scaled.numerator.bit_length() // 3 + 2)  # 28 digits would round 10**40 + 1
    d = Decimal(scaled.numerator).scaleb(-places, wide).normalize(wide)
    text = format(d, "f")
    return "0" if text in ("-0", "0") else text


def is_plain(e: Real) -> bool:
    """An integer, a short terminating decimal or −∞: exact and already a decimal."""
    if e is exact.NEG_INF:
        return True
    q = fraction(e)
    return q is not None and terminating(q) is not None


_LOW, _HIGH = fmpq(SCI_LOW.numerator, SCI_LOW.denominator), fmpq(SCI_HIGH)
_LOW_BALL, _HIGH_BALL = arb(_LOW), arb(_HIGH)


def _positional(a: Real) -> bool:
    """True when 10⁻⁴ ≤ |a| < 10⁶ is certain from the rational or the node's ball alone (the
    usual case, decided without building a difference node and its ball for each bound); False
    says only "not decided here"."""
    if a.q is not None:
        return bool(_LOW <= abs(a.q) < _HIGH)
    if a is exact.NEG_INF:
        return False
    b = abs(a.ball)   # an Arb comparison holds only when it holds for every point of both balls
    return bool(b >= _LOW_BALL and b < _HIGH_BALL)


def is_scientific(e: Number) -> bool:
    """Whether e ≠ 0 is printed in scientific notation: |e| ≥ 10⁶ or |e| < 10⁻⁴."""
    a = exact.real(e)
    if _positional(a) or a.sign() == 0:
        return False
    a = a if a.sign() > 0 else -a
    return not ((a - exact.real(SCI_HIGH)).sign() < 0 and (a - exact.real(SCI_LOW)).sign() >= 0)


def scientific(e: Number, places: int) -> tuple[Decimal, int] | None:
    """(mantissa rounded to `places` decimals, exponent) when |e| ≥ 10⁶ or 0 < |e| < 10⁻⁴."""
    if not is_scientific(e):
        return None
    a = exact.real(e)
    a = a if a.sign() > 0 else -a
    k = Decimal(a.digits(12)).adjusted()
    for k in (k - 1, k, k + 1):   # the 12 digits fix the exponent up to the rounding of 9.99…
        m = (exact.real(e) * exact.real(Fraction(10) ** -k)).decimal(places)
        if 1 <= abs(m) < 10:
            return m, k
    raise AssertionError(f"no exponent for {a.digits(12)}")


def fixed(e: Number, places: int) -> str:
    """The rounded decimal, always positional (for the writers that grade: a number to parse)."""
    if e is exact.NEG_INF:
        return r"-\infty"
    d = exact.real(e).decimal(places)
    if d == 0:
        d = abs(d)
    return f"{d:.{places}f}"


def rounded(e: Number, places: int) -> Real:
    """Exactly the number `fixed(e, places)` prints: e rounded half away from zero to `places`."""
    return exact.real(Fraction(exact.real(e).decimal(places)))


def dec_value(e: Number, places: int) -> Real:
    """Exactly the number a sheet's rounded decimal of e prints (scientific where it is)."""
    sci = scientific(e, places)
    if sci is not None:
        return exact.real(Fraction(sci[0]) * Fraction(10) ** sci[1])
    return rounded(e, places)
