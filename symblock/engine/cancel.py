"""Exact cancellations inside one sum of products (exact.sum_of_products), decided on the
structure of the nodes, before any number is looked at: x·(1/x) = 1 within a product, and
k·X·(1/X) = k across terms. Below exact.py like balls.py: it reads a node's `op`, `args` and
serial `n`, and never builds one.
"""
from __future__ import annotations

from flint import fmpq

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
