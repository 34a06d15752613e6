"""The `random:` section of a spec, validated: which constraints a variant must meet (generate.py
draws until they hold; its docstring lists the keys)."""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping

from symblock.engine import parameters
from symblock.engine.fields import near

DIFFICULTIES = ("easy", "medium", "hard")
FLAG_KEYS = ("integer_scores", "exact_scale", "no_degenerate_rows", "softmax_distinct", "distinct_mistakes")
NORMS = ("norm1", "norm2", "norm_final")
NORM_PARAMS = {n: parameters.of_norm(n) for n in NORMS}   # norm1 -> ln1
BOUND_KEYS = ("score_range", "scaled_range", "softmax_weights")   # [lo, hi], exact
SHAPE_KEYS = ("dims", "padding", "dropout")   # what a variant's shape draws (exercises/shapes.py)
CONSTRAINT_KEYS = ("difficulty", "ranges", "sparsity", *FLAG_KEYS, "exact_norm", "relu_mixed", *BOUND_KEYS,
                   "norm_min", "x_step", "norm_params", "staged", "max_draws", *SHAPE_KEYS)
DIM_CHOICES = ("seq_len", "d_model", "d_ff", "heads", "d_k", "d_v", "batch")  # keys of random.dims
GROUP_DEFAULTS = {"gamma": (1, 2), "beta": (-1, 1)}  # ranges of drawn γ, β (norm_params)
RELU_MODES = ("rows", "columns", "both")
MAX_DRAWS = 2000      # candidate blocks drawn before giving up (default of random.max_draws)
MAX_DRAWS_LIMIT = 20_000  # the largest random.max_draws / --max-draws (some seconds of cheap draws)
DRAW_BUDGET = 4_000_000   # entries drawn and multiply-adds prechecked, over all draws of one variant
MAX_FORWARDS = 200    # candidates that pass the cheap checks and reach the exact forward
ROW_DRAWS = 500       # redraws of one row of X before the candidate counts as rejected
STAGE_BATCHES = 4     # batches of stage.BATCH candidates for the attention weights fitted to one X
ENUMERATE_ROWS = 30000  # rows of X small enough to list (13⁴ half-integers in -3..3): drawn from the list
ENUMERATE_ROWS_2 = 100_000  # generator 2 lists up to this many (17⁴ half-integers in -4..4)
GENERATORS = (1, 2)   # random.generator: how a variant is drawn (an ID names it: variants.py)
GENERATOR_NEW = 2     # what a new worksheet or set is drawn with when the spec names none


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
    scaled_range: tuple[Fraction, Fraction] | None = None     # every softmax input (scaled score)
    softmax_weights: tuple[Fraction, Fraction] | None = None  # every live weight of a row with >= 2
    norm_min: Fraction | None = None   # σ (LayerNorm) / rms (RMSNorm) of every norm row >= this
    x_step: Fraction = Fraction(1)     # X entries are multiples of this (1/2: half-integers)
    norm_params: tuple[str, ...] = ()  # norms whose γ, β are drawn (ranges gamma, beta)
    distinct_mistakes: bool = False    # checked on a set by a judge (worksheet, stress): see generate.py
    staged: tuple[str, int] | None = None
    difficulty: str | None = None
    max_draws: int = MAX_DRAWS
    dims: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # dims key -> its choices
    padding: tuple[int, ...] | None = None   # padded keys per sequence: its choices (() = any)
    dropout: tuple[Fraction, tuple[str, ...]] | None = None   # (p, steps whose masks are drawn)
    generator: int = 1       # 2: prefers values that are no rounding ties and small denominators

    def range_of(self, name: str) -> tuple[int, int]:
        """Per tensor: its own entry, else its group (X / weights / biases), else low..high."""
        p = parameters.parse(name)
        if p.norm:
            return self.ranges.get(p.kind) or GROUP_DEFAULTS[p.kind]
        group = "X" if name == "X" else "weights" if p.kind == "weight" else "biases"
        return self.ranges.get(name) or self.ranges.get(group) or (self.low, self.high)


def has_constraints(rnd: Any) -> bool:
    return isinstance(rnd, dict) and any(k in rnd for k in (*CONSTRAINT_KEYS, "generator"))


def _bool(v: Any, source: str, where: str) -> bool:
    if not isinstance(v, bool):
        raise err(source, where, f"expected true or false, got {v!r}")
    return v


