"""Two exact values proved equal by algebra on their graphs, not by a tolerance.

Each value is read off its graph (exact.Real nodes) as a fraction N / D of polynomials with
rational coefficients in *atoms*: √q, erf(·), π, …, and exponentials, where e^(c0 + Σ c·m) is
read as the monomial E^c0 · Π exp(m)^c (rational powers; exp(a)·exp(b) = exp(a + b)). Sums,
products and 1/x multiply out; atoms are identified by the normal form of their argument. Two
values whose cross products N₁·D₂ and N₂·D₁ are the same polynomial are equal: every rule used
is an identity of real numbers, and every denominator is a value the engine divided by (so not
zero). Unequal normal forms prove nothing, and a form past `BUDGET` terms is not attempted.

This is what shows the online softmax over key tiles equal to softmax·V exactly: the tiled
result is a/l with a = Σ e^(s_k − m)·v_k and l = Σ e^(s_k − m), and the factor e^(−m) cancels in
the cross products — which a comparison of expression graphs (engine/model.py's `Canonical`)
cannot see.
"""
from __future__ import annotations

from flint import fmpq

BUDGET = 50_000  # terms of one product of polynomials


class NotProved(Exception):
    """The values' forms are beyond this reader (too large, or a −∞)."""


ONE_MONO: frozenset = frozenset()


def _mono_mul(a: frozenset, b: frozenset) -> tuple[fmpq, frozenset]:
    """a·b as (rational factor, monomial): powers add."""
    if not a:
        return fmpq(1), b
    if not b:
        return fmpq(1), a
    d = dict(a)
    for base, p in b:
        d[base] = d.get(base, 0) + p
    return _reduced(d)


def _reduced(d: dict) -> tuple[fmpq, frozenset]:
    """A monomial's powers as (rational factor, monomial): zero powers dropped, and √q to the
    power p as q^k · √q^(p − 2k) with p − 2k in {0, 1} (so 1/√2 and √2/2 read alike)."""
    c = fmpq(1)
    for base, p in list(d.items()):
        if base[0] == "sqrt" and isinstance(base[1], fmpq) and p not in (0, 1):
            k = int(p) // 2
            c *= base[1] ** k
            p = d[base] = p - 2 * k
        if p == 0:
            del d[base]
    return c, frozenset(d.items())


def _add(p: dict, q: dict, k=1) -> dict:
    out = dict(p)
    for m, c in q.items():
        v = out.get(m, 0) + k * c
        if v == 0:
            out.pop(m, None)
        else:
            out[m] = v
    return out


def _mul(p: dict, q: dict) -> dict:
    if len(p) * len(q) > BUDGET:
        raise NotProved(f"a product of {len(p)} by {len(q)} terms")
    out: dict = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            k, m = _mono_mul(m1, m2)
            v = out.get(m, 0) + c1 * c2 * k
            if v == 0:
                out.pop(m, None)
            else:
                out[m] = v
    return out


def _const(c) -> dict:
    return {ONE_MONO: fmpq(c)} if c != 0 else {}


