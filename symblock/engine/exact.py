"""Exact real numbers that stay small and fast: rationals, or nodes of a shared graph.

Why not plain SymPy: the block's exact output is a small graph of shared subexpressions but a huge
tree (DESIGN.md, Performance notes); SymPy and `evalf` walk the tree. Here

* a rational is a FLINT `fmpq` (the fast path: most worksheet numbers never leave it);
* anything else is a `Real` node that *refers* to the values it was made from (`sum` of products,
  `inv`, `sqrt`, `exp`, `erf`, `tanh`), so an entry of `ffn.out` costs one node, not a copy of
  everything upstream;
* every node carries a certified enclosure (an Arb ball) computed once at construction and
  refined on demand at higher precision, memoised per node, so decimals are certified and signs
  (ReLU, σ > 0) are decided rigorously, at cost linear in the graph;
* a closed SymPy form is built on request, only while its tree stays small (`to_sympy`).

Values are immutable. Symbolic mode (SymPy Symbols in the same forward) uses plain SymPy
expressions: the functions at the bottom (`sqrt`, `exp`, `relu`, …) accept both.
"""
from __future__ import annotations

import itertools
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Iterable, Sequence

from flint import arb, ctx, fmpq, fmpz

from symblock.errors import UndecidableError  # noqa: F401  (re-exported)

PREC = 128          # bits carried at construction (~38 digits)
MAX_PREC = 1 << 14  # refinement gives up here (~4900 digits)
DIGITS = 30         # decimals are certified to at least this many significant digits
CLOSED_FORM_SIZE = 60  # largest expression tree shown as a closed form

_serial = itertools.count()
ctx.prec = PREC  # construction-time balls; refinement raises it locally and restores it


def _with_prec(prec: int, fn, *a):
    old = ctx.prec
    ctx.prec = prec
    try:
        return fn(*a)
    finally:
        ctx.prec = old


class Real:
    """An exact real: `q` (an fmpq) when rational, else an operation on other Reals."""
    __slots__ = ("q", "op", "args", "ball", "size", "n", "_hi", "_sym", "_inv", "__weakref__")

    def __init__(self, q=None, op="rat", args=(), ball=None, size=1):
        self.q, self.op, self.args, self.size = q, op, args, size
        self.n = next(_serial)  # creation order: a deterministic sort key for factors
        self._hi: dict[int, arb] = {}
        self._sym = self._inv = None
        self.ball = arb(q) if q is not None else ball

    # ---- construction helpers
    @staticmethod
    def rational(x) -> "Real":
        return Real(q=fmpq(x) if not isinstance(x, fmpq) else x)

    @property
    def is_rational(self) -> bool:
        return self.q is not None

    # ---- arithmetic
    def __add__(self, other):
        return lincomb(fmpq(0), [(fmpq(1), self), (fmpq(1), real(other))])

    __radd__ = __add__

    def __neg__(self):
        return lincomb(fmpq(0), [(fmpq(-1), self)])

    def __sub__(self, other):
        return lincomb(fmpq(0), [(fmpq(1), self), (fmpq(-1), real(other))])

    def __rsub__(self, other):
        return lincomb(fmpq(0), [(fmpq(1), real(other)), (fmpq(-1), self)])

    def __mul__(self, other):
        return product(self, real(other))

    __rmul__ = __mul__

    def __truediv__(self, other):
        return product(self, inv(real(other)))

    def __rtruediv__(self, other):
        return product(real(other), inv(self))

    def __pow__(self, k: int):
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
            return arb(self.q) if prec <= PREC else _with_prec(prec, arb, self.q)
        if prec <= PREC:
            return self.ball
        b = self._hi.get(prec)
        if b is None:
            args = [a.enclosure(prec) if isinstance(a, Real) else a for a in _children(self)]
            b = self._hi[prec] = _with_prec(prec, _eval, self, args)
        return b

    def _refine(self, good) -> arb:
        prec = PREC
        while True:
            b = self.enclosure(prec)
            if good(b):
                return b
            if prec >= MAX_PREC:
                raise UndecidableError(f"could not certify a value ≈ {b.mid().str(10, radius=False)} "
                                       f"at {prec} bits")
            prec *= 4

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
            return int(self.q.p) / int(self.q.q)
        if self is NEG_INF:
            return float("-inf")
        b = self._refine(lambda b: b.is_finite() and float(b.lower()) == float(b.upper()))
        return float(b.lower()) + 0.0  # no -0.0 for a value that is (or rounds to) zero

    def decimal(self, places: int) -> Decimal:
        """The value rounded half away from zero to `places` decimals, certified."""
        q = Decimal(1).scaleb(-places)
        if self.q is not None:  # exact: half away from zero, decided on the fraction
            s = Fraction(int(self.q.p), int(self.q.q)) * 10**places
            n = int(abs(s) + Fraction(1, 2))
            return Decimal(n if s >= 0 else -n).scaleb(-places).quantize(q)

        def rounded(b):
            return _round(b.lower(), places, q) == _round(b.upper(), places, q)

        b = self._refine(lambda b: b.is_finite() and rounded(b))
        return _round(b.lower(), places, q)

    def digits(self, n: int = DIGITS) -> str:
        """At least `n` certified significant digits, as text."""
        if self.q is not None and self.q == 0:
            return "0"
        b = self._refine(lambda b: b.rel_accuracy_bits() >= int(n * 3.33) + 4)
        return b.str(n, radius=False)

    # ---- closed forms
    def to_sympy(self, max_size: int = CLOSED_FORM_SIZE):
        """The closed form as a SymPy expression, or None when its tree is larger than max_size."""
        if self.size > max_size:
            return None
        if self._sym is None:
            self._sym = _to_sympy(self)
        return self._sym

    def short(self) -> str:
        e = self.to_sympy()
        return str(e) if e is not None else f"≈{self.digits(12)}"

    def __repr__(self) -> str:
        return f"Real({self.short()})"


