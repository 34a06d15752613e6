"""Closed forms of exact values, read off the graph of `exact.Node` nodes.

Two readers of one node graph (a node has `q` when rational, else `op` and `args`; see exact.py):

* `text` writes the form directly from the graph, as text that `sympy.sympify` parses back to
  the same value: what `forward --json` and the tables print. No SymPy import, one pass over
  the tree (shared nodes written once per call with a memo), so a command that prints thousands
  of entries answers at once. The caller decides from the node's tree size whether it is short.
* `sympy_form` builds the SymPy expression, for algebra (zero tests, derivations, LaTeX).

This module imports nothing from the engine: it only reads nodes.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from flint import fmpq, fmpz

from symblock.engine.node import N, Node

FACTOR_LIMIT = 10**18  # surds sqrt(n) are reduced (square factors taken out) for n below this

Monomial = tuple[int, tuple[str, ...], tuple[str, ...]]  # (m, num, den): √m · Π num / Π den
Form = tuple[fmpq, dict[Monomial, fmpq]]                   # (c0, {monomial: c}): c0 + Σ c · monomial


# ---------------------------------------------------------------- text without SymPy
#
# Each node is read as a sum of monomials c · √m · Π num / Π den (m a whole number without square
# factors, num/den the text of factors that do not open up: exp(…), (a + b), …): products of
# monomials multiply out, like terms merge, 1/monomial inverts, so that a product of surds that
# is rational prints as that rational, as SymPy's own canonical form would.

def text(node: Node, memo: dict | None = None) -> str:
    """`node`'s closed form as SymPy-parsable text (`2*sqrt(5)/5`, `1/(exp(-2) + 1)`)."""
    return _format(*_canon(node, {} if memo is None else memo))


def _canon(r: Node, memo: dict[int, Form]) -> Form:
    """(c0, {(m, num, den): c}) for node r, memoised by node."""
    got = memo.get(id(r))
    if got is None:
        got = memo[id(r)] = _read(r, memo)
    return got


def _read(r: Node, memo: dict[int, Form]) -> Form:
    if r.q is not None:
        return fmpq(r.q), {}
    if r.op == "neginf":
        return fmpq(0), {(1, ("-oo",), ()): fmpq(1)}
    if r.op == "sum":
        c0, terms = r.args
        c0 = fmpq(c0)
        out: dict[Monomial, fmpq] = {}
        for c, fs in terms:
            k0, parts = _product([_canon(f, memo) for f in fs])
            c0 += c * k0
            for key, k in parts.items():
                out[key] = out.get(key, 0) + c * k
        return c0, {key: k for key, k in out.items() if k != 0}
    if r.op == "inv":
        x = _canon(r.args[0], memo)
        if _is_monomial(x):
            return _inverse(x)
        return fmpq(0), {(1, (), (_wrap(_format(*x)),)): fmpq(1)}
    if r.op == "sqrt" and r.args[0].q is not None:
        k, m = _surd(r.args[0].q)
        return (k, {}) if m == 1 else (fmpq(0), {(int(m), (), ()): k})
    return _opaque(r, memo)


def _opaque(r: Node, memo: dict[int, Form]) -> Form:
    """A factor that stays whole: a function call, π, −∞, or the root of a non-rational."""
    if r.op == "neginf":
        f = "(-oo)"
    elif r.op == "const":
        f = "pi"
    elif r.op == "pow":
        b = _rational(r.args[0].q)
        f = f"({b if r.args[0].q.q == 1 else f'({b})'}**({_rational(r.args[1])}))"
    else:
        arg = _unwrap(text(r.args[0], memo))
        f = "E" if r.op == "exp" and arg == "1" else f"{r.op}({arg})"
    return fmpq(0), {(1, (f,), ()): fmpq(1)}


def _unwrap(t: str) -> str:
    """`(10**(-4/3))` as a call's argument: `sin(10**(-4/3))`, not `sin((10**(-4/3)))`."""
    if not (t.startswith("(") and t.endswith(")")):
        return t
    depth = 0
    for i, ch in enumerate(t):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and i < len(t) - 1:
            return t   # (a)*(b): the first parenthesis closes before the end
    return t[1:-1]


def _is_monomial(x: Form) -> bool:
    c0, terms = x
    return (len(terms) == 1 and c0 == 0) or (not terms and c0 != 0)


