"""Exact real numbers that stay small and fast: rationals, or nodes of a shared graph.

Why not plain SymPy: the block's exact output is a small graph of shared subexpressions but a huge
tree; SymPy and `evalf` walk the tree. Here

* a rational is a FLINT `fmpq` (the fast path: most worksheet numbers never leave it);
* anything else is a `Real` node that *refers* to the values it was made from (`sum` of products, `inv`,
  `sqrt`, `exp`, `erf`, `tanh`), so an entry of `ffn.out` costs one node, not a copy of everything upstream;
* every node carries a certified enclosure (an Arb ball) computed once at construction and
  refined on demand at higher precision, memoised per node, so decimals are certified and signs
  (ReLU, σ > 0) are decided rigorously, at cost linear in the graph;
* a closed form is written on request, only while its tree stays small (decided from the node's
  tree size before anything is built): as text straight from the graph (`text`, no SymPy), or
  as a SymPy expression for algebra (`to_sympy`); both in closed.py.

Values are immutable. Symbolic mode (SymPy Symbols in the same forward) uses plain SymPy
expressions: the functions at the bottom (`sqrt`, `exp`, `relu`, …) accept both.
"""
from __future__ import annotations

import itertools
from decimal import Decimal
from fractions import Fraction
from typing import Any, Callable, Iterable, Sequence, cast

from flint import arb, fmpq, fmpz

from symblock.engine import closed
from symblock.engine.balls import (PREC, REFINE, children, decimal_context, hi_ball, node_ball, round_ends, snap,
                                   sum_ball, with_prec)
from symblock.engine.cancel import by_serial, cancel_inverses, cancel_quotients
from symblock.errors import UndecidableError  # noqa: F401  (re-exported)

DIGITS = 30         # decimals are certified to at least this many significant digits
CLOSED_FORM_SIZE = 60  # largest expression tree shown as a closed form

_serial = itertools.count()


