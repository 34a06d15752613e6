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
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Mapping

from symblock.exercises.checks import (check_activation, check_attention, check_norms, precheck_attention,
                                       static_checks)
from symblock.exercises.constraints import (CONSTRAINT_KEYS, DIFFICULTIES, FLAG_KEYS, MAX_DRAWS,  # noqa: F401
                                            MAX_FORWARDS, NORMS, Constraints, err, has_constraints,
                                            parse_random)
from symblock.exercises.difficulty import PRESETS, apply_difficulty, dims_choices  # noqa: F401
from symblock.exercises.draws import draw_tensor, enumerate_rows, fix_rows, ints, sub_seed  # noqa: F401
from symblock.exercises.flags import add_random_arguments, overrides_from_args  # noqa: F401


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


def from_mapping(data: Mapping, source: str = "<spec>", max_cost: int | None = None):
    """A parsed spec as a BlockSpec, drawing a `random:` section's constraints until they hold
    (engine.spec.from_mapping does the rest: it knows no constraints)."""
    from symblock.engine import spec as specmod
    if has_constraints(data.get("random") if isinstance(data, Mapping) else None):
        return variant(data, source, max_cost=max_cost).spec
    return specmod.from_mapping(data, source)


def load(name_or_path):
    """A built-in example name or a spec file (YAML/JSON) as a BlockSpec: `symblock.load`."""
    from symblock.engine import spec as specmod
    data, source = specmod.read_spec(name_or_path)
    return from_mapping(data, source)


generate = from_mapping  # round-1 name


@dataclass
class Plan:
    """What `variant` draws and how, settled once before the first draw."""
    c: Constraints
    data: dict                   # the spec mapping with the preset filled in
    probe: Any                   # the spec without its drawn tensors (validated dims, block, given)
    graph: Mapping               # step -> its inputs
    drawn: list                  # parameters to draw
    draw_x: bool                 # X is drawn too
    rows_checked: bool           # rows of X are chosen to pass the first norm's checks
    eps: Fraction


def plan(data: Mapping, source: str, overrides: Mapping | None = None) -> Plan:
    """Parse the constraints, fill in the preset, validate the rest, and fail at once on a
    constraint no draw can meet."""
    from symblock.engine import spec as specmod
    from symblock.engine.steps import step_inputs, step_names
    data = merge_random(data, overrides)
    rnd = data.get("random")
    c = parse_random(rnd, source)
    data, preset_random = apply_difficulty(data, c, source)
    if preset_random:
        c = parse_random({**preset_random, **{k: v for k, v in rnd.items() if k != "difficulty"}}, source)
        c = replace(c, difficulty=rnd.get("difficulty"))
    plain = {"seed": c.seed, "low": c.low, "high": c.high}
    base_map = {**{k: v for k, v in data.items() if k != "random"}, "random": plain}
    probe = specmod.from_mapping(base_map, source)  # validates dims, block, weights, given
    dims, opts = probe.dims, probe.options
    if c.staged and c.staged[0] not in step_names(dims, opts):
        raise err(source, "random.staged.step", f"no step {c.staged[0]!r} in this block; expected one of "
                  + ", ".join(step_names(dims, opts)))
    static_checks(c, dims, opts, source)
    weights_raw = data.get("weights") or {}
    drawn = [n for n in specmod.needed_params(dims, opts, set(probe.given))
             if "." not in n and specmod._lookup(weights_raw, n) is None
             and (not n.startswith("b_") or opts.bias)]
    draw_x = probe.X is not None and "X" not in (data.get("inputs") or {})
    eps = Fraction(str(opts.eps))
    rows_checked = (draw_x and opts.norm_position == "pre" and "norm1" not in probe.given
                    and ("norm1" in c.exact_norm or c.no_degenerate_rows))
    if rows_checked:
        enumerate_rows(c, dims.d_model, opts.norm, eps, source)
    return Plan(c, data, probe, step_inputs(dims, opts), drawn, draw_x, rows_checked, eps)


