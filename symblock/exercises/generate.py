"""Hand-friendly exercises: draw integer weights and inputs from a seed until stated guarantees hold.

The spec's `random:` section may state constraints besides `seed`, `low`, `high`:

    random:
      seed: 7
      difficulty: medium            # easy | medium | hard: fills dims, block options, constraints
      ranges: {X: [-2, 2], weights: [-1, 1], biases: [-1, 1], W_Q: [0, 1]}
      sparsity: 0.25                # at least this share of zeros in each drawn weight matrix W_*
      integer_scores: true          # attn.q, attn.k, attn.v and every head's scores are integers
      exact_scale: true             # d_head is a perfect square (1/sqrt(d_k) rational), or scale none
      exact_norm: true              # σ (LayerNorm) / rms (RMSNorm) rational in every norm row whose
                                    #   input row is rational
      no_degenerate_rows: true      # no norm row with zero variance (mean square), and none whose
                                    #   normalised values are forced to ±1 (all |x_j − μ| equal;
                                    #   RMSNorm: all |x_j| equal) — so LayerNorm needs d_model >= 3
      relu_mixed: rows              # the activation's input (ffn.hidden) has an entry > 0 and one
                                    #   < 0 in every row (true = rows), every column, or both
      softmax_distinct: true        # no two live (unmasked) entries of a softmax row are equal
      score_range: [-4, 4]          # every raw score S = Q_h K_h^T lies in [lo, hi] (so does the
                                    #   softmax input, since 1/sqrt(d_k) <= 1 only shrinks it)
      staged: {step: attn.out, decimals: 3}   # give this step rounded to k decimals (exact
                                    #   decimals), as the seed article gives A(X); later steps are
                                    #   computed from the given values, so they stay rational
      max_draws: 1000               # candidate blocks tried before giving up (default 1000)

How a variant is drawn (`variant`): every drawn tensor has its own stream (spec.draw's scheme, so
attempt 0 of a spec without ranges or sparsity draws exactly what `spec.draw` draws); a rejected
candidate is redrawn with the sub-seed sha256(seed, attempt). Cheap exact checks on a partial
computation run first: when the first norm reads X (Pre-LN), each row of X is redrawn on its own
until it satisfies exact_norm / no_degenerate_rows. The rest is checked on the exact trace. After
`max_draws` candidates the generator raises SpecError naming the constraint that rejected most;
constraints that no draw can meet (exact_scale with d_head 2, no_degenerate_rows with a 2-d
LayerNorm, exact_norm on rows no integer row in range satisfies) fail before any draw.
Same spec + seed → same variant on any machine (only `random.random()` and sha256 are used).
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import math
import random as _random
from collections import Counter
from dataclasses import dataclass, field, replace
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

# Difficulty presets: dims are drawn from these choices (stream "dims"), block options and random
# constraints fill whatever the spec leaves out (the spec's own values win).
PRESETS: dict[str, dict[str, Any]] = {
    "easy": {   # the seed article's shape: Post-LN, integer scores, A(X) given to 2 decimals
        "dims": {"seq_len": (2, 3), "d_model": (3, 4), "d_ff": (2, 3, 4), "heads": (1,)},
        "block": {"norm_position": "post", "norm": "layernorm", "eps": 0, "activation": "relu",
                  "causal": False, "bias": False},
        "random": {"ranges": {"X": [-1, 2], "weights": [-1, 1]}, "integer_scores": True,
                   "exact_scale": True, "softmax_distinct": True, "score_range": [-6, 6],
                   "no_degenerate_rows": True, "relu_mixed": "rows",
                   "staged": {"step": "attn.out", "decimals": 2}},
    },
    "medium": {  # Pre-LN, exact σ for the first norm, rational scale, work e^x exactly
        "dims": {"seq_len": (3,), "d_model": (4,), "d_ff": (3, 4), "heads": (1,)},
        "block": {"norm_position": "pre", "norm": "layernorm", "eps": 0, "activation": "relu",
                  "attention_scale": "sqrt_dk", "causal": False, "bias": False},
        "random": {"ranges": {"X": [-2, 2], "weights": [-1, 1]}, "exact_scale": True,
                   "exact_norm": True, "no_degenerate_rows": True, "softmax_distinct": True,
                   "score_range": [-6, 6], "relu_mixed": "rows"},
    },
    "hard": {    # GPT-2's shape: Pre-LN, two causal heads, exact GELU, biases, final norm
        "dims": {"seq_len": (3, 4), "d_model": (4,), "d_ff": (4, 6, 8), "heads": (2,)},
        "block": {"norm_position": "pre", "norm": "layernorm", "eps": 0, "activation": "gelu",
                  "attention_scale": "sqrt_dk", "causal": True, "bias": True, "final_norm": True},
        "random": {"ranges": {"X": [-3, 3], "weights": [-2, 2], "biases": [-1, 1]},
                   "exact_norm": ["norm1"], "no_degenerate_rows": True, "softmax_distinct": True,
                   "relu_mixed": "rows"},
    },
}


def _err(source: str, where: str, message: str):
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
        raise _err(source, where, f"expected true or false, got {v!r}")
    return v


def _pair(v: Any, source: str, where: str, exact: bool = False) -> tuple:
    from symblock.engine.spec import int_field, parse_exact
    if not isinstance(v, list) or len(v) != 2:
        raise _err(source, where, f"expected [low, high], e.g. [-2, 2], got {v!r}")
    if exact:
        lo, hi = (Fraction(str(parse_exact(x, source, f"{where}[{i}]"))) for i, x in enumerate(v))
    else:
        lo, hi = (int_field(x, source, f"{where}[{i}]", lo=-1000, hi=1000) for i, x in enumerate(v))
    if lo > hi:
        raise _err(source, where, f"expected low <= high, got [{v[0]}, {v[1]}]")
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
        raise _err(source, "random.high", f"expected high >= low = {kw['low']}, got {kw['high']}")
    if "difficulty" in rnd:
        if rnd["difficulty"] not in DIFFICULTIES:
            raise _err(source, "random.difficulty", f"expected one of {', '.join(DIFFICULTIES)}, "
                                                    f"got {rnd['difficulty']!r}")
        kw["difficulty"] = rnd["difficulty"]
    ranges = rnd.get("ranges") or {}
    if not isinstance(ranges, dict):
        raise _err(source, "random.ranges", "expected a mapping such as {X: [-2, 2], weights: [-1, 1]}")
    from symblock.engine.spec import all_param_keys
    tensors = ("X", "weights", "biases", *[p for p in all_param_keys() if p.startswith(("W_", "b_"))])
    for name in ranges:
        if name not in tensors:
            raise _err(source, f"random.ranges.{name}", f"unknown tensor; expected one of {', '.join(tensors)}")
    kw["ranges"] = {k: _pair(v, source, f"random.ranges.{k}") for k, v in ranges.items()}
    if rnd.get("sparsity") is not None:
        p = parse_exact(rnd["sparsity"], source, "random.sparsity")
        if not (0 <= p < 1):
            raise _err(source, "random.sparsity", f"expected a share of zeros in [0, 1), got {rnd['sparsity']}")
        kw["sparsity"] = Fraction(str(p))
    for key in FLAG_KEYS:
        if key in rnd:
            kw[key] = _bool(rnd[key], source, f"random.{key}")
    if rnd.get("exact_norm") not in (None, False):
        v = rnd["exact_norm"]
        v = list(NORMS) if v is True else v
        if not isinstance(v, list) or any(n not in NORMS for n in v):
            raise _err(source, "random.exact_norm", f"expected true, false or a list of {', '.join(NORMS)}, "
                                                    f"got {rnd['exact_norm']!r}")
        kw["exact_norm"] = tuple(v)
    if rnd.get("relu_mixed") not in (None, False):
        mode = "rows" if rnd["relu_mixed"] is True else rnd["relu_mixed"]
        if mode not in RELU_MODES:
            raise _err(source, "random.relu_mixed", f"expected true, false or one of {', '.join(RELU_MODES)}, "
                                                    f"got {rnd['relu_mixed']!r}")
        kw["relu_mixed"] = mode
    if rnd.get("score_range") is not None:
        kw["score_range"] = _pair(rnd["score_range"], source, "random.score_range", exact=True)
    if rnd.get("staged") is not None:
        st = rnd["staged"]
        check_keys(st, ("step", "decimals"), source, "random.staged")
        step = st.get("step")
        if not isinstance(step, str):
            raise _err(source, "random.staged.step", f"expected a step name such as attn.out, got {step!r}")
        kw["staged"] = (step, int_field(st.get("decimals", 3), source, "random.staged.decimals", lo=0, hi=12))
    if "max_draws" in rnd:
        kw["max_draws"] = int_field(rnd["max_draws"], source, "random.max_draws", lo=1, hi=10**6)
    return Constraints(**kw)


# ---------------------------------------------------------------- drawing

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


def apply_difficulty(data: dict, c: Constraints, source: str) -> tuple[dict, dict]:
    """The mapping with the preset's dims and block options filled in where the spec is silent,
    and the preset's random constraints under the spec's own."""
    if c.difficulty is None:
        return data, {}
    preset = PRESETS[c.difficulty]
    data = copy.deepcopy(data)
    dims = dict(data.get("dims") or {})
    for key, choices in preset["dims"].items():
        if key not in dims:
            dims[key] = choices[ints(c.seed, f"dims.{key}", 1, 0, len(choices) - 1)[0]]
    data["dims"] = dims
    block = dict(data.get("block") or {})
    for key, value in preset["block"].items():
        block.setdefault(key, value)
    if "attention_scale" not in block:  # easy: exact scale by choosing `none` when d_head is not square
        d_head = dims["d_model"] // dims.get("heads", 1)
        block["attention_scale"] = "sqrt_dk" if math.isqrt(d_head) ** 2 == d_head else "none"
    data["block"] = block
    return data, dict(preset["random"])


# ---------------------------------------------------------------- exact checks

def _rat(e) -> Fraction | None:
    from symblock.engine import exact
    if isinstance(e, exact.Real) and e.is_rational:
        return Fraction(int(e.q.p), int(e.q.q))
    return None


def _sign(e) -> int:
    from symblock.engine import exact
    try:
        return e.sign()
    except exact.UndecidableError:
        return 0  # indistinguishable from zero: treat as zero (the draw is rejected)


def _equal(a, b) -> bool:
    ra, rb = _rat(a), _rat(b)
    if ra is not None and rb is not None:
        return ra == rb
    return _sign(a - b) == 0


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
    if exact_norm and (m + eps == 0 or not _is_square(m + eps)):  # σ = 0 would divide by zero
        return "exact_norm"
    return None


def _is_square(q: Fraction) -> bool:
    return q >= 0 and math.isqrt(q.numerator) ** 2 == q.numerator and \
        math.isqrt(q.denominator) ** 2 == q.denominator


def norm_names_in(steps: Mapping) -> list[str]:
    return [n[:-4] for n in steps if n.endswith((".std", ".rms"))]


def check_norms(steps: Mapping, graph: Mapping, norm: str, c: Constraints) -> str | None:
    """exact_norm and no_degenerate_rows on the exact values of every computed norm."""
    for name in norm_names_in(steps):
        stat = f"{name}.mean" if norm == "layernorm" else f"{name}.ms"
        src = graph[stat][0]
        if src not in steps:
            continue
        x = steps[src].rows
        root = steps[f"{name}.std" if norm == "layernorm" else f"{name}.rms"].rows
        for i, row in enumerate(x):
            if c.no_degenerate_rows:
                if norm == "layernorm":
                    mu = steps[f"{name}.mean"].rows[i][0]
                    dev = [e - mu for e in row]
                else:
                    dev = list(row)
                sq = [e * e for e in dev]  # all equal: zero variance, or every value forced to ±1
                if all(_equal(sq[0], s) for s in sq[1:]):
                    return "no_degenerate_rows"
            if name in c.exact_norm and all(_rat(e) is not None for e in row) and _rat(root[i][0]) is None:
                return "exact_norm"
    return None


def check_attention(steps: Mapping, graph: Mapping, c: Constraints) -> str | None:
    from symblock.engine import exact
    if c.integer_scores:
        for name, v in steps.items():
            if name in ("attn.q", "attn.k", "attn.v") or (name.startswith("attn.h") and name.endswith(".scores")):
                for row in v.rows:
                    for e in row:
                        r = _rat(e)
                        if r is None or r.denominator != 1:
                            return "integer_scores"
    heads = sorted(n[:-len(".weights")] for n in steps if n.startswith("attn.h") and n.endswith(".weights"))
    if c.score_range is not None:
        lo, hi = c.score_range
        lo_r, hi_r = exact.from_sympy(_sym(lo)), exact.from_sympy(_sym(hi))
        for h in heads:
            if f"{h}.scores" not in steps:
                continue
            for row in steps[f"{h}.scores"].rows:
                for e in row:
                    r = _rat(e)
                    if r is not None:
                        if not lo <= r <= hi:
                            return "score_range"
                    elif _sign(e - lo_r) < 0 or _sign(e - hi_r) > 0:
                        return "score_range"
    if c.softmax_distinct:
        for h in heads:
            src = graph[f"{h}.weights"][0]
            if src not in steps:
                continue
            for row in steps[src].rows:
                live = [e for e in row if e is not exact.NEG_INF]
                for a, b in itertools.combinations(live, 2):
                    if _equal(a, b):
                        return "softmax_distinct"
    return None


def _sym(q: Fraction):
    import sympy
    return sympy.Rational(q.numerator, q.denominator)


def check_activation(steps: Mapping, c: Constraints) -> str | None:
    if not c.relu_mixed or "ffn.hidden" not in steps or "ffn.act" not in steps:
        return None
    signs = [[_sign(e) for e in row] for row in steps["ffn.hidden"].rows]
    lines = []
    if c.relu_mixed in ("rows", "both"):
        lines += signs
    if c.relu_mixed in ("columns", "both"):
        lines += [list(col) for col in zip(*signs)]
    if any(not (1 in line and -1 in line) for line in lines):
        return "relu_mixed"
    return None


# ---------------------------------------------------------------- the generator

@dataclass
class Variant:
    spec: Any                    # the BlockSpec (staged step given, when `staged`)
    trace: Any                   # its exact Trace
    unstaged: Any                # the trace before staging (the same as `trace` without staging)
    draws: int                   # candidate blocks drawn (accepted one included)
    rejections: Counter          # constraint -> rejected candidates (and rows of X)
    key: tuple                   # the drawn tensors ((name, rows), ...): equal keys, equal variants
    constraints: Constraints = field(default_factory=Constraints)


def merge_random(data: Mapping, overrides: Mapping | None) -> dict:
    """The mapping with `overrides` (CLI flags) replacing keys of its `random:` section."""
    data = copy.deepcopy(dict(data))
    if overrides:
        rnd = dict(data.get("random") or {})
        rnd.update(overrides)
        data["random"] = rnd
    return data


def from_mapping(data: Mapping, source: str = "<spec>", max_cost: int | None = None, allow_model: bool = True):
    """A parsed spec as a BlockSpec (or, with a `model:` section, a ModelSpec), drawing a `random:`
    section's constraints until they hold (engine.spec.from_mapping does the rest: it knows no
    constraints)."""
    from symblock.engine import model_spec, spec as specmod
    from symblock.errors import SpecError
    if model_spec.is_model(data):
        if not allow_model:
            raise SpecError(source, "model", "a model spec (a tiny GPT): this command works on one block; "
                            "`symblock forward` and `symblock verify` take models")
        return model_spec.from_mapping(data, source)
    if has_constraints(data.get("random") if isinstance(data, Mapping) else None):
        return variant(data, source, max_cost=max_cost).spec
    return specmod.from_mapping(data, source)


def load(name_or_path, allow_model: bool = False):
    """A built-in example name or a spec file (YAML/JSON) as a BlockSpec: `symblock.load`
    (`allow_model=True`: a ModelSpec too, for a spec with a `model:` section)."""
    from symblock.engine import spec as specmod
    data, source = specmod.read_spec(name_or_path)
    return from_mapping(data, source, allow_model=allow_model)


generate = from_mapping  # round-1 name


def variant(data: Mapping, source: str, overrides: Mapping | None = None,
            max_cost: int | None = None) -> Variant:
    """Draw the spec's variant for its `random.seed`: reproducible, all constraints checked on
    exact values, bounded; raises SpecError naming the constraint that could not be met."""
    from symblock.engine import block, spec as specmod
    from symblock.engine.steps import param_shape, step_inputs, step_names
    data = merge_random(data, overrides)
    rnd = data.get("random")
    c = parse_random(rnd, source)
    data, preset_random = apply_difficulty(data, c, source)
    if preset_random:
        c = parse_random({**preset_random, **{k: v for k, v in rnd.items() if k != "difficulty"}}, source)
        c = replace(c, difficulty=rnd.get("difficulty"))
    plain = {"seed": c.seed, "low": c.low, "high": c.high}
    base_map = {**{k: v for k, v in data.items() if k != "random"}, "random": plain}
    given_raw = data.get("given") or {}
    probe = specmod.from_mapping(base_map, source)  # validates dims, block, weights, given
    dims, opts = probe.dims, probe.options
    graph = step_inputs(dims, opts)
    if c.staged and c.staged[0] not in step_names(dims, opts):
        raise _err(source, "random.staged.step", f"no step {c.staged[0]!r} in this block; expected one of "
                   + ", ".join(step_names(dims, opts)))
    _static_checks(c, dims, opts, source)

    weights_raw = data.get("weights") or {}
    layout = data.get("layout", "math")
    drawn = [n for n in specmod.needed_params(dims, opts, set(probe.given))
             if "." not in n and specmod._lookup(weights_raw, n) is None
             and (not n.startswith("b_") or opts.bias)]
    draw_x = probe.X is not None and "X" not in (data.get("inputs") or {})
    eps = Fraction(str(opts.eps))
    x_rows_checked = (draw_x and opts.norm_position == "pre" and "norm1" not in probe.given
                      and ("norm1" in c.exact_norm or c.no_degenerate_rows))
    if x_rows_checked:
        _enumerate_rows(c, dims.d_model, opts.norm, eps, source)

    rejections: Counter = Counter()
    forwards = 0
    for attempt in range(c.max_draws):
        s = sub_seed(c.seed, attempt)
        tensors = {n: draw_tensor(s, n, param_shape(n, dims), *c.range_of(n), c.sparsity) for n in drawn}
        if draw_x:
            lo, hi = c.range_of("X")
            X = draw_tensor(s, "X", (dims.seq_len, dims.d_model), lo, hi)
            if x_rows_checked and not _fix_rows(X, s, lo, hi, opts.norm, eps, c, rejections):
                continue
            tensors["X"] = X
        pre = _precheck_attention(tensors, probe, c)
        if pre:
            rejections[pre] += 1
            continue
        forwards += 1
        if forwards > MAX_FORWARDS:
            break
        mapping = {k: v for k, v in data.items() if k != "random"}
        mapping["random"] = {"seed": c.seed, "low": c.low, "high": c.high}
        w = dict(weights_raw)
        for n in drawn:
            m = tensors[n]
            w[n] = m[0] if n.startswith("b_") else (m if layout == "math" else [list(r) for r in zip(*m)])
        mapping["weights"] = w
        if draw_x:
            mapping["inputs"] = {**(data.get("inputs") or {}), "X": tensors["X"]}
        try:
            spec0 = specmod.from_mapping(mapping, source)
            trace0 = block.forward(spec0, max_cost=max_cost)
            spec1, trace1 = spec0, trace0
            if c.staged:
                step, k = c.staged
                mapping["given"] = {**given_raw, step: [[e.decimal(k) for e in row]
                                                        for row in trace0[step].value.rows]}
                spec1 = specmod.from_mapping(mapping, source)
                trace1 = block.forward(spec1, max_cost=max_cost)
        except specmod.SpecError as e:
            if e.where.startswith("dims"):
                raise
            rejections["no_degenerate_rows" if c.no_degenerate_rows else "zero_variance"] += 1
            continue
        steps = {st.name: st.value for st in trace0}
        steps.update({st.name: st.value for st in trace1})
        failed = check_attention(steps, graph, c) or check_norms(steps, graph, opts.norm, c) \
            or check_activation(steps, c)
        if failed:
            rejections[failed] += 1
            continue
        key = tuple(sorted((n, tuple(map(tuple, t))) for n, t in tensors.items()))
        spec1 = replace(spec1, seed=c.seed)
        return Variant(spec1, trace1, trace0, attempt + 1, rejections, key, c)
    worst = rejections.most_common(1)[0][0] if rejections else "random"
    counts = ", ".join(f"{k} {v}" for k, v in rejections.most_common())
    raise _err(source, f"random.{worst}" if worst != "random" else "random",
               f"no draw met the constraints in {attempt + 1} draws ({min(forwards, MAX_FORWARDS)} worked "
               f"through exactly; rejected by: {counts}); "
               "widen random.ranges, drop a constraint, or raise random.max_draws")


def _fractions(m) -> list | None:
    from flint import fmpq
    out = []
    for row in m.tolist():
        if not all(e.is_Rational for e in row):
            return None
        out.append([fmpq(int(e.p), int(e.q)) for e in row])
    return out


def _mm(a: list, b: list) -> list:
    cols = list(zip(*b))
    return [[sum(x * y for x, y in zip(r, col)) for col in cols] for r in a]


def _precheck_attention(tensors: dict, probe, c: Constraints) -> str | None:
    """integer_scores, score_range and softmax_distinct in Fractions before any exact forward,
    when the attention input is rational: X (Post-LN) or norm1(X) with rational σ (Pre-LN)."""
    if not (c.integer_scores or c.score_range or c.softmax_distinct):
        return None
    dims, opts = probe.dims, probe.options
    if any(s.startswith("attn.") or s in ("x", "norm1") for s in probe.given) or "X" not in tensors:
        return None
    from flint import fmpq
    X = [[fmpq(v) for v in row] for row in tensors["X"]]
    if opts.norm_position == "pre":
        gamma, beta = (_fractions(probe.params[f"ln1.{p}"]) if f"ln1.{p}" in probe.params else None
                       for p in ("gamma", "beta"))
        if gamma is None or (opts.norm == "layernorm" and beta is None):
            return None
        eps, d, rows = fmpq(*Fraction(str(opts.eps)).as_integer_ratio()), dims.d_model, []
        for row in X:
            mu = sum(row) / d if opts.norm == "layernorm" else fmpq(0)
            dev = [v - mu for v in row]
            m = sum(v * v for v in dev) / d + eps
            p, q = int(m.p), int(m.q)
            if m == 0 or math.isqrt(p) ** 2 != p or math.isqrt(q) ** 2 != q:
                return None
            root = fmpq(math.isqrt(p), math.isqrt(q))
            rows.append([v / root * g + (beta[0][j] if beta else 0) for j, (v, g) in enumerate(zip(dev, gamma[0]))])
        X = rows

    def param(name):
        if name in tensors:
            t = tensors[name]
            return [[fmpq(v) for v in row] for row in t]
        return _fractions(probe.params[name]) if name in probe.params else None
    proj = {}
    for p in "QKV" if c.integer_scores else "QK":
        W = param(f"W_{p}")
        if W is None:
            return None
        y = _mm(X, W)
        b = param(f"b_{p}") if opts.bias or f"b_{p}" in probe.params else None
        if b is not None:
            y = [[v + bj for v, bj in zip(row, b[0])] for row in y]
        proj[p] = y
    if c.integer_scores and any(v.q != 1 for m in proj.values() for row in m for v in row):
        return "integer_scores"
    dh = dims.d_head
    lo, hi = (fmpq(*b.as_integer_ratio()) for b in c.score_range) if c.score_range else (None, None)
    for h in range(dims.heads):
        q = [row[h * dh:(h + 1) * dh] for row in proj["Q"]]
        k = [row[h * dh:(h + 1) * dh] for row in proj["K"]]
        S = _mm(q, [list(col) for col in zip(*k)])
        for i, row in enumerate(S):
            if c.integer_scores and any(v.q != 1 for v in row):
                return "integer_scores"
            if c.score_range and any(not lo <= v <= hi for v in row):
                return "score_range"
            live = row[:i + 1] if opts.causal else row
            if c.softmax_distinct and len(set(live)) < len(live):
                return "softmax_distinct"
    return None


def _static_checks(c: Constraints, dims, opts, source: str) -> None:
    """Constraints that no draw can change: fail before drawing."""
    if c.exact_scale and opts.attention_scale != "none":
        d = dims.d_head
        if math.isqrt(d) ** 2 != d:
            raise _err(source, "random.exact_scale", f"d_head = {dims.d_model}/{dims.heads} = {d} is not a "
                       "perfect square, so 1/sqrt(d_k) is irrational; choose d_model/heads in 1, 4, 9, 16, … "
                       "or block.attention_scale: none")
    if c.no_degenerate_rows and opts.norm == "layernorm" and dims.d_model <= 2:
        raise _err(source, "random.no_degenerate_rows", f"with d_model = {dims.d_model} every LayerNorm row "
                   "normalises to ±1 (or has zero variance); use d_model >= 3")
    if c.no_degenerate_rows and opts.norm == "rmsnorm" and dims.d_model <= 1:
        raise _err(source, "random.no_degenerate_rows", "with d_model = 1 every RMSNorm row normalises to ±1")


def _enumerate_rows(c: Constraints, d: int, norm: str, eps: Fraction, source: str) -> None:
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
    raise _err(source, f"random.{which}", f"no row of {d} integers in {lo}..{hi} is {what}"
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


def _fix_rows(X: list, seed: int, lo: int, hi: int, norm: str, eps: Fraction, c: Constraints,
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


# ---------------------------------------------------------------- CLI flags (stress, worksheet)

def add_random_arguments(p) -> None:
    """Flags that override the spec's `random:` section (the same keys, same validation)."""
    g = p.add_argument_group("random section overrides")
    g.add_argument("--difficulty", choices=DIFFICULTIES, help="preset: sizes, options and constraints")
    g.add_argument("--require", action="append", default=[], metavar="NAME",
                   choices=(*FLAG_KEYS, "exact_norm", "relu_mixed"),
                   help="turn a constraint on (repeatable): " + ", ".join((*FLAG_KEYS, "exact_norm", "relu_mixed")))
    g.add_argument("--range", action="append", default=[], metavar="TENSOR=LO:HI",
                   help="entry range of a tensor or group (X, weights, biases, W_Q, ...), e.g. X=-2:2")
    g.add_argument("--sparsity", metavar="P", help="share of zeros in each drawn weight matrix, e.g. 0.25")
    g.add_argument("--score-range", metavar="LO:HI", help="bound every raw attention score, e.g. -4:4")
    g.add_argument("--staged", metavar="STEP:K", help="give STEP rounded to K decimals, e.g. attn.out:3")
    g.add_argument("--max-draws", type=int, metavar="N", help=f"candidate draws before giving up (default {MAX_DRAWS})")