class Normal:
    """Normal forms of nodes, memoised (the nodes of one trace share their subgraphs). A form
    is (N, D): N a polynomial {monomial: coefficient}, D {key of a polynomial: multiplicity}."""

    def __init__(self):
        self.memo: dict[int, tuple] = {}
        self.polys: dict[frozenset, dict] = {}
        self.ratios: dict[tuple, tuple | None] = {}

    def __call__(self, r) -> tuple[dict, dict]:
        hit = self.memo.get(id(r))
        if hit is not None and hit[0] is r:
            return hit[1]
        form = self._read(r)
        self.memo[id(r)] = (r, form)
        return form

    def key(self, form) -> tuple:
        n, d = form
        return frozenset(n.items()), frozenset(d.items())

    def _read(self, r):
        if r.q is not None:
            return _const(r.q), {}
        op = r.op
        if op == "neginf":
            raise NotProved("−∞")
        if op == "sum":
            c0, terms = r.args
            acc = (_const(c0), {})
            for c, fs in terms:
                t = (_const(c), {})
                for f in fs:
                    t = self.mul(t, self(f))
                acc = self.add(acc, t)
            return acc
        if op == "inv":
            return self.inv(self(r.args[0]))
        if op == "exp":
            return self.exp(self(r.args[0]))
        if op == "const":
            return {frozenset({(("pi",), 1)}): fmpq(1)}, {}
        arg = self(r.args[0])
        n, d = arg
        if op == "sqrt" and not d and (not n or set(n) == {ONE_MONO}):
            base = ("sqrt", n.get(ONE_MONO, fmpq(0)))
        else:
            base = (op, self.key(arg))
        return {frozenset({(base, 1)}): fmpq(1)}, {}

    def exp(self, arg):
        n, d = arg
        if d:
            return {frozenset({(("exp", self.key(arg)), 1)}): fmpq(1)}, {}
        mono = {(("E",) if m == ONE_MONO else ("exp", m)): c for m, c in n.items()}
        return {frozenset(mono.items()): fmpq(1)}, {}

    def expand(self, d: dict) -> dict:
        out = _const(1)
        for k, times in d.items():
            for _ in range(times):
                out = _mul(out, self.polys[k])
        return out

    def add(self, a, b):
        (na, da), (nb, db) = a, b
        if not na:
            return b
        if not nb:
            return a
        if da == db:
            n = _add(na, nb)
            return (n, da) if n else ({}, {})
        lcm = {k: max(da.get(k, 0), db.get(k, 0)) for k in {*da, *db}}
        n = _add(_mul(na, self.expand({k: v - da.get(k, 0) for k, v in lcm.items()})),
                 _mul(nb, self.expand({k: v - db.get(k, 0) for k, v in lcm.items()})))
        return (n, lcm) if n else ({}, {})

    def mul(self, a, b):
        (na, da), (nb, db) = a, b
        if not na or not nb:
            return {}, {}
        d = dict(da)
        for k, v in db.items():
            d[k] = d.get(k, 0) + v
        return _mul(na, nb), d

    def inv(self, a):
        n, d = a
        if not n:
            raise NotProved("1/0")
        if len(n) == 1:  # a monomial: its powers negate
            (m, c), = n.items()
            k, m = _reduced({b: -p for b, p in m})
            return _mul({m: k / c}, self.expand(d)), {}
        k = frozenset(n.items())
        self.polys[k] = n
        return self.expand(d), {k: 1}

    def __repr__(self) -> str:
        return f"Normal({len(self.memo)} nodes)"


def _times(mu: tuple, p: dict) -> dict:
    """The polynomial p times the term mu = (coefficient, monomial)."""
    c, m = mu
    out: dict = {}
    for mp, cp in p.items():
        k, mm = _mono_mul(m, mp)
        out[mm] = out.get(mm, 0) + c * cp * k
    return {mm: v for mm, v in out.items() if v != 0}


def _ratio(normal: Normal, kl, ks):
    """A term mu with L = mu·S (L, S the polynomials of keys kl, ks), or None; memoised."""
    key = (kl, ks)
    if key not in normal.ratios:
        L, S = normal.polys[kl], normal.polys[ks]
        normal.ratios[key] = None
        if len(L) == len(S):
            ml, cl = next(iter(L.items()))
            for ms, cs in S.items():
                k, m = _reduced({**dict(ml), **{b: dict(ml).get(b, 0) - p for b, p in ms}})
                if _times((cl / cs * k, m), S) == L:
                    normal.ratios[key] = (cl / cs * k, m)
                    break
    return normal.ratios[key]


def _same_ratio(normal: Normal, na, da, nb, db):
    """A/L against B/S when L = mu·S for one term mu (a tiled softmax's sum is the plain one's
    times e^(−m)): equal exactly when A = mu·B. None when no such mu (cross-multiply instead)."""
    if len(da) != 1 or len(db) != 1 or set(da.values()) != {1} or set(db.values()) != {1}:
        return None
    mu = _ratio(normal, next(iter(da)), next(iter(db)))
    return None if mu is None else _times(mu, nb) == na


def equal(a, b, normal: Normal | None = None) -> bool:
    """True when a = b is proved by the normal forms (False proves nothing)."""
    normal = normal or Normal()
    try:
        (na, da), (nb, db) = normal(a), normal(b)
        quick = _same_ratio(normal, na, da, nb, db)
        if quick is not None:
            return quick
        common = {k: min(da.get(k, 0), db.get(k, 0)) for k in da}
        da = {k: v - common.get(k, 0) for k, v in da.items() if v > common.get(k, 0)}
        db = {k: v - common.get(k, 0) for k, v in db.items() if v > common.get(k, 0)}
        return _mul(na, normal.expand(db)) == _mul(nb, normal.expand(da))
    except NotProved:
        return False
