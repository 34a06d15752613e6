"""Certified Arb balls for the nodes of exact.py: the working precision, one node's ball from its
children's balls, and recognising a node whose ball pins down a simple rational.

Below exact.py and independent of it: these functions read a node's `op`, `args` and `ball`
(and `enclosure(prec)` for refinement) and never build one.
"""
from __future__ import annotations

from typing import Any, Callable, TypeVar

import math
import sys
from decimal import ROUND_HALF_UP, Context, Decimal
from fractions import Fraction

from flint import arb, ctx, fmpq

from symblock.engine.cancel import apart
from symblock.engine.node import Node

T = TypeVar("T")

PREC = 192          # bits carried at construction (~57 digits): enough that 30 certified digits
                    # survive a deep graph's rounding (a 3-layer model) without refining it, at a
                    # construction cost no higher than 128 bits' (Python's overhead per node dominates)
REFINE = (512, 2048, 8192, 32768)  # a ball too wide for what is asked is recomputed at these, in turn
MAX_PREC = 1 << 14  # the snap's last certification (~4900 digits)
SNAP_DENOMINATOR = 10**4  # rationals this simple are recognised when a node equals one
SNAP_PREC = (512, 2048, MAX_PREC)

ctx.prec = PREC  # construction-time balls; refinement raises it locally and restores it


def with_prec(prec: int, fn: Callable[..., T], *a: Any) -> T:
    """fn(*a) computed at `prec` bits."""
    old = ctx.prec
    ctx.prec = prec
    try:
        return fn(*a)
    finally:
        ctx.prec = old


def children(r: Node) -> list[Node]:
    """The nodes a node is made from, in the order `node_ball` takes their balls."""
    if r.op == "sum":
        return [f for _, fs in r.args[1] for f in fs]
    if r.op == "pow":  # (base, exponent): the exponent is a number, not a node
        return [r.args[0]]
    return [] if r.op in ("const", "neginf") else list(r.args)


def hi_ball(r: Node, prec: int) -> arb:
    """r's ball at `prec` bits (memoised); `enclosure` set that precision once for the subgraph."""
    hi = r._hi = r._hi if r._hi is not None else {}
    b = hi.get(prec)
    if b is None and r.op == "sum":  # node_ball's operations in its order, each factor's ball as it comes
        acc = arb(r.args[0])
        for c, fs in r.args[1]:
            t = _hi_of(fs[0], prec)
            for f in fs[1:]:
                t = t * _hi_of(f, prec)
            acc += t * c if c != 1 else t
        b = hi[prec] = acc
    elif b is None:
        args: list[Any] = []
        for a in children(r):
            if not hasattr(a, "op") or a.op == "neginf":
                args.append(a.ball if hasattr(a, "op") else a)
            elif a.q is not None:
                args.append(arb(a.q))
            else:  # a shared child is worked once: look in its memo before calling
                c = a._hi.get(prec) if a._hi is not None else None
                args.append(c if c is not None else hi_ball(a, prec))
        b = hi[prec] = node_ball(r, args)
    return b


def _hi_of(a: Node, prec: int) -> arb:
    """A factor's ball at `prec` bits: exact for a rational, memoised for a node."""
    if a.q is not None:
        return arb(a.q)
    if a.op == "neginf":
        return a.ball
    c = a._hi.get(prec) if a._hi is not None else None
    return c if c is not None else hi_ball(a, prec)


def sum_ball(args: tuple) -> arb:
    """A sum node's ball straight from its factors' balls: node_ball's operations, in its order
    (so the same bits), without the list of children in between."""
    acc = arb(args[0])
    for c, fs in args[1]:
        if len(fs) == 1:
            t = fs[0].ball
        else:
            t = fs[0].ball
            for f in fs[1:]:
                t = t * f.ball
        acc += t * c if c != 1 else t
    return acc


def node_ball(r: Node, child_balls: list[arb]) -> arb:
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
    if op == "pow":  # a rational power of a positive rational: x^(p/n) = (x^(1/n))^p
        e = r.args[1]
        y = x.root(int(e.q)) ** abs(int(e.p))
        return 1 / y if e < 0 else y
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