def _pair(v: Any, source: str, where: str, exact: bool = False) -> tuple:
    from symblock.engine.spec import int_field
    if not isinstance(v, list) or len(v) != 2:
        raise err(source, where, f"expected [low, high], e.g. [-2, 2], got {v!r}")
    if exact:
        lo, hi = (_exact(x, source, f"{where}[{i}]") for i, x in enumerate(v))
    else:
        lo, hi = (int_field(x, source, f"{where}[{i}]", lo=-1000, hi=1000) for i, x in enumerate(v))
    if lo > hi:
        raise err(source, where, f"expected low <= high, got [{v[0]}, {v[1]}]")
    return lo, hi


def parse_random(rnd: Any, source: str) -> Constraints:
    """Validate a `random:` section (keys of spec.RANDOM_KEYS); errors name `random.KEY`. A
    constraint set to false (or null) is off, also when a difficulty turns it on."""
    from symblock.engine.random_section import RANDOM_KEYS, secret_seed
    from symblock.engine.spec import check_keys, int_field
    check_keys(rnd, RANDOM_KEYS, source, "random")
    kw: dict[str, Any] = {
        "seed": secret_seed(int_field(rnd.get("seed", 0), source, "random.seed", lo=0, hi=None), rnd, source),
        "low": int_field(rnd.get("low", -2), source, "random.low", lo=-1000, hi=1000),
        "high": int_field(rnd.get("high", 2), source, "random.high", lo=-1000, hi=1000)}
    if kw["low"] > kw["high"]:
        raise err(source, "random.high", f"expected high >= low = {kw['low']}, got {kw['high']}")
    if "difficulty" in rnd:
        if rnd["difficulty"] not in DIFFICULTIES:
            raise err(source, "random.difficulty", f"expected one of {', '.join(DIFFICULTIES)}, "
                                                   f"got {rnd['difficulty']!r}{near(rnd['difficulty'], DIFFICULTIES)}")
        kw["difficulty"] = rnd["difficulty"]
    kw["ranges"] = _ranges(rnd.get("ranges") or {}, source)
    for key in FLAG_KEYS:
        if key in rnd:
            kw[key] = _bool(rnd[key], source, f"random.{key}")
    kw.update(_lists(rnd, source))
    kw.update(_numbers(rnd, source))
    if rnd.get("staged") not in (None, False):
        st = rnd["staged"]
        check_keys(st, ("step", "decimals"), source, "random.staged")
        step = st.get("step")
        if not isinstance(step, str):
            raise err(source, "random.staged.step", f"expected a step name such as attn.out, got {step!r}")
        kw["staged"] = (step, int_field(st.get("decimals", 3), source, "random.staged.decimals", lo=0, hi=12))
    if "max_draws" in rnd:
        kw["max_draws"] = int_field(rnd["max_draws"], source, "random.max_draws", lo=1, hi=MAX_DRAWS_LIMIT)
    kw.update(_shape(rnd, source))
    if rnd.get("generator") is not None:
        if rnd["generator"] not in GENERATORS or isinstance(rnd["generator"], bool):
            raise err(source, "random.generator", f"expected one of {', '.join(map(str, GENERATORS))}, "
                      f"got {rnd['generator']!r}")
        kw["generator"] = rnd["generator"]
    return Constraints(**kw)


def _choices(v: Any, source: str, where: str, lo: int) -> tuple[int, ...]:
    """A whole number or a list of them: the choices a variant picks one of."""
    from symblock.engine.spec import int_field
    items = v if isinstance(v, list) else [v]
    if not items:
        raise err(source, where, "expected a whole number or a non-empty list of choices, e.g. [1, 2]")
    return tuple(int_field(x, source, f"{where}[{i}]" if isinstance(v, list) else where, lo=lo, hi=64)
                 for i, x in enumerate(items))


