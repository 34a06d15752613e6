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

from symblock.engine import parameters
from symblock.exercises.constraints import ENUMERATE_ROWS, ENUMERATE_ROWS_2, ROW_DRAWS, Constraints, err

def ints(seed: Any, name: str, count: int, low: int, high: int) -> list[int]:
    """spec.draw's stream as plain ints: sha256("symblock:{seed}:{name}") seeds random.random()."""
    digest = hashlib.sha256(f"symblock:{seed}:{name}".encode()).digest()
    rng = _random.Random(int.from_bytes(digest[:8], "big"))
    span = high - low + 1
    return [low + int(rng.random() * span) for _ in range(count)]


def ints_array(seed: Any, name: str, count: int, low: int, high: int):
    """`ints(...)` as a NumPy int64 array, the same numbers, for the stage's batches of thousands:
    NumPy's MT19937 is started from Python's own generator state for that seed, and its
    `random_sample` makes each double from two 32-bit outputs exactly as `random.random()` does."""
    import numpy as np
    digest = hashlib.sha256(f"symblock:{seed}:{name}".encode()).digest()
    return low + np.floor(mt_like_python(int.from_bytes(digest[:8], "big")).random_sample(count)
                          * (high - low + 1)).astype(np.int64)


def mt_like_python(key: int):
    """A NumPy RandomState in the state random.Random(key) starts in (0 <= key < 2^64).
    random.seed runs MT19937's init_by_array on the key's 32-bit words, least significant first;
    RandomState(two uint32 words) runs the same init_by_array, with no state copied through
    Python. A one-word array NumPy takes as an int (init_genrand, another state): those keys
    (one sha256 key in 2^32) copy Python's state."""
    import numpy as np
    if key >> 32:
        return np.random.RandomState(np.array([key & 0xFFFFFFFF, key >> 32], dtype=np.uint32))
    _, state, _ = _random.Random(key).getstate()
    rs = np.random.RandomState()
    rs.set_state(("MT19937", np.array(state[:-1], dtype=np.uint32), state[-1]))
    return rs


def sub_seed(seed: int, attempt: int) -> int:
    """The seed of redraw `attempt` (attempt 0 is the seed itself)."""
    if attempt == 0:
        return seed
    return int.from_bytes(hashlib.sha256(f"symblock-redraw:{seed}:{attempt}".encode()).digest()[:8], "big")


def draw_tensor(seed: int, name: str, shape: tuple[int, int], lo: int, hi: int,
                sparsity: Fraction | None = None) -> list[list[int]]:
    r, c = shape
    flat = ints(seed, name, r * c, lo, hi)
    if sparsity and parameters.parse(name).kind == "weight":
        k = math.ceil(sparsity * r * c)  # at least this share of zeros
        order = ints(seed, f"{name}:zeros", r * c, 0, 10**9)
        for i in sorted(range(r * c), key=lambda i: (order[i], i))[:k]:
            flat[i] = 0
    return [flat[i * c:(i + 1) * c] for i in range(r)]



def grid(c: Constraints) -> list[Fraction]:
    """The values an entry of X takes: the multiples of random.x_step in random.ranges.X."""
    lo, hi = c.range_of("X")
    step = c.x_step
    return [k * step for k in range(math.ceil(lo / step), math.floor(hi / step) + 1)]


def draw_x(seed: int, shape: tuple[int, int], c: Constraints) -> list[list]:
    """X on its stream: plain integers (spec.draw's) when the step is 1, else grid values."""
    if c.x_step == 1:
        return draw_tensor(seed, "X", shape, *c.range_of("X"))
    values = grid(c)
    flat = ints(seed, "X", shape[0] * shape[1], 0, len(values) - 1)
    return [[values[i] for i in flat[r * shape[1]:(r + 1) * shape[1]]] for r in range(shape[0])]


