"""Hypothesis strategies for spec entries, shared by the cross-checks (tests/reference, tests/calculus).

Numbers a person writes into a spec, over the ranges where bugs hide: integers well beyond
[−2, 2], short fractions ("5/3", given as text as a spec would), and decimals as written with up to
three places ("0.599", "-1.25": rounded inputs, taken exactly). Matrices draw their entries from a
small pool, so repeated entries are common: equal scores (softmax ties), constant rows (zero
variance), ReLU inputs of exactly 0.
"""
from __future__ import annotations

from decimal import Decimal

from hypothesis import strategies as st


def numbers(bound: int = 9):
    ints = st.integers(-bound, bound)
    fractions = st.builds(lambda p, q: f"{p}/{q}", st.integers(-3 * bound, 3 * bound), st.integers(2, 12))
    decimals = st.builds(lambda n, k: str(Decimal(n).scaleb(-k)),
                         st.integers(-bound * 100, bound * 100), st.integers(1, 3))
    return st.one_of(ints, fractions, decimals)


@st.composite
def matrix(draw, rows: int, cols: int, bound: int = 9):
    """rows × cols entries drawn from a pool of 1..rows·cols numbers (ties are frequent)."""
    pool = draw(st.lists(numbers(bound), min_size=1, max_size=rows * cols))
    return [[draw(st.sampled_from(pool)) for _ in range(cols)] for _ in range(rows)]


def vector(size: int, bound: int = 3):
    return st.lists(numbers(bound), min_size=size, max_size=size)
