"""Rational powers of rationals, exactly: the frequencies base^(−2i/d) of sinusoidal positions
(and RoPE's θ^(−2i/d)) for any base and any even width.

A power is a rational when it is one, a square root (an `exact` sqrt node) when the exponent's
denominator is 2, else one `pow` node of exact.py's graph, whose certified ball is Arb's root.
The base is first written c^k with k largest (10000^(1/8) = 10^(1/2)), so one value has one form.
"""
from __future__ import annotations

from flint import fmpq, fmpz

from symblock.engine import exact


def power(base, e) -> exact.Real:
    """base^e for a rational base > 0 and a rational exponent, exactly: a rational when it is one
    (10000^(1/2) = 100), a square root when e's denominator is 2, else one `pow` node
    (10^(1/3)) with its certified ball. The frequencies of sinusoidal positions, base^(−2i/d)."""
    base, e = exact.real(base).q, exact.real(e).q
    if base is None or e is None or base <= 0:
        raise ValueError("a power needs a positive rational base and a rational exponent")
    base, e = _as_power(base, e)
    p, n = int(e.p), int(e.q)
    root = _nth_root(base, n)
    if root is not None:
        return exact.Real(q=root ** p) if p >= 0 else exact.Real(q=1 / root ** -p)
    if n == 2:
        r = exact.sqrt(exact.Real(q=base)) ** abs(p)
        return exact.inv(r) if p < 0 else r
    return exact.node("pow", (exact.Real(q=base), e), 3)


def _as_power(base: fmpq, e: fmpq) -> tuple[fmpq, fmpq]:
    """(c, e·k) with base = c^k, k largest: 10000^(1/8) = 10^(1/2), one canonical form per value."""
    top = max(int(base.p).bit_length(), int(base.q).bit_length())
    for k in range(top, 1, -1):
        c = _nth_root(base, k)
        if c is not None:
            return c, e * k
    return base, e


def _nth_root(q: fmpq, n: int) -> fmpq | None:
    """The rational n-th root of q > 0, or None when it is irrational."""
    out = []
    for k in (int(q.p), int(q.q)):
        r = int(fmpz(k).root(n))  # ⌊k^(1/n)⌋
        if r ** n != k:
            return None
        out.append(r)
    return fmpq(*out)
