"""Candidates the snap refuses by the ranges of the functions a node is made of (cancel.outside):
|erf| < 1, |tanh| < 1, exp > 0, 1/x ≠ 0, through one-term sums and products of nonzero factors.
A GELU at a large negative x is x/2·(1 + erf(x/√2)) with 1 + erf within 2^-300 of 0: its ball at
the construction precision (balls.PREC, 192 bits) holds 0, and without the proof the snap refined the whole subgraph to 512 bits and more
only to refute it. The node must be the one the engine made without the proof, ball to the bit."""
from __future__ import annotations

import math

from flint import fmpq

from symblock.engine import balls, block, cancel, exact
from tests.engine.test_matmul import _structure


def _refinements(monkeypatch, run, proofs=True):
    """run()'s result and the precisions refined to (`proofs`: with the range proofs)."""
    calls = []
    real = balls.with_prec
    with monkeypatch.context() as m:
        m.setattr(balls, "with_prec", lambda prec, *a: calls.append(prec) or real(prec, *a))
        if not proofs:
            m.setattr(balls, "apart", cancel.quotient_apart)
        out = run()
    return out, calls


def test_a_gelu_near_zero_is_refused_zero_without_refining(monkeypatch):
    x = exact.real(-40) / exact.sqrt(exact.real(3))      # irrational, ≈ −23.09: 1 + erf ≈ 1e-117 ≈ 2^-388
    g, calls = _refinements(monkeypatch, lambda: block.gelu(x))
    g_old, old_calls = _refinements(monkeypatch, lambda: block.gelu(x), proofs=False)
    assert 512 in old_calls and not calls
    assert g.q is None and _structure(g, {}) == _structure(g_old, {})
    assert g.ball.mid() == g_old.ball.mid() and g.ball.rad() == g_old.ball.rad()
    v = -40 / math.sqrt(3)
    assert math.isclose(float(g), v / 2 * math.erfc(-v / math.sqrt(2)), rel_tol=1e-12)  # ≈ −1.2e-116


def test_ranges_prove_only_inequality():
    y = exact.real(1) / exact.sqrt(exact.real(2))
    e = exact.erf(y)
    assert cancel.outside(e, fmpq(1)) and cancel.outside(e, fmpq(-1)) and cancel.outside(e, fmpq(3))
    assert not cancel.outside(e, fmpq(1, 2))                 # inside (−1, 1): says nothing
    s = 1 + e                                                # 1 + erf: in (0, 2)
    assert cancel.outside(s, fmpq(0)) and cancel.outside(s, fmpq(2)) and not cancel.outside(s, fmpq(1))
    assert cancel.outside(exact.tanh(y), fmpq(-1)) and not cancel.outside(exact.tanh(y), fmpq(0))
    assert cancel.outside(exact.exp(y), fmpq(0)) and not cancel.outside(exact.exp(y), fmpq(2))
    assert cancel.outside(exact.inv(s), fmpq(0)) and not cancel.outside(exact.inv(s), fmpq(1))
    p = y * s                                                # a product of nonzero factors
    assert cancel.outside(p, fmpq(0)) and not cancel.outside(p, fmpq(1))
    assert not cancel.outside(y - exact.real(fmpq(7, 10)), fmpq(0))  # a sum of two terms: no range


def test_times_one_and_plus_zero_are_the_node_itself():
    r = exact.sqrt(exact.real(2))
    x = exact.real(3) * r + 1                                # a one-term sum (flattened into sums)
    for y in (x * 1, 1 * x, x + 0, 0 + x, x - 0, x * exact.ONE, x + exact.ZERO):
        assert y is x
    assert (x * 2).args == (fmpq(2), ((fmpq(6), (r,)),)) and (x * 0).q == 0