def _round(x: arb, places: int, q: Decimal) -> Decimal:
    text = x.mid().str(places + 40, radius=False)
    return Decimal(text.replace("e", "E")).quantize(q, rounding=ROUND_HALF_UP)


def _children(r: Real):
    if r.op == "sum":
        return [f for _, fs in r.args[1] for f in fs]
    return [] if r.op in ("const", "neginf") else list(r.args)


def _eval(r: Real, child_balls: list) -> arb:
    """One node's ball from its children's balls (at the current ctx.prec)."""
    op = r.op
    if op == "sum":
        it = iter(child_balls)
        acc = arb(r.args[0])
        for c, fs in r.args[1]:
            t = next(it)
            for _ in fs[1:]:
                t = t * next(it)
            acc += t * c if c != 1 else t
        return acc
    if op == "const":
        return arb.pi()
    (x,) = child_balls
    if op == "inv":
        return 1 / x
    if op == "sqrt":
        return x.sqrt()
    if op == "exp":
        return x.exp()
    if op == "erf":
        return x.erf()
    if op == "tanh":
        return x.tanh()
    if op == "sin":
        return x.sin()
    if op == "cos":
        return x.cos()
    raise AssertionError(op)


SNAP_DENOMINATOR = 10**4  # rationals this simple are recognised when a node equals one
SNAP_PREC = (512, 2048, MAX_PREC)


def _node(op: str, args: tuple, size: int) -> Real:
    r = Real(op=op, args=args, size=min(size, 10**9))
    r.ball = _eval(r, [a.ball for a in _children(r)])
    return _snap(r)


def _snap(r: Real) -> Real:
    """Recognise a node that equals a simple rational (an exact 0 from LayerNorm outputs summing
    to zero, ±1 from a 2-d LayerNorm row, a softmax-weighted constant): the node is replaced by
    the rational when they agree at every precision up to MAX_PREC bits (~4900 digits).

    This is the one place where exactness rests on numerics rather than algebra: a value within
    2^-16384 of a small-denominator rational is taken to be it. Values of this engine's
    expressions (small integers through +, ·, /, √, exp, erf, tanh) do not come that close
    without being equal in any case we know of; short closed forms are confirmed by SymPy."""
    b = r.ball
    if not b.is_finite() or b.rad() > 1e-20 * (1 + abs(float(b.mid()))):
        return r
    mid = float(b.mid())
    if abs(mid) > 1e15:
        return r
    c = Fraction(mid).limit_denominator(SNAP_DENOMINATOR)
    q = fmpq(c.numerator, c.denominator)
    if not (b - q).contains(0):
        return r
    for prec in SNAP_PREC:
        if not (r.enclosure(prec) - q).contains(0):
            return r
    return Real(q=q)


