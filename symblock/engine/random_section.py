"""A spec's `random:` section: its keys, the seed its draws use (with `random.secret`, one nobody
can work out from a worksheet ID) and the integer draws of whatever weights and inputs it leaves out.
"""
from __future__ import annotations

import hashlib
import random as _random
from fractions import Fraction
from typing import Any, Mapping

from symblock.engine.fields import check_keys, int_field, kind_of
from symblock.engine.matrix import ExactMatrix
from symblock.errors import SpecError

RANDOM_KEYS = ("seed", "low", "high", "difficulty", "ranges", "sparsity", "integer_scores", "exact_scale",
               "exact_norm", "no_degenerate_rows", "relu_mixed", "softmax_distinct", "score_range",
               "staged", "max_draws",  # all but the first three: constraints (exercises/constraints.py)
               "scaled_range", "softmax_weights", "norm_min", "x_step", "norm_params", "distinct_mistakes",
               "dims", "padding", "dropout",  # a variant's shape: exercises/shapes.py
               "generator",  # how a variant is drawn (1 or 2): exercises/constraints.py
               "secret")  # private text mixed into every draw (secret_seed)
PLAIN_RANDOM = ("seed", "low", "high", "secret")  # a `random:` section that is no constraint
MAX_SECRET = 200


def has_constraints(rnd: Any) -> bool:
    """Whether a `random:` section holds generation constraints (more than seed, low, high)."""
    return isinstance(rnd, dict) and any(k not in PLAIN_RANDOM for k in rnd)


def random_section(rnd: Any, source: str) -> tuple[int | None, int, int]:
    if rnd is None:
        return None, -2, 2
    check_keys(rnd, RANDOM_KEYS, source, "random")
    seed = secret_seed(int_field(rnd.get("seed", 0), source, "random.seed", lo=0, hi=None), rnd, source)
    low = int_field(rnd.get("low", -2), source, "random.low", lo=-1000, hi=1000)
    high = int_field(rnd.get("high", 2), source, "random.high", lo=-1000, hi=1000)
    if low > high:
        raise SpecError(source, "random.high", f"expected high >= low = {low}, got {high}")
    return seed, low, high


def secret_seed(seed: int, rnd: Mapping, source: str) -> int:
    """The seed the draws use: `seed` itself, or with `random.secret` a 64-bit number made from both,
    so that nobody without the secret can draw a variant again from its public ID."""
    if "secret" not in rnd:
        return seed
    secret = rnd["secret"]   # null too is refused: a secret left to fill in must not make the keys public
    got = (kind_of(secret) if not isinstance(secret, str) else "an empty text" if not secret.strip()
           else f"{len(secret)} characters" if len(secret) > MAX_SECRET else None)
    if got:
        raise SpecError(source, "random.secret", f"expected a private text of 1 to {MAX_SECRET} characters, got {got}")
    digest = hashlib.sha256(f"symblock-secret:{secret}:{seed}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big")


def draw(seed: int, name: str, shape: tuple[int, int], low: int, high: int) -> ExactMatrix:
    """Integers in [low, high] for one tensor. Each tensor has its own stream (seeded from the
    seed and its name), so giving one weight does not change the others' draws. Only
    `random.random()` is used: its sequence is guaranteed across Python versions."""
    digest = hashlib.sha256(f"symblock:{seed}:{name}".encode()).digest()
    rng = _random.Random(int.from_bytes(digest[:8], "big"))
    span = high - low + 1
    return ExactMatrix([[Fraction(low + int(rng.random() * span)) for _ in range(shape[1])] for _ in range(shape[0])])
