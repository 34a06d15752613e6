"""Exact entries may be written with sin, cos and pi, as printed tables of positions are: they
parse to closed forms with certified balls, and a block worked from them matches NumPy."""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import sympy

from symblock.engine import block, exact, spec
from symblock.errors import SpecError
from symblock.reference import numeric


def p(text):
    return spec.parse_exact(text, "f.yaml", "inputs.X[0][0]")


def test_sin_cos_pi_parse_to_exact_values():
    assert p("cos(pi/3)") == sympy.Rational(1, 2)  # SymPy's own simplification, exact
    assert p("sin(pi)") == 0
    assert p("sin(1)") == sympy.sin(1)
    assert p("2*cos(1/2)^2 - 1") == 2 * sympy.cos(sympy.Rational(1, 2)) ** 2 - 1
    x = exact.from_sympy(p("sin(1) + cos(2)"))
    with mpmath.workdps(60):
        assert abs(mpmath.mpf(x.digits(40)) - (mpmath.sin(1) + mpmath.cos(2))) < mpmath.mpf(10) ** -38
    assert exact.text(x) in ("sin(1) + cos(2)", "cos(2) + sin(1)")


def test_a_huge_argument_is_measured_before_it_is_evaluated():
    with pytest.raises(SpecError, match="too large"):
        p("sin(10**10**10)")
    with pytest.raises(SpecError, match="unknown name tan"):
        p("tan(1)")


def test_a_block_worked_from_sin_and_cos_entries_matches_numpy():
    x = [["sin(1)", "cos(1)", "0"], ["sin(pi/6)", "cos(1/10)", "-1"]]
    s = spec.from_mapping({"dims": {"seq_len": 2, "d_model": 3, "d_ff": 2, "heads": 1},
                           "block": {"eps": "1e-5"}, "inputs": {"X": x}, "random": {"seed": 3}})
    t = block.forward(s)
    assert t["x"].value.rows[1][0].is_rational  # sin(π/6) = 1/2 exactly
    X = np.array([[math.sin(1), math.cos(1), 0], [0.5, math.cos(0.1), -1]])
    assert np.abs(t["x"].value.floats() - X).max() < 1e-15
    ref = numeric.forward(s)
    assert np.abs(t["output"].value.floats() - ref["output"]).max() < 1e-9
