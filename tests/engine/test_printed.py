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


def test_forward_latex_prints_a_huge_integer_exactly(tmp_path, capsys):
    """`forward --format latex` writes the exact decimal of 10⁴⁰ + 1, not the 28 digits of a default
    decimal context (which printed 10⁴⁰), and a short decimal as it is."""
    from symblock.cli import main
    big = 10**40 + 1
    spec = tmp_path / "big.yaml"
    spec.write_text("dims: {seq_len: 2, d_model: 2, d_ff: 2, heads: 1}\n"
                    "block: {norm_position: post, norm: layernorm, eps: 0, activation: relu}\n"
                    f"inputs:\n  X: [[{big}, 0.125], [0, 1]]\nrandom: {{seed: 1, low: -1, high: 1}}\n",
                    encoding="utf-8")
    assert main(["forward", str(spec), "--format", "latex"]) == 0
    out = capsys.readouterr().out
    assert rf"X = \begin{{bmatrix}} {big} & 0.125 \\ 0 & 1 \end{{bmatrix}}" in out