def _product(factors: list[Form]) -> Form:
    """Π factors (each (c0, terms)): monomials multiply out, a sum stays a parenthesised factor."""
    k, m = fmpq(1), fmpz(1)
    num: list[str] = []
    den: list[str] = []
    for x in factors:
        if not _is_monomial(x):
            if x[0] == 0 and not x[1]:  # the form of 0
                return fmpq(0), {}
            num.append(_wrap(_format(*x)))
            continue
        c0, terms = x
        if not terms:
            k *= c0
            continue
        ((mi, ni, di), ki), = terms.items()
        k, m = k * ki, m * mi
        num += ni
        den += di
    s, m = _surd(fmpq(m))
    k *= s
    if m == 1 and not num and not den:
        return k, {}
    return fmpq(0), {(int(m), tuple(sorted(num)), tuple(sorted(den))): k}


def _inverse(x: Form) -> Form:
    c0, terms = x
    if not terms:
        return 1 / c0, {}
    ((m, num, den), k), = terms.items()
    return fmpq(0), {(m, tuple(den), tuple(num)): 1 / (k * m)}  # 1/(k√m) = √m/(k m)


def _wrap(s: str) -> str:
    return s if _bare(s, " +-/") else f"({s})"


def _format(c0: fmpq, terms: dict[Monomial, fmpq]) -> str:
    parts = [_term(k, *key) for key, k in terms.items()]
    parts += [_rational(c0)] if c0 != 0 or not parts else []
    out = parts[0]
    for p in parts[1:]:
        out += f" - {p[1:]}" if p.startswith("-") else f" + {p}"
    return out


def _rational(q: fmpq) -> str:
    return str(q.p) if q.q == 1 else f"{q.p}/{q.q}"


def _term(c: fmpq, radicand: int, num: Sequence[str], den: Sequence[str]) -> str:
    num = ([f"sqrt({radicand})"] if radicand != 1 else []) + list(num)
    p, q = abs(int(c.p)), int(c.q)
    top = "*".join(([str(p)] if p != 1 or not num else []) + _powers(num))
    bottom = ([str(q)] if q != 1 else []) + _powers(list(den))
    if len(bottom) > 1 or (bottom and not _bare(bottom[0], " +-*/")):
        top += f"/({'*'.join(bottom)})"
    elif bottom:
        top += f"/{bottom[0]}"
    return ("-" if c < 0 else "") + top


def _powers(factors: list[str]) -> list[str]:
    """Equal neighbours (factors come sorted) as one power: x*x -> x**2."""
    out, last, n = [], None, 0
    for f in factors + [None]:
        if f == last:
            n += 1
            continue
        if last is not None:
            out.append(last if n == 1 else f"{last}**{n}")
        last, n = f, 1
    return out


def _bare(s: str, ops: str) -> bool:
    """No character of `ops` outside parentheses: `s` binds as one factor."""
    depth = 0
    for ch in s:
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch in ops:
            return False
    return True


def _surd(q: fmpq) -> tuple[fmpq, fmpz]:
    """(k, m) with √q = k·√m, m a whole number without square factors when it is small enough
    to factor (q ≥ 0): √(a/b) = √(ab)/b, then square factors of ab come out."""
    a, b = fmpz(q.p), fmpz(q.q)
    n = a * b
    k = fmpz(1)
    if n == 0:
        return fmpq(0), fmpz(1)
    if n < FACTOR_LIMIT:
        m = fmpz(1)
        for prime, e in n.factor():
            k *= prime ** (e // 2)
            m *= prime ** (e % 2)
        n = m
    return fmpq(k, b), n


# ---------------------------------------------------------------- SymPy expressions

def sympy_form(r: N, child: Callable[[N], Any]) -> Any:
    """`r` as a SymPy expression; `child(node)` gives the form of an argument (memoised by the
    caller). Built with SymPy's own constructors: no `evalf`, no parsing."""
    import sympy
    if r.q is not None:
        return sympy.Rational(int(r.q.p), int(r.q.q))
    op = r.op
    if op == "neginf":
        return -sympy.oo
    if op == "sum":
        c0, terms = r.args
        parts = [sympy.Rational(int(c0.p), int(c0.q))]
        for c, fs in terms:
            parts.append(sympy.Rational(int(c.p), int(c.q)) * sympy.Mul(*[child(f) for f in fs]))
        return sympy.Add(*parts)
    if op == "const":
        return sympy.pi
    if op == "pow":
        e = r.args[1]
        return sympy.Pow(child(r.args[0]), sympy.Rational(int(e.p), int(e.q)))
    (x,) = r.args
    x = child(x)
    return {"inv": lambda: 1 / x, "sqrt": lambda: sympy.sqrt(x), "exp": lambda: sympy.exp(x),
            "erf": lambda: sympy.erf(x), "tanh": lambda: sympy.tanh(x), "sin": lambda: sympy.sin(x),
            "cos": lambda: sympy.cos(x)}[op]()