class Real:
    """An exact real: `q` (an fmpq) when rational, else an operation on other Reals."""
    __slots__ = ("q", "op", "args", "ball", "size", "n", "_hi", "_sym", "_inv", "__weakref__")

    def __init__(self, q: fmpq | None = None, op: str = "rat", args: tuple = (), ball: arb | None = None, size: int = 1):
        self.q, self.op, self.args, self.size = q, op, args, size
        self.n = next(_serial)  # creation order: a deterministic sort key for factors
        self._hi: dict[int, arb] | None = None  # balls at higher precision, made on demand
        self._sym: Any = None  # the SymPy form, made on demand
        self._inv: Real | None = None
        self.ball = arb(q) if q is not None else cast(arb, ball)  # else _node sets it, from the children

    # ---- construction helpers
    @staticmethod
    def rational(x: int | fmpq) -> "Real":
        return Real(q=fmpq(x) if not isinstance(x, fmpq) else x)

    @property
    def is_rational(self) -> bool:
        return self.q is not None

    # ---- arithmetic
    def __add__(self, other: object) -> Real:
        other = real(other)
        if other.q == 0:  # x + 0 is x itself (β = 0)
            return self
        if self.q is not None and other.q is not None:
            return Real(q=self.q + other.q)
        return lincomb(fmpq(0), [(fmpq(1), self), (fmpq(1), other)])

    __radd__ = __add__

    def __neg__(self) -> Real:
        return lincomb(fmpq(0), [(fmpq(-1), self)])

    def __sub__(self, other: object) -> Real:
        other = real(other)
        if other.q is not None:
            return self + Real(q=-other.q)
        return lincomb(fmpq(0), [(fmpq(1), self), (fmpq(-1), other)])

    def __rsub__(self, other: object) -> Real:
        return lincomb(fmpq(0), [(fmpq(1), real(other)), (fmpq(-1), self)])

    def __mul__(self, other: object) -> Real:
        return product(self, real(other))

    __rmul__ = __mul__

    def __truediv__(self, other: object) -> Real:
        return product(self, inv(real(other)))

    def __rtruediv__(self, other: object) -> Real:
        return product(real(other), inv(self))

    def __pow__(self, k: int) -> Real:
        if not isinstance(k, int) or k < 0:
            return NotImplemented
        out = ONE
        for _ in range(k):
            out = out * self
        return out

    # ---- numerics
    def enclosure(self, prec: int = PREC) -> arb:
        """A certified ball around the value, computed at `prec` bits (memoised)."""
        if self.q is not None:
            return arb(self.q) if prec <= PREC else with_prec(prec, arb, self.q)
        if prec <= PREC or self.op == "neginf":
            return self.ball
        b = self._hi.get(prec) if self._hi is not None else None
        return b if b is not None else with_prec(prec, hi_ball, self, prec)

    def _refine(self, good: Callable[[arb], bool]) -> arb:
        for prec in (PREC, *REFINE):
            b = self.enclosure(prec)
            if good(b):
                return b
        raise UndecidableError(f"could not certify a value ≈ {b.mid().str(10, radius=False)} at {prec} bits")

    def sign(self) -> int:
        """-1, 0 or 1, certified. Zero is decided exactly for rationals and short closed forms."""
        if self.q is not None:
            return (self.q > 0) - (self.q < 0)
        try:
            b = self._refine(lambda b: not b.contains(0))
        except UndecidableError:
            expr = self.to_sympy()
            if expr is not None and expr.equals(0):
                return 0
            raise
        return 1 if b > 0 else -1

    def __float__(self) -> float:
        """Correctly rounded to the nearest double (both ends of the ball round alike)."""
        if self.q is not None:
            try:
                return int(self.q.p) / int(self.q.q)
            except OverflowError:  # beyond a double, as float arithmetic would have it
                return float("inf") if self.q > 0 else float("-inf")
        if self is NEG_INF:
            return float("-inf")
        b = self._refine(lambda b: b.is_finite() and float(b.lower()) == float(b.upper()))
        return float(b.lower()) + 0.0  # no -0.0 for a value that is (or rounds to) zero

    def decimal(self, places: int) -> Decimal:
        """The value rounded half away from zero to `places` decimals, certified."""
        if self.q is not None:  # exact: half away from zero, decided on the fraction
            p, q = int(self.q.p), int(self.q.q)
            n = (2 * abs(p) * 10**places + q) // (2 * q)  # ⌊|p/q|·10^places + ½⌋
            return Decimal(n if p >= 0 else -n).scaleb(-places, decimal_context(n.bit_length() // 3 + 1, places))

        ends: list = []   # the last ball's rounded ends (the accepted ball's: not rounded again)

        def rounded(b: arb) -> bool:
            ends[:] = round_ends(b, places)
            return ends[0] == ends[1]

        self._refine(lambda b: b.is_finite() and rounded(b))
        return ends[0]

    def digits(self, n: int = DIGITS) -> str:
        """At least `n` certified significant digits, as text."""
        if self.q is not None and self.q == 0:
            return "0"
        b = self._refine(lambda b: b.rel_accuracy_bits() >= int(n * 3.33) + 4)
        return b.str(n, radius=False)

    # ---- closed forms
    def to_sympy(self, max_size: int = CLOSED_FORM_SIZE) -> Any:
        """The closed form as a SymPy expression, or None when its tree is larger than max_size."""
        if self.size > max_size:
            return None
        if self._sym is None:
            self._sym = closed.sympy_form(self, lambda f: f.to_sympy(10**9))
        return self._sym

    def short(self) -> str:
        t = text(self)
        return t if t is not None else f"≈{self.digits(12)}"

    def __repr__(self) -> str:
        return f"Real({self.short()})"


def node(op: str, args: tuple, size: int, known: fmpq | None = None) -> Real:
    """A new graph node with its certified ball (a rational when the ball pins one down); other
    engine modules (powers.py) build their nodes with it too. `known`: its value, when proved
    rational by algebra (balls.snap)."""
    r = Real(op=op, args=args, size=min(size, 10**9))
    r.ball = sum_ball(args) if op == "sum" else node_ball(r, [a.ball for a in children(r)])
    q = snap(r, known)
    return r if q is None else Real(q=q)


# ---------------------------------------------------------------- building blocks

FLATTEN = 4  # a sum with at most this many terms is merged into sums built on it
SMALL = {n: Real(q=fmpq(n)) for n in range(-16, 17)}  # one Real each: weights are mostly these


def real(x: object) -> Real:
    """Coerce an int, Fraction, fmpq or Real (or a SymPy number) to a Real; an integer in −16..16
    is a shared one (values are immutable; a model's 123,000 weights in −2..2 took 27 MB apart)."""
    if isinstance(x, Real):
        return x
    if type(x) is int or isinstance(x, Fraction) and x.denominator == 1:
        shared = SMALL.get(int(x))
        if shared is not None:
            return shared
    if isinstance(x, (int, fmpq, fmpz)):
        return Real(q=fmpq(x))
    if isinstance(x, Fraction):
        return Real(q=fmpq(x.numerator, x.denominator))
    return from_sympy(x)


def lincomb(c0: fmpq, terms: Iterable[tuple[fmpq, Real]]) -> Real:
    """c0 + Σ c·x, merging rationals and small sums so like terms cancel exactly."""
    return sum_of_products(c0, ((c, (x,)) for c, x in terms))


def sum_of_products(c0: fmpq, terms: Iterable[tuple[fmpq, tuple[Real, ...]]], known: fmpq | None = None) -> Real:
    """c0 + Σ c·Π factors: the one node type behind +, −, ·, dot products and matmul (`known`:
    its value when proved rational, see `node`)."""
    acc: dict[tuple, fmpq] = {}
    for c, fs in terms:
        if c == 0:
            continue
        irr = []
        for f in fs:
            if f.q is not None:
                c = c * f.q
            else:
                irr.append(f)
        if c == 0:
            continue
        if len(irr) > 1:
            irr = cancel_inverses(irr)
        if not irr:
            c0 += c
            continue
        if len(irr) == 1:  # the common case (a weight times a value): no sort to key it
            f = irr[0]
            if f.op == "sum" and len(f.args[1]) <= FLATTEN:
                inner = f.args
                c0 += c * inner[0]
                for ci, fi in inner[1]:
                    acc[fi] = acc.get(fi, 0) + c * ci
                continue
            key: tuple[Real, ...] = (f,)
        else:
            key = tuple(sorted(irr, key=by_serial))
        acc[key] = acc.get(key, 0) + c
    return close_sum(acc, c0, known)


def close_sum(acc: dict[tuple, fmpq], c0: fmpq, known: fmpq | None = None) -> Real:
    """The node (or rational) of c0 + Σ c·Π key, from the terms as sum_of_products gathered them,
    in order of first appearance (zero coefficients still listed: the cancellations see them);
    engine/matmul.py gathers a matrix product's terms in bulk and closes each entry here."""
    if len(acc) > 1:
        c0 = cancel_quotients(acc, c0)
    kept = tuple([(c if type(c) is fmpq else fmpq(c), k) for k, c in acc.items() if c])
    if not kept:
        return Real(q=fmpq(c0))
    if c0 == 0 and len(kept) == 1 and kept[0][0] == 1 and len(kept[0][1]) == 1:
        return kept[0][1][0]
    size = 1 + len(kept) + sum([f.size for _, fs in kept for f in fs])
    return node("sum", (fmpq(c0), kept), size, known)


def product(a: Real, b: Real) -> Real:
    if a.q == 1 or b.q == 1:  # x · 1 is x itself (a LayerNorm's γ = 1)
        return a if b.q == 1 else b
    if a.q is not None and b.q is not None:
        return Real(q=a.q * b.q)
    return sum_of_products(fmpq(0), [(fmpq(1), (a, b))])


def dot(xs: Sequence[Any], ys: Sequence[Any], known: fmpq | None = None) -> Any:
    """Σ x_i y_i as one node (or one rational): the matmul kernel (`known`: see `node`)."""
    if isinstance(xs[0], Real) or isinstance(ys[0], Real):
        xs, ys = [real(x) for x in xs], [real(y) for y in ys]
        if all(x.q is not None for x in xs) and all(y.q is not None for y in ys):
            acc = fmpq(0)
            for x, y in zip(xs, ys):
                acc += x.q * y.q
            return Real(q=acc)
        return sum_of_products(fmpq(0), ((fmpq(1), (x, y)) for x, y in zip(xs, ys)), known)
    import sympy
    return sympy.Add(*[x * y for x, y in zip(xs, ys)])


def inv(x: Real) -> Real:
    if x.q is not None:
        if x.q == 0:
            raise ZeroDivisionError("division by zero")
        return Real(q=1 / x.q)
    if x.op == "inv":
        return x.args[0]
    if x._inv is None:  # one inverse per node, so x/σ and y/σ share 1/σ and like terms merge
        if x.sign() == 0:
            raise ZeroDivisionError("division by an exact zero")
        x._inv = node("inv", (x,), x.size + 2)
    return x._inv


def _is_square(q: fmpq) -> bool:
    return q >= 0 and fmpz(q.p).is_square() and fmpz(q.q).is_square()


def _sqrt(x: Real) -> Real:
    if x.q is not None:
        if x.q < 0:
            raise ValueError(f"square root of a negative number {x.q}")
        if _is_square(x.q):
            return Real(q=fmpq(fmpz(x.q.p).isqrt(), fmpz(x.q.q).isqrt()))
    elif x.sign() < 0:
        raise ValueError("square root of a negative number")
    return node("sqrt", (x,), x.size + 2)


def _unary(op: str, x: Real, at_zero: int) -> Real:
    if x.q is not None and x.q == 0:
        return Real(q=fmpq(at_zero))
    return node(op, (x,), x.size + 1)


# ---------------------------------------------------------------- SymPy bridge

def from_sympy(e: Any) -> Real:
    """An exact SymPy number (Rational, rational powers, sqrt, exp, E, pi, erf, tanh, + − · /) as a
    Real; a Real, an int or a Fraction (a spec's entries, engine/matrix.ExactMatrix) without importing SymPy."""
    if isinstance(e, (Real, int, Fraction, fmpq)):
        return real(e)
    import sympy
    e = sympy.sympify(e)
    if e.is_Rational:
        return Real(q=fmpq(int(e.p), int(e.q)))
    if e == -sympy.oo:
        return NEG_INF
    if e is sympy.E:
        return exp(ONE)
    if e is sympy.pi:
        return node("const", ("pi",), 1)
    if e.is_Add:
        out = ZERO
        for a in e.args:
            out = out + from_sympy(a)
        return out
    if e.is_Mul:
        out = ONE
        for a in e.args:
            out = out * from_sympy(a)
        return out
    if e.is_Pow:
        base, ex = from_sympy(e.base), e.exp
        if ex.is_Integer:
            return inv(base ** abs(int(ex))) if ex < 0 else base ** int(ex)
        if ex.is_Rational and ex.q == 2:
            root = _sqrt(base) ** abs(int(ex.p))
            return inv(root) if ex < 0 else root
        if ex.is_Rational and base.q is not None and base.q > 0:   # 10**(1/4): Arb's certified root (powers.py)
            return node("pow", (base, fmpq(int(ex.p), int(ex.q))), 3)
        if e.base is sympy.E:
            return exp(from_sympy(ex))
    if isinstance(e, sympy.exp):
        return exp(from_sympy(e.args[0]))
    if isinstance(e, sympy.erf):
        return erf(from_sympy(e.args[0]))
    if isinstance(e, sympy.tanh):
        return tanh(from_sympy(e.args[0]))
    if isinstance(e, (sympy.sin, sympy.cos)):
        return (sin if isinstance(e, sympy.sin) else cos)(from_sympy(e.args[0]))
    raise ValueError(f"cannot represent {e} exactly (supported: rationals, + − · /, integer and half-integer "
                     "powers, rational powers of positive rationals, sqrt, exp, erf, tanh, sin, cos, E, pi)")


ZERO, ONE = SMALL[0], SMALL[1]
NEG_INF = Real(op="neginf", ball=arb.neg_inf() if hasattr(arb, "neg_inf") else arb("-inf"))


# ---------------------------------------------------------------- scalar functions (both modes)

def _sym(x: object) -> bool:
    return not isinstance(x, (Real, int, fmpq))


def sqrt(x: Any) -> Any:
    if _sym(x):
        import sympy
        return sympy.sqrt(x)
    return _sqrt(real(x))


def _elementary(op: str, at_zero: int) -> Callable[[Any], Any]:
    """exp, erf, tanh: a graph node for a Real (exact at 0), the SymPy function for a symbol."""
    def f(x: Any) -> Any:
        if _sym(x):
            import sympy
            return getattr(sympy, op)(x)
        return _unary(op, real(x), at_zero)
    f.__name__ = f.__qualname__ = op
    return f


exp, erf, tanh = _elementary("exp", 1), _elementary("erf", 0), _elementary("tanh", 0)
sin, cos = _elementary("sin", 0), _elementary("cos", 1)  # sinusoidal positions, RoPE angles, entries


def relu(x: Any) -> Any:
    if _sym(x):
        import sympy
        return sympy.Max(0, x)
    x = real(x)
    return x if x.sign() > 0 else ZERO


def sign(x: Any) -> int:
    """Certified sign of an exact value (raises for a symbolic one)."""
    return real(x).sign()


def total(xs: Sequence[Any]) -> Any:
    """Σ x as one node (exact) or one SymPy Add (symbolic)."""
    if xs and not isinstance(xs[0], Real):
        import sympy
        return sympy.Add(*xs)
    return lincomb(fmpq(0), [(fmpq(1), real(x)) for x in xs])


def like(x: Any, v: Any) -> Any:
    """The constant v (a SymPy number) in x's number type."""
    return v if _sym(x) else from_sympy(v)


is_symbolic = _sym


def text(x: Any, max_size: int = CLOSED_FORM_SIZE, memo: dict | None = None) -> str | None:
    """Closed form of any entry as text that `sympy.sympify` parses back, written from the graph
    without SymPy, or None when its tree is over max_size; `memo` writes shared nodes once."""
    if not isinstance(x, Real):
        return str(x)  # a SymPy expression (symbolic mode)
    return None if x.size > max_size else closed.text(x, memo)


def to_sympy(x: Any, max_size: int = CLOSED_FORM_SIZE) -> Any:
    """Closed form of any entry (Real or SymPy), or None when too large to show."""
    return x.to_sympy(max_size) if isinstance(x, Real) else x
