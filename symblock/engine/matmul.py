"""A @ B for exact matrices with B rational (a projection: activations times weights), made in
bulk yet entry for entry the node `exact.dot` makes: the same terms in the same order, so the
same balls, closed forms and sharing.

Why: `dot` gathers each entry's terms one Python object at a time, converting and testing the
whole row and column again for every entry. Here each row of A is expanded once into the
rational parts and irrational keys that `sum_of_products` would fold it into; B's rationals are
read once. A row with a few irrational keys (a normalised row: its entries share 1/r) has its
coefficients as one FLINT rational matrix product (`fmpq_mat`, in C); a row of distinct nodes (a
hidden row: each entry 1 · its own key) takes B's columns as its coefficients; any other row with
many keys, or with keys no two entries share, has them gathered in one tight loop per entry.
"""
from __future__ import annotations

from typing import Any, Sequence

from flint import fmpq, fmpq_mat

from symblock.engine import exact
from symblock.engine.exact import Real

FEW_KEYS = 8  # rows with at most this many distinct keys take the fmpq_mat path
_ZERO = fmpq(0)
_ONE = fmpq(1)


def matmul(a: Sequence[Sequence[Any]], b: Sequence[Sequence[Any]]) -> list[list[Real]] | None:
    """The product's rows, or None when B has an irrational or symbolic entry or A a symbolic one
    (the caller then works entry by entry with `exact.dot`)."""
    if not all(isinstance(y, Real) and y.q is not None for r in b for y in r):
        return None
    if not all(isinstance(x, Real) for r in a for x in r):
        return None
    bq = [[y.q for y in r] for r in b]
    d_out = len(bq[0]) if bq else 0
    nonzero = [[(k, r[j]) for k, r in enumerate(bq) if r[j] != 0] for j in range(d_out)]
    out: list[list[Real] | None] = [None] * len(a)
    rational = [i for i, r in enumerate(a) if all(x.q is not None for x in r)]
    if rational:
        for i, row in zip(rational, _rational_rows([[x.q for x in a[i]] for i in rational], bq)):
            out[i] = row
    for i, r in enumerate(a):
        if out[i] is None:
            out[i] = _row(r, bq, nonzero)
    return out  # type: ignore[return-value]


def _fq(rows: list[list[fmpq]], n_cols: int) -> fmpq_mat:
    return fmpq_mat(len(rows), n_cols, [e for r in rows for e in r])


def _rational_rows(aq: list[list[fmpq]], bq: list[list[fmpq]]) -> list[list[Real]]:
    """Rational rows times B: one fmpq_mat product (dot's all-rational fast path, in C)."""
    d_out = len(bq[0])
    if not bq:  # an empty inner dimension: every entry is the empty sum
        return [[Real(q=fmpq(0)) for _ in range(d_out)] for _ in aq]
    flat = (_fq(aq, len(bq)) * _fq(bq, d_out)).entries()
    return [[Real(q=flat[i * d_out + j]) for j in range(d_out)] for i in range(len(aq))]


def _expand(x: Real) -> tuple[fmpq, tuple] | None:
    """x as sum_of_products folds a factor of it: (rational part, ((coefficient, key), …)); None
    for an exact 0 (it adds nothing)."""
    if x.q is not None:
        return None if x.q == 0 else (x.q, ())
    if x.op == "sum" and len(x.args[1]) <= exact.FLATTEN:
        return x.args[0], x.args[1]
    return _ZERO, ((_ONE, (x,)),)


def _row(r: Sequence[Real], bq: list[list[fmpq]], nonzero: list[list[tuple[int, fmpq]]]) -> list[Real]:
    ex = [_expand(x) for x in r]
    keys: dict[tuple, list[int]] = {}  # each key's k's, in order of first appearance
    for k, e in enumerate(ex):
        if e is not None:
            for _, key in e[1]:
                keys.setdefault(key, []).append(k)
    if len(keys) <= FEW_KEYS and shares_keys(keys):
        return _few_keys(ex, keys, bq)
    units = _units(ex, keys)
    if units is not None:  # Σ_k b_kj · x_k over distinct nodes: the coefficients are B's column
        return [exact.close_sum({units[k]: b for k, b in nz}, _ZERO) for nz in nonzero]
    return [_gather(ex, nz) for nz in nonzero]


def _units(ex: list, keys: dict[tuple, list[int]]) -> list[tuple] | None:
    """Each entry's one key when every entry is 1 · a key of its own (a hidden row of nodes), so
    that `_gather` would only copy B's column: the terms, their order and coefficients alike."""
    if len(keys) != len(ex) or any(e is None or e[0] != 0 or len(e[1]) != 1 or e[1][0][0] != 1 for e in ex):
        return None
    return [e[1][0][1] for e in ex]


def shares_keys(keys: dict[tuple, list[int]]) -> bool:
    """Whether some key is reached by two of the row's entries (a normalised row's 1/r): only then
    does one fmpq_mat product save work. A row whose entries are each their own node (a query row
    against rational keys: cross-attention's scores) has nothing to combine, and gathering it
    entry by entry, the same terms in the same order, is about a third faster."""
    return any(len(ks) > 1 for ks in keys.values())


def _gather(ex: list, nz: list[tuple[int, fmpq]]) -> Real:
    """One entry Σ_k a_k b_k, its terms gathered as sum_of_products gathers them."""
    c0 = _ZERO
    acc: dict[tuple, fmpq] = {}
    get = acc.get
    for k, b in nz:
        e = ex[k]
        if e is None:
            continue
        x0, terms = e
        c0 += b * x0
        for ci, key in terms:
            acc[key] = get(key, 0) + b * ci
    return exact.close_sum(acc, c0)


def _few_keys(ex: list, keys: dict[tuple, list[int]], bq: list[list[fmpq]]) -> list[Real]:
    """A row whose terms share a few keys: every coefficient at once as one fmpq_mat product
    (the rational parts, then one row per key); each entry lists the keys in the order of
    their first k with b_kj != 0 (its first term), skipping keys no term reaches."""
    d_in, d_out = len(bq), len(bq[0])
    order = list(keys)
    index = {key: n for n, key in enumerate(order)}
    lhs = [[_ZERO] * d_in for _ in range(1 + len(order))]
    pos: dict[tuple[int, tuple], int] = {}  # (k, key) -> the key's place among x_k's terms
    for k, e in enumerate(ex):
        if e is not None:
            lhs[0][k] = e[0]
            for p, (ci, key) in enumerate(e[1]):
                lhs[1 + index[key]][k] = ci
                pos[k, key] = p
    flat = (_fq(lhs, d_in) * _fq(bq, d_out)).entries()
    out = []
    for j in range(d_out):
        firsts = []
        for n, key in enumerate(order):
            first = next((k for k in keys[key] if bq[k][j] != 0), None)
            if first is not None:
                firsts.append(((first, pos[first, key]), key, flat[(1 + n) * d_out + j]))
        firsts.sort(key=lambda f: f[0])
        out.append(exact.close_sum({key: c for _, key, c in firsts}, flat[j]))
    return out
