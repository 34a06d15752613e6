"""The bulk matrix product (engine/matmul.py): exact values checked against SymPy and Fractions
worked independently, and every entry the very node entry-by-entry `exact.dot` makes (its terms,
their order, its ball to the bit), since closed forms, decimals and grading read those."""
from __future__ import annotations

import random
from fractions import Fraction

import sympy

from symblock.engine import exact, matmul
from symblock.engine.matrix import Mat


def _structure(x, seen):
    """A node's whole shape: op, coefficients, factors by identity, and its ball's bits."""
    if x.q is not None:
        return ("q", x.q.p, x.q.q)
    if id(x) in seen:
        return ("shared", seen[id(x)])
    seen[id(x)] = len(seen)
    b = x.ball
    if x.op == "sum":
        args = (str(x.args[0]), tuple((str(c), tuple(_structure(f, seen) for f in fs)) for c, fs in x.args[1]))
    else:
        args = tuple(_structure(a, seen) if isinstance(a, exact.Real) else str(a) for a in x.args)
    return (x.op, args, x.size, b.mid().man_exp(), b.rad().man_exp())


def _by_dot(a, b):
    cols = list(zip(*b))
    return [[exact.dot(r, c) for c in cols] for r in a]


def _rows(seed: int, n: int, d: int):
    """Rows mixing rationals, exact zeros, entries sharing one 1/√r per row (a normalised row),
    sums of a few terms (flattened into the product) and of many (kept as one factor)."""
    rng = random.Random(seed)
    roots = [exact.sqrt(exact.real(k + 2)) for k in range(n)]
    many = exact.total([exact.exp(exact.real(Fraction(k, 7))) for k in range(1, 7)])  # 6 terms
    rows = []
    for i in range(n):
        row = []
        for k in range(d):
            kind = rng.choice("zqrrsm")
            q = exact.real(Fraction(rng.randint(-5, 5), rng.randint(1, 4)))
            row.append({"z": exact.ZERO, "q": q, "r": q / roots[i],
                        "s": q * roots[(i + 1) % n] + exact.real(1) / roots[i], "m": q * many}[kind])
        rows.append(row)
    return rows


def _weights(seed: int, d: int, m: int):
    rng = random.Random(seed)
    return [[exact.real(Fraction(rng.choice([0, 0, 1, -1, 2, 3]), rng.randint(1, 3))) for _ in range(m)]
            for _ in range(d)]


def test_bulk_product_is_dots_node_for_node_and_sympys_value():
    for seed in range(6):
        a, b = _rows(seed, 3, 5), _weights(seed, 5, 4)
        got = matmul.matmul(a, b)
        want = _by_dot(a, b)
        seen_g, seen_w = {}, {}
        for rg, rw in zip(got, want):
            assert [_structure(x, seen_g) for x in rg] == [_structure(x, seen_w) for x in rw]
        A = sympy.Matrix([[x.to_sympy(10**9) for x in r] for r in a])
        B = sympy.Matrix([[sympy.Rational(int(y.q.p), int(y.q.q)) for y in r] for r in b])
        for i, j in [(0, 0), (1, 2), (2, 3)]:
            assert sympy.simplify(got[i][j].to_sympy(10**9) - (A * B)[i, j]) == 0


def test_rows_of_many_keys_take_the_gathering_path_and_agree():
    a = [[exact.real(k + 1) / exact.sqrt(exact.real(k + 2)) for k in range(matmul.FEW_KEYS + 3)]]
    b = _weights(7, len(a[0]), 3)
    got, want = matmul.matmul(a, b), _by_dot(a, b)
    assert [_structure(x, {}) for x in got[0]] == [_structure(x, {}) for x in want[0]]
    approx = [sum(float(x) * float(y.q) for x, y in zip(a[0], col)) for col in zip(*b)]
    assert all(abs(float(g) - v) < 1e-12 * (1 + abs(v)) for g, v in zip(got[0], approx))


def test_rational_rows_match_fractions_worked_by_hand():
    a = [[exact.real(Fraction(1, 2)), exact.real(-3)], [exact.real(0), exact.real(Fraction(2, 3))]]
    b = [[exact.real(4), exact.real(Fraction(1, 5))], [exact.real(-1), exact.real(6)]]
    got = Mat(a) @ Mat(b)
    assert [[Fraction(int(x.q.p), int(x.q.q)) for x in r] for r in got.rows] == [[5, Fraction(-179, 10)], [Fraction(-2, 3), 4]]


def test_an_irrational_or_symbolic_right_factor_falls_back_to_dot():
    a = [[exact.real(1), exact.real(2)]]
    assert matmul.matmul(a, [[exact.sqrt(exact.real(2))], [exact.real(1)]]) is None
    assert matmul.matmul(a, [[sympy.Symbol("w")], [exact.real(1)]]) is None
    m = Mat(a) @ Mat([[exact.sqrt(exact.real(2))], [exact.real(1)]])
    assert sympy.simplify(m[0, 0].to_sympy() - (sympy.sqrt(2) + 2)) == 0


def _own_nodes(seed: int, n: int, d: int):
    """Rows (at most FEW_KEYS wide) whose irrational entries are each their own node, as a
    cross-attention query row is: exps, a short sum flattened into its own keys, rationals, zeros."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        row = []
        for k in range(d):
            q = exact.real(Fraction(rng.randint(-5, 5), rng.randint(1, 4)))
            e = exact.exp(exact.real(Fraction(i * d + k + 1, 7)))
            row.append(rng.choice([exact.ZERO, q, e, q * e, e + exact.sqrt(exact.real(i * d + k + 2)) + q]))
        rows.append(row)
    return rows


def test_rows_of_unshared_keys_are_gathered_as_dot_makes_them(monkeypatch):
    def no_matrix(*a):
        raise AssertionError("a row whose keys no two entries share took the fmpq_mat path")
    monkeypatch.setattr(matmul, "_few_keys", no_matrix)
    for seed in range(6):
        a, b = _own_nodes(seed, 3, matmul.FEW_KEYS - 2), _weights(seed, matmul.FEW_KEYS - 2, 4)
        got, want = matmul.matmul(a, b), _by_dot(a, b)
        seen_g, seen_w = {}, {}
        for rg, rw in zip(got, want):
            assert [_structure(x, seen_g) for x in rg] == [_structure(x, seen_w) for x in rw]


def test_a_normalised_row_still_takes_the_matrix_path(monkeypatch):
    def no_gather(*a):
        raise AssertionError("a row sharing 1/r was gathered entry by entry")
    monkeypatch.setattr(matmul, "_gather", no_gather)
    r = exact.ONE / exact.sqrt(exact.real(3))
    a = [[exact.real(k + 1) * r for k in range(4)]]
    got = matmul.matmul(a, _weights(3, 4, 3))
    assert [_structure(x, {}) for x in got[0]] == [_structure(x, {}) for x in _by_dot(a, _weights(3, 4, 3))[0]]