def snap(r: Node, known: fmpq | None = None) -> fmpq | None:
    """The simple rational a node equals, or None (an exact 0 from LayerNorm outputs summing
    to zero, ±1 from a 2-d LayerNorm row, a softmax-weighted constant).

    `known`: the node's value when algebra has proved it rational (a query's score against the
    key at its own position, RoPE or not: engine/rope.py `scores`). A candidate equal to it is
    returned without the checks at higher precision, which could only confirm it; any other
    outcome is as without it. Likewise a candidate that `cancel.apart` proves the node is not
    (a softmax weight near 1, P·V near one value row, a GELU near 0) is refused without them: they could only
    refuse it too, unless the node were within 2^-16384 of it (a false rational).

    Called on every node the engine builds, so the common case (no such rational) must be cheap:
    a tight ball's float midpoint is expanded as a continued fraction in float arithmetic
    (`_candidate`, a handful of float operations), which rules out every rational with
    denominator <= SNAP_DENOMINATOR unless its last convergent lands within float precision.
    The candidate is only a guess; what makes it the value is certified in Arb: the ball minus
    the candidate contains 0 at PREC bits and again at every precision of SNAP_PREC, up to
    MAX_PREC bits (~4900 digits). The guess cannot lose a true rational p/q with q <= 10^4
    and |p/q| <= 10^7: the float midpoint is then within |p/q|·2^-52 < 1/(2q²) of it, so p/q is a
    convergent of the midpoint's expansion (Legendre's theorem), and the next one's denominator
    exceeds 10^4. Beyond 10^7 such a rational may go unrecognised (the value stays an exact node).

    This is the one place where exactness rests on numerics rather than algebra: a value within
    2^-16384 of a small-denominator rational is taken to be it. Values of this engine's
    expressions (small integers through +, ·, /, √, exp, erf, tanh) do not come that close
    without being equal in any case we know of; short closed forms are confirmed by SymPy."""
    b = r.ball
    if not b.is_finite():
        return None
    mid = float(b.mid())
    if float(b.rad()) > 1e-20 * (1 + abs(mid)) or abs(mid) > 1e15:
        return None
    pq = _candidate(mid)
    if pq is None:
        return None
    q = fmpq(*pq)
    if not (b - q).contains(0):
        return None
    if known is not None and q == known:  # proved equal: the precisions below could only confirm it
        return q
    if apart(r, q):  # proved unequal (a quotient's numerator): they could only refute it
        return None
    for prec in SNAP_PREC:  # the difference at that precision too: at PREC bits it would round to 0
        if not with_prec(prec, lambda: (r.enclosure(prec) - q).contains(0)):
            return None
    return q


def _candidate(x: float) -> tuple[int, int] | None:
    """(p, q): the last convergent of the float x's continued fraction with q <= SNAP_DENOMINATOR
    (in Python ints, on x's exact binary value), or None when even that is farther from x than
    float rounding explains. Only a guess: the caller certifies it."""
    if abs(x) < 100.0 and not _may_be_simple(x):
        return None
    n, d = x.as_integer_ratio()
    p0, q0, p1, q1 = 0, 1, 1, 0
    while d:
        a, r = divmod(n, d)
        q2 = a * q1 + q0
        if q2 > SNAP_DENOMINATOR:
            break
        p0, q0, p1, q1 = p1, q1, a * p1 + p0, q2
        n, d = d, r
    if abs(x - p1 / q1) > 8 * sys.float_info.epsilon * max(1.0, abs(x)):
        return None
    return p1, q1


def _may_be_simple(x: float) -> bool:
    """False when x's continued fraction, run in floats, passes denominator SNAP_DENOMINATOR
    with no remainder near 0 on the way: the quick test that rules out most nodes. For |x| < 100
    the float remainder where a true p/q (q <= 10^4) ends is below ~10^-4 (rounding of x and of
    each step, amplified at most q² times), far under the 10^-3 threshold; a partial quotient
    off by one at a near-integer step only splits it as [.., a−1, 1], same final denominator."""
    f = x - math.floor(x)
    q0, q1 = 0, 1
    while f > 1e-3:
        y = 1.0 / f
        a = math.floor(y)
        f = y - a
        q0, q1 = q1, a * q1 + q0
        if q1 > SNAP_DENOMINATOR:
            return False
    return True