def _shape(rnd: Mapping, source: str) -> dict:
    """random.dims (choices per dims key, `batch` too), random.padding (padded keys per
    sequence: choices, or true for any) and random.dropout ({p, steps}): exercises/shapes.py."""
    from symblock.engine.spec import check_keys
    kw: dict[str, Any] = {}
    if rnd.get("dims") not in (None, False):
        check_keys(rnd["dims"], DIM_CHOICES, source, "random.dims")
        kw["dims"] = {k: _choices(v, source, f"random.dims.{k}", lo=0 if k == "batch" else 1)
                      for k, v in rnd["dims"].items()}
    if rnd.get("padding") is not None and rnd["padding"] is not False:  # 0: a mask padding no key
        kw["padding"] = () if rnd["padding"] is True else _choices(rnd["padding"], source, "random.padding", lo=0)
    if rnd.get("dropout") not in (None, False):
        d = rnd["dropout"]
        check_keys(d, ("p", "steps"), source, "random.dropout")
        steps = d.get("steps")
        if not isinstance(steps, list) or not steps or not all(isinstance(x, str) for x in steps):
            raise err(source, "random.dropout.steps", f"expected a list of step names such as [ffn.act, "
                      f"attn.h0.weights], got {steps!r}")
        p = _exact(d.get("p", "1/10"), source, "random.dropout.p")
        if not 0 < p < 1:
            raise err(source, "random.dropout.p", f"expected a probability 0 < p < 1, got {d.get('p')}")
        kw["dropout"] = (p, tuple(steps))
    return kw


def _ranges(ranges: Any, source: str) -> dict:
    from symblock.engine.spec import all_param_keys
    if not isinstance(ranges, dict):
        raise err(source, "random.ranges", "expected a mapping such as {X: [-2, 2], weights: [-1, 1]}")
    tensors = ("X", "weights", "biases", *GROUP_DEFAULTS,
               *[p for p in all_param_keys() if parameters.parse(p).linear])
    for name in ranges:
        if name not in tensors:
            raise err(source, f"random.ranges.{name}", f"unknown tensor{near(name, tensors)}; "
                                                        f"expected one of {', '.join(tensors)}")
    return {k: _pair(v, source, f"random.ranges.{k}") for k, v in ranges.items()}


def _lists(rnd: Mapping, source: str) -> dict:
    """exact_norm, norm_params (true: every norm) and relu_mixed."""
    kw: dict[str, Any] = {}
    for key in ("exact_norm", "norm_params"):
        if rnd.get(key) not in (None, False):
            v = list(NORMS) if rnd[key] is True else rnd[key]
            if not isinstance(v, list) or any(n not in NORMS for n in v):
                raise err(source, f"random.{key}", f"expected true, false or a list of {', '.join(NORMS)}, "
                                                   f"got {rnd[key]!r}")
            kw[key] = tuple(v)
    if rnd.get("relu_mixed") not in (None, False):
        mode = "rows" if rnd["relu_mixed"] is True else rnd["relu_mixed"]
        if mode not in RELU_MODES:
            raise err(source, "random.relu_mixed", f"expected true, false or one of {', '.join(RELU_MODES)}, "
                                                   f"got {rnd['relu_mixed']!r}")
        kw["relu_mixed"] = mode
    return kw


def _numbers(rnd: Mapping, source: str) -> dict:
    """sparsity, the [lo, hi] bounds, norm_min and x_step (exact)."""
    kw: dict[str, Any] = {}
    if rnd.get("sparsity") not in (None, False):
        p = _exact(rnd["sparsity"], source, "random.sparsity")
        if not (0 <= p < 1):
            raise err(source, "random.sparsity", f"expected a share of zeros in [0, 1), got {rnd['sparsity']}")
        kw["sparsity"] = p
    for key in BOUND_KEYS:
        if rnd.get(key) not in (None, False):
            kw[key] = _pair(rnd[key], source, f"random.{key}", exact=True)
    if "softmax_weights" in kw and not (0 < kw["softmax_weights"][0] and kw["softmax_weights"][1] <= 1):
        raise err(source, "random.softmax_weights", f"expected 0 < low <= high <= 1, got {rnd['softmax_weights']}")
    if rnd.get("norm_min") not in (None, False):
        m = _exact(rnd["norm_min"], source, "random.norm_min")
        if m < 0:
            raise err(source, "random.norm_min", f"expected a bound >= 0 on σ (rms), got {rnd['norm_min']}")
        kw["norm_min"] = m or None
    if rnd.get("x_step") is not None:
        step = _exact(rnd["x_step"], source, "random.x_step")
        if step <= 0 or step.denominator > 100:
            raise err(source, "random.x_step", f"expected a step such as 1 or 1/2 (> 0, denominator <= 100), "
                                               f"got {rnd['x_step']}")
        kw["x_step"] = step
    return kw


def _exact(v: Any, source: str, where: str) -> Fraction:
    from symblock.engine.spec import parse_exact
    q = parse_exact(v, source, where)
    if not isinstance(q, Fraction):
        raise err(source, where, f"expected a rational number such as 1/2, got {v!r}")
    return q
