"""Integer draws from a seed: one stream per tensor (spec.draw's scheme), sub-seeds for redraws,
and rows of X chosen among the rows that pass the first norm's checks."""
from __future__ import annotations

import hashlib
import itertools
import math
import random as _random
from collections import Counter
from fractions import Fraction
from typing import Any

from symblock.exercises.constraints import ENUMERATE_ROWS, ROW_DRAWS, Constraints, err

def ints(seed: Any, name: str, count: int, low: int, high: int) -> list[int]:
    """spec.draw's stream as plain ints: sha256("symblock:{seed}:{name}") seeds random.random()."""
    digest = hashlib.sha256(f"symblock:{seed}:{name}".encode()).digest()
    rng = _random.Random(int.from_bytes(digest[:8], "big"))
    span = high - low + 1
    return [low + int(rng.random() * span) for _ in range(count)]


def sub_seed(seed: int, attempt: int) -> int:
    """The seed of redraw `attempt` (attempt 0 is the seed itself)."""
    if attempt == 0:
        return seed
    return int.from_bytes(hashlib.sha256(f"symblock-redraw:{seed}:{attempt}".encode()).digest()[:8], "big")


def draw_tensor(seed: int, name: str, shape: tuple[int, int], lo: int, hi: int,
                sparsity: Fraction | None = None) -> list[list[int]]:
    r, c = shape
    flat = ints(seed, name, r * c, lo, hi)
    if sparsity and name.startswith("W_"):
        k = math.ceil(sparsity * r * c)  # at least this share of zeros
        order = ints(seed, f"{name}:zeros", r * c, 0, 10**9)
        for i in sorted(range(r * c), key=lambda i: (order[i], i))[:k]:
            flat[i] = 0
    return [flat[i * c:(i + 1) * c] for i in range(r)]



def row_ok_rational(row: list, norm: str, eps: Fraction, exact_norm: bool,
                    no_degenerate: bool) -> str | None:
    """The failing constraint for one rational norm-input row, or None (cheap: integers when it
    can, Fractions otherwise)."""
    d = len(row)
    if eps == 0 and all(isinstance(x, int) or getattr(x, "denominator", 2) == 1 for x in row):
        row = [int(x) for x in row]  # scaled by d: d·x_j − Σx and d²·σ² = d·Σx² − (Σx)²
        total = sum(row) if norm == "layernorm" else 0
        dev = [d * x - total for x in row]
        m = Fraction(sum(x * x for x in dev), d ** 3)
    else:
        row = [Fraction(x) for x in row]
        mu = sum(row, Fraction(0)) / d if norm == "layernorm" else Fraction(0)
        dev = [x - mu for x in row]
        m = sum((x * x for x in dev), Fraction(0)) / d
    if no_degenerate and (m == 0 or len({abs(x) for x in dev}) == 1):
        return "no_degenerate_rows"
    if exact_norm and (m + eps == 0 or not is_square(m + eps)):  # σ = 0 would divide by zero
        return "exact_norm"
    return None


def is_square(q: Fraction) -> bool:
    return q >= 0 and math.isqrt(q.numerator) ** 2 == q.numerator and \
        math.isqrt(q.denominator) ** 2 == q.denominator



def enumerate_rows(c: Constraints, d: int, norm: str, eps: Fraction, source: str) -> None:
    """When the rows of X are few enough to list, prove a row constraint impossible at once."""
    lo, hi = c.range_of("X")
    span = hi - lo + 1
    if span ** d > ENUMERATE_ROWS:
        return
    for row in itertools.product(range(lo, hi + 1), repeat=d):
        if row_ok_rational([Fraction(v) for v in row], norm, eps, "norm1" in c.exact_norm,
                           c.no_degenerate_rows) is None:
            return
    exact_norm = "norm1" in c.exact_norm
    which = "exact_norm" if exact_norm else "no_degenerate_rows"
    what = ("a nonzero, non-degenerate row whose " if c.no_degenerate_rows else "a row whose ") + \
        ("variance" if norm == "layernorm" else "mean square") + " is a perfect square (σ exact)" \
        if exact_norm else "a row that is neither constant nor normalised to ±1"
    raise err(source, f"random.{which}", f"no row of {d} integers in {lo}..{hi} is {what}"
               f"{' with ε = ' + str(eps) if eps else ''}; widen random.ranges.X or change d_model")


_VALID_ROWS: dict = {}


def valid_rows(d: int, lo: int, hi: int, norm: str, eps: Fraction, exact_norm: bool,
               no_degenerate: bool) -> list[tuple[int, ...]]:
    """Every integer row in lo..hi that passes the first norm's row checks (enumerated once)."""
    key = (d, lo, hi, norm, eps, exact_norm, no_degenerate)
    if key not in _VALID_ROWS:
        _VALID_ROWS[key] = [r for r in itertools.product(range(lo, hi + 1), repeat=d)
                            if row_ok_rational([Fraction(v) for v in r], norm, eps, exact_norm,
                                               no_degenerate) is None]
    return _VALID_ROWS[key]


def fix_rows(X: list, seed: int, lo: int, hi: int, norm: str, eps: Fraction, c: Constraints,
              rejections: Counter) -> bool:
    """Redraw each row of X that fails the first norm's row checks: uniformly among the valid
    rows when they are few enough to list, else on its own stream until one passes."""
    flags = ("norm1" in c.exact_norm, c.no_degenerate_rows)
    few = (hi - lo + 1) ** len(X[0]) <= ENUMERATE_ROWS
    for i in range(len(X)):
        for j in range(ROW_DRAWS):
            if j > 0 and few:
                rows = valid_rows(len(X[i]), lo, hi, norm, eps, *flags)
                X[i] = list(rows[ints(seed, f"X[{i}]#valid", 1, 0, len(rows) - 1)[0]])
                break
            row = X[i] if j == 0 else ints(seed, f"X[{i}]#{j}", len(X[i]), lo, hi)
            bad = row_ok_rational([Fraction(v) for v in row], norm, eps, *flags)
            if bad is None:
                X[i] = row
                break
            rejections[bad] += 1
        else:
            return False
    return True