# ---------------------------------------------------------------- decimals of a ball

def decimal_context(int_digits: int, places: int) -> Context:
    """A Decimal context wide enough for `int_digits` digits before the point and `places` after
    (Decimal's default of 28 significant digits would round, or refuse to quantize)."""
    return Context(prec=max(28, int_digits + places + 2), rounding=ROUND_HALF_UP, Emax=10**9, Emin=-10**9)


def dyadic(x: arb) -> Fraction:
    """An exact arb (a midpoint or a radius: a dyadic number) as a Fraction."""
    man, exp = (int(v) for v in x.man_exp())
    return Fraction(man * 2**exp) if exp >= 0 else Fraction(man, 2**-exp)


def round_ends(b: arb, places: int) -> tuple[Decimal, Decimal]:
    """Both ends of the ball, mid ∓ rad taken exactly, rounded half away from zero to `places`
    decimals in exact arithmetic: equal results certify the rounding (no guard digits to fool).
    The ends are dyadic, m·2^e, so the rounding is integer arithmetic: ⌊|m|·10^places·2^e + ½⌋."""
    m1, e1 = (int(v) for v in b.mid().man_exp())
    m2, e2 = (int(v) for v in b.rad().man_exp())
    # A part far below the last place (exp of a huge negative: 2^-10^20) would make the shifts
    # below astronomically wide; widening the ball by 2^floor instead keeps the rounding certified.
    # The floor lies far below any precision the certification climbs to (2^15 bits), so a value
    # within 2^-(2^15) of a rounding tie is still told from the tie.
    floor = -(4 * places + 2**17)
    if m2 and m2.bit_length() + e2 < floor:
        m2, e2 = 1, floor
    if m1 and m1.bit_length() + e1 < floor:  # rad + 2^floor
        m2, e2 = ((m2 << (e2 - floor)) + 1, floor) if e2 >= floor else (m2 + (1 << (floor - e2)), e2)
        m1, e1 = 0, 0
    e = min(e1, e2)
    mid, rad, scale = m1 << (e1 - e), m2 << (e2 - e), 10**places
    out = []
    for end in (mid - rad, mid + rad):  # end·2^e
        a = abs(end) * scale
        n = a << e if e >= 0 else (a + (1 << (-e - 1))) >> -e
        out.append(Decimal(n if end >= 0 else -n).scaleb(-places, decimal_context(n.bit_length() // 3 + 1, places)))
    return out[0], out[1]


# ---------------------------------------------------------------- a closed form's ball

_UNARY = {"sqrt": arb.sqrt, "exp": arb.exp, "erf": arb.erf, "tanh": arb.tanh, "sin": arb.sin, "cos": arb.cos}


def tree_ball(tree: tuple, prec: int = PREC) -> arb | None:
    """The certified ball of a closed form read by engine/numbers.closed_tree, at `prec` bits; None
    where it holds -oo (no finite ball)."""
    return with_prec(prec, _tree_ball, tree, {})


def _tree_ball(tree: tuple, memo: dict) -> arb | None:
    if tree in memo:
        return memo[tree]
    kind = tree[0]
    out: arb | None
    if kind == "n":
        out = arb(int(tree[1]))
    elif kind == "c":
        out = None if tree[1] == "oo" else arb.const_e() if tree[1] == "E" else arb.pi()
    elif kind == "u":
        x = _tree_ball(tree[2], memo)
        out = None if x is None else -x if tree[1] == "-" else x
    elif kind == "f":
        x = _tree_ball(tree[2], memo)
        out = None if x is None else _UNARY[tree[1]](x)
    else:
        a, b = _tree_ball(tree[2], memo), _tree_ball(tree[3], memo)
        out = None if a is None or b is None else {"+": arb.__add__, "-": arb.__sub__, "*": arb.__mul__,
                                                   "/": arb.__truediv__}[tree[1]](a, b)
    memo[tree] = out
    return out