def row_check(row: list, norm: str, eps: Fraction, c: Constraints, exact_norm: bool) -> str | None:
    """The failing constraint for one rational norm-input row, or None, with the numbers: exact
    σ (rms), no degenerate row, σ (rms) >= norm_min."""
    d = len(row)
    row = [Fraction(x) for x in row]
    mu = sum(row, Fraction(0)) / d if norm == "layernorm" else Fraction(0)
    dev = [x - mu for x in row]
    m = sum((x * x for x in dev), Fraction(0)) / d + eps  # σ² (mean square) with ε
    what = "σ²" if norm == "layernorm" else "rms²"
    shown = "[" + ", ".join(map(str, row)) + "]"
    if c.no_degenerate_rows and (m == eps or len({abs(x) for x in dev}) == 1):
        return f"no_degenerate_rows: row {shown} is constant or normalises to ±1"
    if exact_norm and (m == 0 or not is_square(m)):  # σ = 0 would divide by zero
        return f"exact_norm: row {shown} has {what} = {m}, not a square"
    if c.norm_min and m < c.norm_min ** 2:
        return f"norm_min: row {shown} has {what} = {m} < ({c.norm_min})²"
    return None


def is_square(q: Fraction) -> bool:
    return q >= 0 and math.isqrt(q.numerator) ** 2 == q.numerator and \
        math.isqrt(q.denominator) ** 2 == q.denominator


_FAMILIES: dict = {}


def row_family(c: Constraints, d: int, norm: str, eps: Fraction) -> dict | None:
    """Every row of d grid values that passes the first norm's row checks, grouped by its σ² (rms²):
    {σ²: [row, ...]}; None when the grid is too large to list (rows are then redrawn)."""
    values = grid(c)
    if len(values) ** d > (ENUMERATE_ROWS if c.generator < 2 else ENUMERATE_ROWS_2):
        return None
    key = (tuple(values), d, norm, eps, "norm1" in c.exact_norm, c.no_degenerate_rows, c.norm_min, c.generator)
    if key not in _FAMILIES:
        fam = dict(sorted(_list_family(c, d, norm, eps).items()))
        _FAMILIES[key] = preferred_classes(fam) if c.generator >= 2 else fam
    return _FAMILIES[key]


MIN_CLASSES = 5   # σ classes a set needs (stress.MIN_STAT_VALUES: distinct σ over a set)


def preferred_classes(fam: dict) -> dict:
    """Generator 2: the σ² classes whose exact σ has a small numerator (it divides every
    normalised value: σ = 7/4 gives scores in 49ths, 9/4 in 81sts), when at least MIN_CLASSES
    are such; else every class."""
    keep = {m: rows for m, rows in fam.items() if not is_square(m) or small_numerator(math.isqrt(m.numerator))}
    return keep if len(keep) >= MIN_CLASSES else fam


def class_walk(family: dict, generator: int) -> list:
    """The σ² classes class_digits walks through: each once (generator 1), or (generator 2) those
    whose σ² is no rounding tie twice, so that most rows have such a σ while the set still
    meets every class."""
    classes = list(family)
    if generator < 2:
        return classes
    return classes + [m for m in classes if not tie_prone(m)]


def tie_prone(q: Fraction) -> bool:
    """Whether an exact value can be a rounding tie at some places >= 2 (2³ divides its denominator)."""
    return q.denominator % 8 == 0


def small_numerator(n: int) -> bool:
    """A σ numerator that keeps denominators small: a power of 2 times 1, 3 or 5."""
    while n and n % 2 == 0:
        n //= 2
    return n in (1, 3, 5)


def smooth(n: int) -> bool:
    """Whether n's prime factors are all 2, 3 or 5."""
    for p in (2, 3, 5):
        while n and n % p == 0:
            n //= p
    return n == 1


def _list_family(c: Constraints, d: int, norm: str, eps: Fraction) -> dict:
    """row_family's listing, on the grid's integer indices k (x = k·step) while ε = 0: d²σ² =
    step²·(d·Σk² − (Σk)²), so σ is exact iff d·Σk² − (Σk)² is a square (Σk² for RMSNorm)."""
    step, exact_norm, fam = c.x_step, "norm1" in c.exact_norm, {}
    lo, hi = c.range_of("X")
    ks = range(math.ceil(lo / step), math.floor(hi / step) + 1)
    low2 = (c.norm_min or 0) ** 2 * d * d / (step * step)
    for k in (itertools.product(ks, repeat=d) if eps else _candidates(ks, d, norm, "norm1" in c.exact_norm)):
        if eps:
            row = [x * step for x in k]
            if row_check(row, norm, eps, c, exact_norm) is None:
                mu = sum(row) / d if norm == "layernorm" else 0
                fam.setdefault(sum((x - mu) ** 2 for x in row) / d + eps, []).append(tuple(row))
            continue
        s1 = sum(k) if norm == "layernorm" else 0
        num = d * sum(x * x for x in k) - s1 * s1 * (1 if norm == "layernorm" else 0)
        if num == 0 or (exact_norm and math.isqrt(num) ** 2 != num) or num < low2:
            continue
        if c.no_degenerate_rows and len({abs(d * x - s1) for x in k}) == 1:
            continue
        fam.setdefault(Fraction(num, d * d) * step * step, []).append(tuple(x * step for x in k))
    return fam


