"""Sinusoidal positions for any even d_model and any rational base, exact, against NumPy written
here and the tables articles print; the exact powers behind their frequencies."""
from __future__ import annotations

import contextlib
import io
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy
import yaml

from symblock.cli import main
from symblock.engine import exact, model, powers
from symblock.engine.model import sinusoidal_row
from symblock.engine.model_spec import from_mapping
from symblock.engine.spec import read_spec
from symblock.errors import SpecError
from symblock.reference import verify


def numpy_table(n: int, d: int, base: float) -> np.ndarray:
    """The article's formula, written independently: PE(p, 2i) = sin(p / base^(2i/d)), cos at 2i+1."""
    out = np.zeros((n, d))
    for p in range(n):
        for i in range(d // 2):
            out[p, 2 * i] = np.sin(p / base ** (2 * i / d))
            out[p, 2 * i + 1] = np.cos(p / base ** (2 * i / d))
    return out


def table(n: int, d: int, base) -> np.ndarray:
    return np.array([[float(x) for x in sinusoidal_row(p, d, base)] for p in range(n)])


def test_base_100_table_as_machine_learning_mastery_prints_it():
    """"A Gentle Introduction to Positional Encoding in Transformer Models": n = 100, d = 4, the
    rows of "I am a robot" as printed to 8 places."""
    printed = [[0, 1, 0, 1],
               [0.84147098, 0.54030231, 0.09983342, 0.99500417],
               [0.90929743, -0.41614684, 0.19866933, 0.98006658],
               [0.14112001, -0.9899925, 0.29552021, 0.95533649]]
    got = table(4, 4, 100)
    assert np.abs(got - numpy_table(4, 4, 100.0)).max() < 1e-9
    assert np.abs(got - np.array(printed)).max() < 5e-9
    assert [exact.text(x) for x in sinusoidal_row(1, 4, 100)] == ["sin(1)", "cos(1)", "sin(1/10)", "cos(1/10)"]


@pytest.mark.parametrize("d", [6, 12, 16])
def test_any_even_d_matches_numpy_to_1e_9(d):
    assert np.abs(table(9, d, 10000) - numpy_table(9, d, 10000.0)).max() < 1e-9


def test_d_16_frequencies_are_square_roots_written_exactly():
    row = sinusoidal_row(3, 16)
    assert exact.text(row[2]) == "sin(3*sqrt(10)/10)"  # 10000^(2/16) = √10
    assert sympy.sympify(exact.text(row[6])) == sympy.sin(3 * sympy.sqrt(10) / 100)
    assert [x.q for x in sinusoidal_row(0, 16)] == [0, 1] * 8  # rationals, not nodes


def test_a_fractional_base_and_a_cube_root_stay_exact():
    x = sinusoidal_row(2, 6, Fraction(3, 2))[2]  # sin(2 · (3/2)^(−1/3))
    with mpmath.workdps(60):
        want = mpmath.sin(2 * (mpmath.mpf(3) / 2) ** (mpmath.mpf(-1) / 3))
        assert abs(mpmath.mpf(x.digits(40)) - want) < mpmath.mpf(10) ** -38
    assert sympy.simplify(x.to_sympy() - sympy.sin(2 * sympy.Rational(3, 2) ** sympy.Rational(-1, 3))) == 0


@pytest.mark.parametrize("base, e, want", [(10000, Fraction(1, 2), 100), (10000, Fraction(-1, 8), None),
                                           (8, Fraction(2, 3), 4), (Fraction(9, 4), Fraction(-1, 2), Fraction(2, 3)),
                                           (10, Fraction(1, 3), None)])
def test_power_is_rational_when_it_can_be_and_certified_otherwise(base, e, want):
    x = powers.power(base, e)
    if want is not None:
        assert x.is_rational and Fraction(str(x.q)) == want
    else:
        assert not x.is_rational
        with mpmath.workdps(60):
            ref = mpmath.mpf(Fraction(base).numerator) / Fraction(base).denominator
            ref = ref ** (mpmath.mpf(e.numerator) / e.denominator)
            assert abs(mpmath.mpf(x.digits(40)) - ref) < ref * mpmath.mpf(10) ** -38
        assert sympy.sympify(exact.text(x)).equals(sympy.Rational(base) ** sympy.Rational(e))


def spec(**model_keys):
    data, _ = read_spec("tiny-gpt")
    data = {**data, "model": {**data["model"], "positions": "sinusoidal", **model_keys},
            "dims": {"d_model": 6, "d_ff": 4, "heads": 2}, "weights": {}}
    return from_mapping(data, "pe.yaml")


def test_a_model_with_base_100_and_d_6_verifies_against_numpy_and_torch():
    s = spec(pe_base=100)
    pos = model.forward(s)["pos"].value
    assert np.abs(pos.floats() - numpy_table(len(s.prompt), 6, 100.0)).max() < 1e-12
    r = verify.run_model(s, require_torch=True)
    assert r.ok, r.problems


@pytest.mark.parametrize("keys, where, what", [
    ({"pe_base": 0}, "model.pe_base", "expected a positive rational"),
    ({"pe_base": "sqrt(2)"}, "model.pe_base", "expected a positive rational"),
    ({"pe_base": "ten"}, "model.pe_base", "unknown name ten"),
    ({"pe_base": "abc"}, "model.pe_base", "expected a positive rational number such as 10000 or 100, got 'abc'"),
    ({"positions": "learned", "pe_base": 100}, "model.pe_base", "a base is for sinusoidal positions"),
])
def test_a_bad_base_is_refused_naming_the_field(keys, where, what):
    with pytest.raises(SpecError) as e:
        spec(**keys)
    assert e.value.where == where and what in e.value.message and e.value.source == "pe.yaml"
    assert "such as 3, 1.25" not in e.value.message   # never suggest forms (sqrt(2)) the base refuses


def test_a_d_6_table_prints_its_closed_forms_in_text_and_latex(tmp_path):
    """`forward --step pos`: the step is named PE (not its entry PE_{p,2i}) in LaTeX, the text's
    closed forms read sin(10**(-4/3)) (SymPy-parsable, one pair of parentheses) and the LaTeX
    keeps the exact entries, next to the decimals."""
    path = tmp_path / "pe.yaml"
    data = {"model": {"vocab": ["a", "b"], "positions": "sinusoidal", "layers": 1, "head": "tied",
                      "prompt": ["a", "b"]}, "dims": {"d_model": 6, "d_ff": 4, "heads": 2},
            "random": {"seed": 1}}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    text, tex = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(["forward", str(path), "--step", "pos"]) == 0
    with contextlib.redirect_stdout(tex):
        assert main(["forward", str(path), "--step", "pos", "--format", "latex"]) == 0
    row = text.getvalue().splitlines()[-1]
    assert "sin(10**(-4/3))" in row and "((" not in row
    # the printed form means sin(10000^(-1/3)) (p = 1, 2i/d = 2/6), as NumPy has it
    assert float(sympy.sympify("sin(10**(-4/3))")) == pytest.approx(np.sin(10000 ** (-1 / 3)), abs=1e-15)
    tex = tex.getvalue()
    # the exact table is wider than a line: its columns go over two lines (\left[ ... \right. then \left. ... \right])
    assert "\n\\mathrm{PE} &= \\left[\\begin{matrix}" in tex and "\\mathrm{PE}_{p,2i} =" not in tex.split("\\end{equation*}")[1]
    exact_part = tex.split("\n\\mathrm{PE} &= \\left[\\begin{matrix}")[1].split(r"\approx")[0]
    assert exact_part.count(r"\sin") == 3 and exact_part.count(r"\cos") == 3   # p = 1's three pairs