def overrides_from_args(args) -> dict:
    """The `random:` keys the flags set (validated later by parse_random, naming random.KEY)."""
    from symblock.errors import UsageError

    def pair(text: str, flag: str, conv=int) -> list:
        lo, sep, hi = text.rpartition(":")
        try:
            if not sep:
                raise ValueError
            return [conv(lo), conv(hi)]
        except ValueError:
            raise UsageError(f"{flag}: expected LO:HI, got {text!r}") from None
    out: dict[str, Any] = {}
    if getattr(args, "difficulty", None):
        out["difficulty"] = args.difficulty
    for name in getattr(args, "require", None) or []:
        out[name] = True
    ranges = {}
    for item in getattr(args, "range", None) or []:
        name, eq, rng = item.partition("=")
        if not eq:
            raise UsageError(f"--range: expected TENSOR=LO:HI, got {item!r}")
        ranges[name] = pair(rng, "--range")
    if ranges:
        out["ranges"] = ranges
    if getattr(args, "sparsity", None) is not None:
        out["sparsity"] = args.sparsity
    if getattr(args, "score_range", None):
        out["score_range"] = pair(args.score_range, "--score-range", str)
    if getattr(args, "staged", None):
        step, k = pair(args.staged, "--staged", str)
        if not k.isdigit():
            raise UsageError(f"--staged: expected STEP:K with K a whole number, got {args.staged!r}")
        out["staged"] = {"step": step, "decimals": int(k)}
    if getattr(args, "max_draws", None) is not None:
        out["max_draws"] = args.max_draws
    return out


def space_bound(v: Variant) -> int:
    """How many distinct tensor draws this variant's dims and ranges allow (an upper bound on the
    distinct variants with these dims)."""
    total = 1
    for name, t in v.key:
        n = len(t) * len(t[0])
        lo, hi = v.constraints.range_of(name)
        r = hi - lo + 1
        if v.constraints.sparsity and name.startswith("W_"):
            k = math.ceil(v.constraints.sparsity * n)
            total *= math.comb(n, k) * r ** (n - k)
        else:
            total *= r ** n
    return total


def dims_choices(data: Mapping, c: Constraints) -> int:
    """How many dims the difficulty preset can pick for this spec (1 without a preset)."""
    if not c.difficulty:
        return 1
    given = data.get("dims") or {}
    return math.prod(len(ch) for k, ch in PRESETS[c.difficulty]["dims"].items() if k not in given)