def _candidates(ks: range, d: int, norm: str, square: bool):
    """The grid's index rows in itertools.product's order, less those that surely fail (num = 0, or
    not a square when σ must be exact), sifted in bulk by NumPy on small integers; the exact checks
    of _list_family still run on every row this yields, so the listing is the same."""
    import numpy as np
    axis = np.arange(ks.start, ks.stop, dtype=np.int64)
    rows = np.stack(np.meshgrid(*([axis] * d), indexing="ij"), -1).reshape(-1, d)
    s1 = rows.sum(1) if norm == "layernorm" else np.zeros(len(rows), dtype=np.int64)
    num = d * (rows * rows).sum(1) - s1 * s1
    keep = num != 0
    if square:
        root = np.rint(np.sqrt(num.astype(np.float64))).astype(np.int64)   # exact: num is far below 2^52
        keep &= root * root == num
    for i in np.flatnonzero(keep):
        yield tuple(int(x) for x in rows[i])


def check_family(c: Constraints, d: int, norm: str, eps: Fraction, source: str) -> None:
    """An empty family: no row can pass, so fail at once, naming the constraints and the grid."""
    fam = row_family(c, d, norm, eps)
    if fam is None or fam:
        return
    lo, hi = c.range_of("X")
    which = "exact_norm" if "norm1" in c.exact_norm else "norm_min" if c.norm_min else "no_degenerate_rows"
    wants = [w for w, on in (("not degenerate (constant, or normalised to ±1)", c.no_degenerate_rows),
                             ("σ² a square (exact σ)" if norm == "layernorm" else "rms² a square (exact rms)",
                              "norm1" in c.exact_norm),
                             (f"σ >= {c.norm_min}", c.norm_min)) if on]
    step = "" if c.x_step == 1 else f" in steps of {c.x_step}"
    raise err(source, f"random.{which}", f"no row of {d} values in {lo}..{hi}{step} has "
              + " and ".join(wants) + f"{' with ε = ' + str(eps) if eps else ''}; widen random.ranges.X, "
              "use random.x_step: 1/2, or change d_model")


def class_digits(seed: int, rows: int, classes: int) -> list[int]:
    """The σ class of each row, as a function of the variant's seed that walks through every
    combination before repeating one: combination (a·seed + b) mod classes^rows, with a coprime to
    it, so any run of M = classes^rows consecutive seeds (a worksheet set) meets each combination
    once and a longer run repeats one at most ceil(n / M) times."""
    M = classes ** rows
    a = max(1, round(M * 0.618034))
    while math.gcd(a, M) != 1:
        a += 1
    b = ints(0, f"classes:{classes}:{rows}", 1, 0, M - 1)[0]
    idx = (a * seed + b) % M
    return [(idx // classes ** i) % classes for i in range(rows)]


def pick_rows(X: list, seed: int, family: dict, variant_seed: int, generator: int = 1) -> None:
    """Replace every row of X by a row of the family: its σ (rms) class by class_digits of the
    variant's seed (redraws keep it), then a row of that class uniformly on the stream of `seed`,
    so a set meets every σ the grid allows, not one pattern."""
    classes = class_walk(family, generator)
    for i, k in enumerate(class_digits(variant_seed, len(X), len(classes))):
        rows = family[classes[k]]
        X[i] = list(rows[ints(seed, f"X[{i}]#row", 1, 0, len(rows) - 1)[0]])


def fix_rows(X: list, seed: int, norm: str, eps: Fraction, c: Constraints, redraws: Counter) -> bool:
    """Grids too large to list: redraw each failing row of X on its own stream until one passes."""
    for i in range(len(X)):
        for j in range(ROW_DRAWS):
            row = X[i] if j == 0 else draw_x(sub_seed(seed, 10**6 + 1000 * i + j), (1, len(X[i])), c)[0]
            bad = row_check(row, norm, eps, c, "norm1" in c.exact_norm)
            if bad is None:
                X[i] = row
                break
            redraws[bad.split(":")[0]] += 1
        else:
            return False
    return True