# ---------------------------------------------------------------- building blocks

FLATTEN = 4  # a sum with at most this many terms is merged into sums built on it


def real(x) -> Real:
    """Coerce an int, Fraction, fmpq or Real (or a SymPy number) to a Real."""
    if isinstance(x, Real):
        return x
    if isinstance(x, (int, fmpq, fmpz)):
        return Real(q=fmpq(x))
    if isinstance(x, Fraction):
        return Real(q=fmpq(x.numerator, x.denominator))
    return from_sympy(x)


def lincomb(c0: fmpq, terms: Iterable[tuple[fmpq, Real]]) -> Real:
    """c0 + Σ c·x, merging rationals and small sums so like terms cancel exactly."""
    return sum_of_products(c0, ((c, (x,)) for c, x in terms))


def sum_of_products(c0: fmpq, terms: Iterable[tuple[fmpq, tuple[Real, ...]]]) -> Real:
    """c0 + Σ c·Π factors: the one node type behind +, −, ·, dot products and matmul."""
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
            irr = _cancel_inverses(irr)
        if not irr:
            c0 += c
            continue
        if len(irr) == 1 and irr[0].op == "sum" and len(irr[0].args[1]) <= FLATTEN:
            inner = irr[0].args
            c0 += c * inner[0]
            for ci, fi in inner[1]:
                acc[fi] = acc.get(fi, 0) + c * ci
            continue
        key = tuple(sorted(irr, key=lambda f: f.n))
        acc[key] = acc.get(key, 0) + c
    kept = tuple((fmpq(c), k) for k, c in acc.items() if c != 0)
    if not kept:
        return Real(q=fmpq(c0))
    if c0 == 0 and len(kept) == 1 and kept[0][0] == 1 and len(kept[0][1]) == 1:
        return kept[0][1][0]
    size = 1 + sum(1 + sum(f.size for f in fs) for _, fs in kept)
    return _node("sum", (fmpq(c0), kept), size)


def _cancel_inverses(fs: list) -> list:
    """x · (1/x) = 1 within one product."""
    out = list(fs)
    for f in fs:
        if f.op == "inv" and f in out and f.args[0] in out:
            out.remove(f)
            out.remove(f.args[0])
    return out


def product(a: Real, b: Real) -> Real:
    if a.q is not None and b.q is not None:
        return Real(q=a.q * b.q)
    return sum_of_products(fmpq(0), [(fmpq(1), (a, b))])


def dot(xs: Sequence, ys: Sequence):
    """Σ x_i y_i as one node (or one rational): the matmul kernel."""
    if isinstance(xs[0], Real) or isinstance(ys[0], Real):
        xs, ys = [real(x) for x in xs], [real(y) for y in ys]
        if all(x.q is not None for x in xs) and all(y.q is not None for y in ys):
            acc = fmpq(0)
            for x, y in zip(xs, ys):
                acc += x.q * y.q
            return Real(q=acc)
        return sum_of_products(fmpq(0), ((fmpq(1), (x, y)) for x, y in zip(xs, ys)))
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
        x._inv = _node("inv", (x,), x.size + 2)
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
    return _node("sqrt", (x,), x.size + 2)


def _unary(op: str, x: Real, at_zero) -> Real:
    if x.q is not None and x.q == 0:
        return Real(q=fmpq(at_zero))
    return _node(op, (x,), x.size + 1)


# ---------------------------------------------------------------- SymPy bridge

