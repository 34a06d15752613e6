"""The `random:` section of a spec, validated: which constraints a variant must meet (generate.py
draws until they hold; its docstring lists the keys)."""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping

DIFFICULTIES = ("easy", "medium", "hard")
FLAG_KEYS = ("integer_scores", "exact_scale", "no_degenerate_rows", "softmax_distinct")
NORMS = ("norm1", "norm2", "norm_final")
CONSTRAINT_KEYS = ("difficulty", "ranges", "sparsity", *FLAG_KEYS, "exact_norm", "relu_mixed", "score_range",
                   "staged", "max_draws")
RELU_MODES = ("rows", "columns", "both")
MAX_DRAWS = 2000      # candidate blocks drawn before giving up
MAX_FORWARDS = 200    # candidates that pass the cheap checks and reach the exact forward
ROW_DRAWS = 500       # redraws of one row of X before the candidate counts as rejected
ENUMERATE_ROWS = 20000  # rows of X small enough to enumerate: an impossible row constraint fails at once


def err(source: str, where: str, message: str):
    from symblock.engine.spec import SpecError
    return SpecError(source, where, message)


@dataclass(frozen=True)
class Constraints:
    """The validated `random:` section."""
    seed: int = 0
    low: int = -2
    high: int = 2
    ranges: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    sparsity: Fraction | None = None
    integer_scores: bool = False
    exact_scale: bool = False
    exact_norm: tuple[str, ...] = ()   # the norms it applies to (true: all of them)
    no_degenerate_rows: bool = False
    softmax_distinct: bool = False
    relu_mixed: str | None = None
    score_range: tuple[Fraction, Fraction] | None = None
    staged: tuple[str, int] | None = None
    difficulty: str | None = None
    max_draws: int = MAX_DRAWS

    def range_of(self, name: str) -> tuple[int, int]:
        """Per tensor: its own entry, else its group (X / weights / biases), else low..high."""
        group = "X" if name == "X" else "weights" if name.startswith("W_") else "biases"
        return self.ranges.get(name) or self.ranges.get(group) or (self.low, self.high)

    def active(self) -> list[str]:
        names = [k for k in FLAG_KEYS if getattr(self, k)]
        names += [k for k in ("exact_norm", "relu_mixed", "score_range", "staged", "sparsity") if getattr(self, k)]
        return names


def has_constraints(rnd: Any) -> bool:
    return isinstance(rnd, dict) and any(k in rnd for k in CONSTRAINT_KEYS)


def _bool(v: Any, source: str, where: str) -> bool:
    if not isinstance(v, bool):
        raise err(source, where, f"expected true or false, got {v!r}")
    return v


def _pair(v: Any, source: str, where: str, exact: bool = False) -> tuple:
    from symblock.engine.spec import int_field, parse_exact
    if not isinstance(v, list) or len(v) != 2:
        raise err(source, where, f"expected [low, high], e.g. [-2, 2], got {v!r}")
    if exact:
        lo, hi = (Fraction(str(parse_exact(x, source, f"{where}[{i}]"))) for i, x in enumerate(v))
    else:
        lo, hi = (int_field(x, source, f"{where}[{i}]", lo=-1000, hi=1000) for i, x in enumerate(v))
    if lo > hi:
        raise err(source, where, f"expected low <= high, got [{v[0]}, {v[1]}]")
    return lo, hi


def parse_random(rnd: Any, source: str) -> Constraints:
    """Validate a `random:` section (keys of spec.RANDOM_KEYS); errors name `random.KEY`."""
    from symblock.engine.spec import RANDOM_KEYS, check_keys, int_field, parse_exact
    check_keys(rnd, RANDOM_KEYS, source, "random")
    kw: dict[str, Any] = {
        "seed": int_field(rnd.get("seed", 0), source, "random.seed", lo=0, hi=None),
        "low": int_field(rnd.get("low", -2), source, "random.low", lo=-1000, hi=1000),
        "high": int_field(rnd.get("high", 2), source, "random.high", lo=-1000, hi=1000)}
    if kw["low"] > kw["high"]:
        raise err(source, "random.high", f"expected high >= low = {kw['low']}, got {kw['high']}")
    if "difficulty" in rnd:
        if rnd["difficulty"] not in DIFFICULTIES:
            raise err(source, "random.difficulty", f"expected one of {', '.join(DIFFICULTIES)}, "
                                                    f"got {rnd['difficulty']!r}")
        kw["difficulty"] = rnd["difficulty"]
    ranges = rnd.get("ranges") or {}
    if not isinstance(ranges, dict):
        raise err(source, "random.ranges", "expected a mapping such as {X: [-2, 2], weights: [-1, 1]}")
    from symblock.engine.spec import all_param_keys
    tensors = ("X", "weights", "biases", *[p for p in all_param_keys() if p.startswith(("W_", "b_"))])
    for name in ranges:
        if name not in tensors:
            raise err(source, f"random.ranges.{name}", f"unknown tensor; expected one of {', '.join(tensors)}")
    kw["ranges"] = {k: _pair(v, source, f"random.ranges.{k}") for k, v in ranges.items()}
    if rnd.get("sparsity") is not None:
        p = parse_exact(rnd["sparsity"], source, "random.sparsity")
        if not (0 <= p < 1):
            raise err(source, "random.sparsity", f"expected a share of zeros in [0, 1), got {rnd['sparsity']}")
        kw["sparsity"] = Fraction(str(p))
    for key in FLAG_KEYS:
        if key in rnd:
            kw[key] = _bool(rnd[key], source, f"random.{key}")
    if rnd.get("exact_norm") not in (None, False):
        v = rnd["exact_norm"]
        v = list(NORMS) if v is True else v
        if not isinstance(v, list) or any(n not in NORMS for n in v):
            raise err(source, "random.exact_norm", f"expected true, false or a list of {', '.join(NORMS)}, "
                                                    f"got {rnd['exact_norm']!r}")
        kw["exact_norm"] = tuple(v)
    if rnd.get("relu_mixed") not in (None, False):
        mode = "rows" if rnd["relu_mixed"] is True else rnd["relu_mixed"]
        if mode not in RELU_MODES:
            raise err(source, "random.relu_mixed", f"expected true, false or one of {', '.join(RELU_MODES)}, "
                                                    f"got {rnd['relu_mixed']!r}")
        kw["relu_mixed"] = mode
    if rnd.get("score_range") is not None:
        kw["score_range"] = _pair(rnd["score_range"], source, "random.score_range", exact=True)
    if rnd.get("staged") is not None:
        st = rnd["staged"]
        check_keys(st, ("step", "decimals"), source, "random.staged")
        step = st.get("step")
        if not isinstance(step, str):
            raise err(source, "random.staged.step", f"expected a step name such as attn.out, got {step!r}")
        kw["staged"] = (step, int_field(st.get("decimals", 3), source, "random.staged.decimals", lo=0, hi=12))
    if "max_draws" in rnd:
        kw["max_draws"] = int_field(rnd["max_draws"], source, "random.max_draws", lo=1, hi=10**6)
    return Constraints(**kw)

