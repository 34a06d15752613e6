"""Exact cancellations inside one sum of products (exact.sum_of_products), decided on the
structure of the nodes, before any number is looked at: x·(1/x) = 1 within a product, and
k·X·(1/X) = k across terms; and a dot product whose terms reduce to rationals by (√m)² = m.
Also a proof that a quotient is not a given rational (`apart`), for the snap.
Below exact.py like balls.py: it reads a node's `op`, `args` and serial `n`, and never builds one.
"""
from __future__ import annotations

from flint import arb, fmpq

from symblock.engine.node import N, Node


def by_serial(f: Node) -> int:
    return f.n


def cancel_quotients(acc: dict[tuple[N, ...], fmpq], c0: fmpq) -> fmpq:
    """k·X·(1/X) = k, in place: terms that are, together, k times the sum X, each times 1/X (a
    softmax row's weights times one value: Σ_j k·e_j/S with S = Σ_j e_j), become the rational k.
    Exact algebra, where the rational snap would otherwise have to certify k at 16384 bits."""
    quotients: dict = {}
    for key in acc:
        for f in key:
            if f.op == "inv" and f.args[0].op == "sum":
                quotients.setdefault(f, []).append(key)
    for inv_x, keys in quotients.items():
        x0, x_terms = inv_x.args[0].args
        if len(keys) != len(x_terms) + (x0 != 0):
            continue
        rest = {}
        for key in keys:
            r = list(key)
            r.remove(inv_x)
            rest[tuple(r)] = acc[key]
        pairs = [(x0, ())] if x0 != 0 else []
        pairs += [(c, k) for c, k in x_terms]
        if any(k not in rest for _, k in pairs):
            continue
        ratio = rest[pairs[0][1]] / pairs[0][0]
        if all(rest[k] == ratio * c for c, k in pairs) and all(k in acc for k in keys):
            for key in keys:
                del acc[key]
            c0 += ratio
    return c0


def cancel_inverses(fs: list[N]) -> list[N]:
    """x · (1/x) = 1 within one product."""
    out = list(fs)
    for f in fs:
        if f.op == "inv" and f in out and f.args[0] in out:
            out.remove(f)
            out.remove(f.args[0])
    return out


def rational_dot(xs: list[Node], ys: list[Node]) -> fmpq | None:
    """Σ x·y when its structure shows it rational, else None: the terms' products of nodes
    reduce by f·f = m for f = √m and 1/m for f = 1/√m (m rational: a normalised row times
    itself, 1/r_i · 1/r_i) and by f·(1/f) = 1; a product left irrational must cancel exactly.
    Not a test of rationality (None says nothing), so callers use it only as a proved value.
    Entries of many terms (a later layer's rows) are not expanded: None at once."""
    ex, ey = [_terms(x) for x in xs], [_terms(y) for y in ys]
    if sum(len(a) * len(b) for a, b in zip(ex, ey)) > FEW_PRODUCTS * len(xs):
        return None
    c0 = fmpq(0)
    rest: dict[tuple, fmpq] = {}
    for tx, ty in zip(ex, ey):
        for cx, kx in tx:
            for cy, ky in ty:
                q, key = _reduce(kx + ky)
                if key:
                    rest[key] = rest.get(key, fmpq(0)) + cx * cy * q
                else:
                    c0 += cx * cy * q
    return c0 if not any(rest.values()) else None


FEW_PRODUCTS = 4  # products per coordinate rational_dot expands at most (x = a/r + b times y = c/r + d)


def _terms(x: Node) -> list[tuple[fmpq, tuple]]:
    """x as Σ c·Π key (its rational part under the empty key)."""
    if x.q is not None:
        return [(x.q, ())] if x.q != 0 else []
    if x.op == "sum":
        c0, terms = x.args
        return ([(c0, ())] if c0 != 0 else []) + list(terms)
    return [(fmpq(1), (x,))]