def _to_sympy(r: Real):
    import sympy
    if r.q is not None:
        return sympy.Rational(int(r.q.p), int(r.q.q))
    if r is NEG_INF:
        return -sympy.oo
    op = r.op
    if op == "sum":
        c0, terms = r.args
        parts = [sympy.Rational(int(c0.p), int(c0.q))]
        for c, fs in terms:
            parts.append(sympy.Rational(int(c.p), int(c.q)) * sympy.Mul(*[f.to_sympy(10**9) for f in fs]))
        return sympy.Add(*parts)
    if op == "const":
        return sympy.pi
    (x,) = r.args
    x = x.to_sympy(10**9)
    return {"inv": lambda: 1 / x, "sqrt": lambda: sympy.sqrt(x), "exp": lambda: sympy.exp(x),
            "erf": lambda: sympy.erf(x), "tanh": lambda: sympy.tanh(x), "sin": lambda: sympy.sin(x),
            "cos": lambda: sympy.cos(x)}[op]()


def from_sympy(e) -> Real:
    """An exact SymPy number (Rational, sqrt, exp, E, pi, erf, tanh, + − · /) as a Real."""
    import sympy
    e = sympy.sympify(e)
    if e.is_Rational:
        return Real(q=fmpq(int(e.p), int(e.q)))
    if e == -sympy.oo:
        return NEG_INF
    if e is sympy.E:
        return exp(ONE)
    if e is sympy.pi:
        return _node("const", ("pi",), 1)
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
            out = base ** abs(int(ex))
            return inv(out) if ex < 0 else out
        if ex.is_Rational and ex.q == 2:
            root = _sqrt(base) ** abs(int(ex.p))
            return inv(root) if ex < 0 else root
        if e.base is sympy.E:
            return exp(from_sympy(ex))
    if isinstance(e, sympy.exp):
        return exp(from_sympy(e.args[0]))
    if isinstance(e, sympy.erf):
        return erf(from_sympy(e.args[0]))
    if isinstance(e, sympy.tanh):
        return tanh(from_sympy(e.args[0]))
    raise ValueError(f"cannot represent {e} exactly (supported: rationals, + − · /, integer and "
                     "half-integer powers, sqrt, exp, erf, tanh, E, pi)")


ZERO = Real(q=fmpq(0))
ONE = Real(q=fmpq(1))
NEG_INF = Real(op="neginf", ball=arb.neg_inf() if hasattr(arb, "neg_inf") else arb("-inf"))


# ---------------------------------------------------------------- scalar functions (both modes)

def _sym(x) -> bool:
    return not isinstance(x, (Real, int, fmpq))


def sqrt(x):
    if _sym(x):
        import sympy
        return sympy.sqrt(x)
    return _sqrt(real(x))


def _elementary(op: str, at_zero: int):
    """exp, erf, tanh: a graph node for a Real (exact at 0), the SymPy function for a symbol."""
    def f(x):
        if _sym(x):
            import sympy
            return getattr(sympy, op)(x)
        return _unary(op, real(x), at_zero)
    f.__name__ = f.__qualname__ = op
    return f


exp, erf, tanh = _elementary("exp", 1), _elementary("erf", 0), _elementary("tanh", 0)
sin, cos = _elementary("sin", 0), _elementary("cos", 1)  # sinusoidal positions of a model


def relu(x):
    if _sym(x):
        import sympy
        return sympy.Max(0, x)
    x = real(x)
    return x if x.sign() > 0 else ZERO


def sign(x) -> int:
    """Certified sign of an exact value (raises for a symbolic one)."""
    return real(x).sign()


def total(xs: Sequence):
    """Σ x as one node (exact) or one SymPy Add (symbolic)."""
    if xs and not isinstance(xs[0], Real):
        import sympy
        return sympy.Add(*xs)
    return lincomb(fmpq(0), [(fmpq(1), real(x)) for x in xs])


def like(x, v):
    """The constant v (a SymPy number) in x's number type."""
    return v if _sym(x) else from_sympy(v)


def is_symbolic(x) -> bool:
    return _sym(x)


def to_sympy(x, max_size: int = CLOSED_FORM_SIZE):
    """Closed form of any entry (Real or SymPy), or None when too large to show."""
    return x.to_sympy(max_size) if isinstance(x, Real) else x