def draw_candidate(p: Plan, s: int, rejections: Counter) -> dict | None:
    """The tensors of one candidate drawn with sub-seed `s`, or None when a row of X could not be
    fixed; cheap checks are the caller's."""
    from symblock.engine.steps import param_shape
    c, dims = p.c, p.probe.dims
    tensors = {n: draw_tensor(s, n, param_shape(n, dims), *c.range_of(n), c.sparsity) for n in p.drawn}
    if p.draw_x:
        lo, hi = c.range_of("X")
        X = draw_tensor(s, "X", (dims.seq_len, dims.d_model), lo, hi)
        if p.rows_checked and not fix_rows(X, s, lo, hi, p.probe.options.norm, p.eps, c, rejections):
            return None
        tensors["X"] = X
    return tensors


def work(p: Plan, tensors: dict, source: str, max_cost: int | None):
    """(spec0, trace0, spec1, trace1): the candidate worked exactly, and again with the staged
    step given rounded (the same pair without staging)."""
    from symblock.engine import block, spec as specmod
    data, c = p.data, p.c
    mapping = {k: v for k, v in data.items() if k != "random"}
    mapping["random"] = {"seed": c.seed, "low": c.low, "high": c.high}
    w = dict(data.get("weights") or {})
    for n in p.drawn:
        m = tensors[n]
        w[n] = m[0] if n.startswith("b_") else (m if data.get("layout", "math") == "math"
                                                else [list(r) for r in zip(*m)])
    mapping["weights"] = w
    if p.draw_x:
        mapping["inputs"] = {**(data.get("inputs") or {}), "X": tensors["X"]}
    spec0 = specmod.from_mapping(mapping, source)
    trace0 = block.forward(spec0, max_cost=max_cost)
    if not c.staged:
        return spec0, trace0, spec0, trace0
    step, k = c.staged
    mapping["given"] = {**(data.get("given") or {}),
                        step: [[e.decimal(k) for e in row] for row in trace0[step].value.rows]}
    spec1 = specmod.from_mapping(mapping, source)
    return spec0, trace0, spec1, block.forward(spec1, max_cost=max_cost)


def variant(data: Mapping, source: str, overrides: Mapping | None = None,
            max_cost: int | None = None) -> Variant:
    """Draw the spec's variant for its `random.seed`: reproducible, all constraints checked on
    exact values, bounded; raises SpecError naming the constraint that could not be met."""
    from symblock.engine import spec as specmod
    p = plan(data, source, overrides)
    c = p.c
    rejections: Counter = Counter()
    forwards = 0
    for attempt in range(c.max_draws):
        tensors = draw_candidate(p, sub_seed(c.seed, attempt), rejections)
        if tensors is None:
            continue
        pre = precheck_attention(tensors, p.probe, c)
        if pre:
            rejections[pre] += 1
            continue
        forwards += 1
        if forwards > MAX_FORWARDS:
            break
        try:
            spec0, trace0, spec1, trace1 = work(p, tensors, source, max_cost)
        except specmod.SpecError as e:
            if e.where.startswith("dims"):
                raise
            rejections["no_degenerate_rows" if c.no_degenerate_rows else "zero_variance"] += 1
            continue
        steps = {st.name: st.value for st in trace0}
        steps.update({st.name: st.value for st in trace1})
        failed = check_attention(steps, p.graph, c) or check_norms(steps, p.graph, p.probe.options.norm, c) \
            or check_activation(steps, c)
        if failed:
            rejections[failed] += 1
            continue
        key = tuple(sorted((n, tuple(map(tuple, t))) for n, t in tensors.items()))
        return Variant(replace(spec1, seed=c.seed), trace1, trace0, attempt + 1, rejections, key, c)
    worst = rejections.most_common(1)[0][0] if rejections else "random"
    counts = ", ".join(f"{k} {v}" for k, v in rejections.most_common())
    raise err(source, f"random.{worst}" if worst != "random" else "random",
              f"no draw met the constraints in {attempt + 1} draws ({min(forwards, MAX_FORWARDS)} worked "
              f"through exactly; rejected by: {counts}); "
              "widen random.ranges, drop a constraint, or raise random.max_draws")


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