def _square(f: Node) -> fmpq | None:
    """f² when rational by structure: m for √m, 1/m for 1/√m (m rational)."""
    if f.op == "sqrt" and f.args[0].q is not None:
        return f.args[0].q
    if f.op == "inv" and f.args[0].op == "sqrt" and f.args[0].args[0].q is not None:
        return 1 / f.args[0].args[0].q
    return None


def _reduce(fs: tuple) -> tuple[fmpq, tuple]:
    """A product of nodes as q · Π rest, squares and inverse pairs taken out (rest by serial)."""
    q, out = fmpq(1), sorted(fs, key=by_serial)
    changed = True
    while changed:
        changed = False
        for f in out:
            if out.count(f) > 1 and (s := _square(f)) is not None:
                q *= s
                out.remove(f)
                out.remove(f)
            elif f.op == "inv" and f.args[0] in out:
                out.remove(f)
                out.remove(f.args[0])
            else:
                continue
            changed = True
            break
    return q, tuple(out)


def apart(r: Node, q: fmpq) -> bool:
    """True when r ≠ q is proved, by the ranges of the functions r is made of (`outside`) or as
    a quotient (`quotient_apart`). False says nothing."""
    return outside(r, q) or quotient_apart(r, q)


RANGES = 4  # nested sums and products `outside` looks through at most


def outside(r: Node, q: fmpq, depth: int = RANGES) -> bool:
    """True when r ≠ q follows from the open ranges of erf and tanh, (−1, 1), and of exp and an
    inverse, never 0, through sums of one term c0 + c·Π f and products of factors proved
    nonzero (their balls exclude 0, or recursively): 1 + erf(x/√2) of a GELU at a large negative
    x is within 2^-500 of 0, and x/2·(1 + erf(x/√2)) too, so their balls hold the candidate 0
    and the snap would refine the whole subgraph to thousands of bits only to refute it."""
    op = r.op
    if op in ("erf", "tanh"):
        return abs(q) >= 1
    if op == "exp":
        return q <= 0
    if op == "inv":
        return q == 0
    if op != "sum" or depth == 0 or len(r.args[1]) != 1:
        return False
    c0, ((c, fs),) = r.args
    t = (q - c0) / c  # r = q exactly when Π fs = t
    if len(fs) == 1:
        return outside(fs[0], t, depth - 1)
    return t == 0 and all(not f.ball.contains(0) or outside(f, fmpq(0), depth - 1) for f in fs)


def quotient_apart(r: Node, q: fmpq) -> bool:
    """True when r ≠ q is proved: r is a quotient N/S (every term carries one factor 1/S, S a sum:
    a softmax weight e_j/S, a weighted sum Σ_j v_j e_j/S of P·V) and the numerator of r − q,
    N + (c0 − q)·S, merged term by term and enclosed in Arb, excludes 0. The merge cancels
    exactly what r's own ball cancels numerically: a peaked row's dominant term, whose weight is
    within 2^-128 of 1, so that r's ball at 128 bits still holds q (the snap would refine the whole
    subgraph to 512 bits to refute it); the terms left are tight balls. False says nothing."""
    if r.op != "sum":
        return False
    c0, terms = r.args
    inv_s = next((f for f in terms[0][1] if f.op == "inv" and f.args[0].op == "sum"), None)
    if inv_s is None:
        return False
    num: dict[tuple, fmpq] = {}
    for c, key in terms:
        if inv_s not in key:
            return False
        rest = list(key)
        rest.remove(inv_s)
        num[tuple(rest)] = num.get(tuple(rest), fmpq(0)) + c
    s0, s_terms = inv_s.args[0].args
    d = c0 - q
    if d != 0:
        for c, key in s_terms:
            num[key] = num.get(key, fmpq(0)) + d * c
    ball = arb(d * s0 + num.pop((), fmpq(0)))
    for key, c in num.items():
        if c != 0:
            t = key[0].ball
            for f in key[1:]:
                t = t * f.ball
            ball += t * c
    return not ball.contains(0)
