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
      score_range: [-4, 4]          # every raw score S = Q_h K_h^T lies in [lo, hi]
      scaled_range: [-3, 3]         # every softmax input (the scaled score) lies in [lo, hi]: e^x small
      softmax_weights: [0.02, 0.9]  # every live weight of a softmax row with two or more live
                                    #   entries lies in [lo, hi]: neither one-hot nor vanishing
      norm_min: 1/2                 # σ (LayerNorm) / rms (RMSNorm) >= this in every norm row
      x_step: 1/2                   # X entries are multiples of this (half-integers: richer exact-σ rows)
      norm_params: [norm1]          # draw γ (ranges.gamma, default [1, 2]) and β (ranges.beta, [-1, 1])
      distinct_mistakes: true       # no two catalogued mistakes give the same numbers on an asked
                                    #   step: judged by grading on a whole set (worksheet, stress),
                                    #   which skips such seeds; the generator itself ignores it
      staged: {step: attn.out, decimals: 3}   # give this step rounded to k decimals (exact
                                    #   decimals), as the hand-worked article gives A(X); later steps are
                                    #   computed from the given values, so they stay rational
      max_draws: 1000               # candidate blocks tried before giving up (default 1000)
      dims: {d_k: [1, 4], batch: 2} # choices per dims key, picked from the seed (shapes.py)
      padding: [0, 1]               # padded keys at the end of each sequence (true: any count)
      dropout: {p: 1/2, steps: [ffn.act]}   # masks drawn per step (per sequence in a batch)
      generator: 2                  # the draw's version (1 when absent; new worksheets and sets: 2):
                                    #   2 prefers values that are no rounding ties and small
                                    #   denominators (difficulty.GENERATOR2, draws.class_walk, awkward)

How a variant is drawn (`variant`): every drawn tensor has its own stream (spec.draw's scheme, so
attempt 0 of a spec without ranges or sparsity draws exactly what `spec.draw` draws); a rejected
candidate is redrawn with the sub-seed sha256(seed, attempt). Constraints are built into the draws
where they can be: when the first norm reads X (Pre-LN), each row of X is picked from the listed
family of grid rows that pass its row checks (exact σ, non-degenerate, σ >= norm_min): first a σ
class (walking through every combination of classes over consecutive seeds), then a row of
it, so a set meets every σ the grid allows; then, while the attention input is
rational, W_Q and W_K (W_V too for integer_scores) are redrawn on their own streams until the
scores, computed in Fractions, meet score_range / scaled_range / softmax_distinct /
softmax_weights (stage.py: up to STAGE_BATCHES × 256 candidates scored at once in exact integers; a refit counts as a redraw, not a draw). Everything is then
checked again on the exact trace. After `max_draws` candidates the generator raises SpecError
naming the constraint that rejected most, with the numbers of its last failure; constraints that
no draw can meet (exact_scale with d_head 2, no_degenerate_rows with a 2-d LayerNorm, a row family
that is empty) fail before any draw.
A batch (drawn by random.dims.batch, or given) is drawn with its X stacked and meets every
constraint in each sequence (sequences.py). Same spec + seed → same variant on any machine (only `random.random()` and sha256 are used).
"""
from __future__ import annotations

import copy
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Mapping

from symblock.exercises.checks import (attention_input, check_activation, check_attention, check_norms,  # noqa: F401
                                       check_scores, static_checks, wants_attention)
from symblock.exercises.constraints import (CONSTRAINT_KEYS, DIFFICULTIES, FLAG_KEYS, MAX_DRAWS,  # noqa: F401
                                            DRAW_BUDGET, MAX_FORWARDS, NORM_PARAMS, NORMS, STAGE_BATCHES, Constraints, err,
                                            has_constraints, parse_random)
from symblock.exercises.difficulty import apply_difficulty, dims_choices  # noqa: F401
from symblock.exercises.draws import (check_family, draw_tensor, draw_x, fix_rows, ints, pick_rows,  # noqa: F401
                                      row_family, sub_seed)
from symblock.exercises.stage import fit_ffn
from symblock.exercises import sequences, shapes

if TYPE_CHECKING:
    from symblock.engine.block import Trace


@dataclass
class Variant:
    spec: Any                    # the BlockSpec (staged step given, when `staged`)
    trace: Any                   # its exact Trace
    unstaged: Any                # the trace before staging, up to the staged step (`trace` without staging)
    draws: int                   # candidate blocks drawn (accepted one included)
    rejections: Counter          # constraint -> rejected candidates
    key: tuple                   # the drawn tensors ((name, rows), ...): equal keys, equal variants
    constraints: Constraints = field(default_factory=Constraints)
    redraws: Counter = field(default_factory=Counter)  # constraint -> rows of X / attention weights redrawn
    forwards: int = 0            # candidates worked through exactly


def merge_random(data: Mapping, overrides: Mapping | None) -> dict:
    """The mapping with `overrides` (CLI flags) replacing keys of its `random:` section."""
    data = copy.deepcopy(dict(data))
    if overrides:
        rnd = dict(data.get("random") or {})
        rnd.update(overrides)
        data["random"] = rnd
    return data


MODEL_FORMS = ("model",)   # the forms engine.model_spec loads (the rest are blocks, drawn here)


def from_mapping(data: Mapping, source: str = "<spec>", allow_model: bool = True):
    """A parsed spec as a BlockSpec (or, with a `model:` section, a ModelSpec), drawing a `random:`
    section's constraints until they hold (engine.spec.from_mapping does the rest: it knows no
    constraints)."""
    return drawn(data, source, allow_model)[0]


def drawn(data: Mapping, source: str = "<spec>", allow_model: bool = True):
    """(`from_mapping`'s spec, its exact trace when the constraint generator worked it, else None):
    the generator's accepted candidate is already worked through, so a caller that wants the
    trace (a set's variants, drawn again when graded) need not work it a second time."""
    from symblock.engine import block, model_spec
    if model_spec.form_of(data) not in MODEL_FORMS \
            and has_constraints(data.get("random") if isinstance(data, Mapping) else None):
        v = variant(data, source)
        return v.spec, block.Trace(list(v.trace), v.trace.params, v.spec)
    return from_mapping_plain(data, source, allow_model), None


def from_mapping_plain(data: Mapping, source: str, allow_model: bool):
    """`from_mapping` of a spec with no constraints to draw (a model, or a plain block)."""
    from symblock.engine import model_spec, spec as specmod
    from symblock.errors import SpecError
    if model_spec.form_of(data) in MODEL_FORMS:   # a tiny GPT: loaded by the engine's model_spec
        if not allow_model:
            raise SpecError(source, "model", "a model spec (a tiny GPT): this command works on one block; "
                            "`symblock forward` and `symblock verify` take models")
        return model_spec.from_mapping(data, source)
    return specmod.from_mapping(data, source)


def load(name_or_path, allow_model: bool = False):
    """A SPEC (a spec file, a built-in example's name, preset:D: spec_arg.py) as a BlockSpec:
    `symblock.load` (`allow_model=True`: a ModelSpec too, for a spec with a `model:` section)."""
    from symblock.exercises import spec_arg
    data, source = spec_arg.read(name_or_path)
    return from_mapping(data, source, allow_model=allow_model)


generate = from_mapping  # round-1 name


@dataclass
class Plan:
    """What `variant` draws and how, settled once before the first draw."""
    c: Constraints
    data: dict                   # the spec mapping with its difficulty filled in
    probe: Any                   # the spec without its drawn tensors (validated dims, block, given)
    graph: Mapping               # step -> its inputs
    drawn: list                  # parameters to draw (γ, β of norm_params included)
    draw_x: bool                 # X is drawn too
    rows_checked: bool           # rows of X must pass the first norm's row checks
    eps: Fraction
    family: dict | None = None   # σ² -> the grid rows that pass them (None: too many to list)
    split: str | None = None     # relu_mixed on drawn W_1/b_1: the first forward stops after this
                                 #   step (the last sequence's ffn.hidden), where a refit starts


def with_difficulty(data: Mapping, source: str, overrides: Mapping | None = None) -> tuple[dict, Constraints]:
    """The mapping with its difficulty filled in, and the constraints in force (the
    difficulty's under the spec's own)."""
    data = merge_random(data, overrides)
    rnd = data.get("random")
    c = parse_random(rnd, source)
    data = shapes.with_dims(data, c, source)  # random.dims: picked before the difficulty fills the rest
    data, difficulty_random = apply_difficulty(data, c, source)
    if difficulty_random:
        c = parse_random({**difficulty_random, **{k: v for k, v in rnd.items() if k != "difficulty"}}, source)
        c = replace(c, difficulty=rnd.get("difficulty"))
    return data, c


def constraints_of(data: Mapping, source: str, overrides: Mapping | None = None) -> Constraints:
    return with_difficulty(data, source, overrides)[1]


def plan(data: Mapping, source: str, overrides: Mapping | None = None) -> Plan:
    """Parse the constraints, fill in the difficulty, validate the rest, and fail at once on a
    constraint no draw can meet."""
    from symblock.engine import spec as specmod
    from symblock.engine.steps import step_inputs
    data, c = with_difficulty(data, source, overrides)
    plain = {"seed": c.seed, "low": c.low, "high": c.high}
    base_map = shapes.placeholder_batch({**{k: v for k, v in data.items() if k != "random"}, "random": plain},
                                        c, source)
    probe = specmod.from_mapping(base_map, source)  # validates (and sizes) before drawing
    if c.padding is not None or c.dropout is not None:  # drawn masks: the probe's shape, then again
        data = shapes.with_masks(data, c, probe, source)
        base_map = shapes.placeholder_batch({**{k: v for k, v in data.items() if k != "random"},
                                             "random": plain}, c, source)
        probe = specmod.from_mapping(base_map, source)
    dims, opts = probe.dims, probe.options
    static_checks(c, dims, opts, source)
    weights_raw = data.get("weights") or {}
    lns = {NORM_PARAMS[n] for n in c.norm_params}
    drawn = [n for n in specmod.needed_params(dims, opts, set(probe.given))
             if specmod._lookup(weights_raw, n) is None
             and ("." not in n or n.split(".")[0] in lns) and (not n.startswith("b_") or opts.bias)]
    draw_x = all(X is not None for _, X, _ in probe.sequences()) and "X" not in (data.get("inputs") or {})
    eps = Fraction(str(opts.eps))
    rows_checked = (draw_x and opts.norm_position == "pre" and "norm1" not in probe.given
                    and bool("norm1" in c.exact_norm or c.no_degenerate_rows or c.norm_min))
    family = None
    if rows_checked:
        check_family(c, dims.d_model, opts.norm, eps, source)
        family = row_family(c, dims.d_model, opts.norm, eps)
    probe = replace(probe, no_beta=frozenset() if c.generator < 2 else probe.no_beta - set(drawn),  # a drawn β
                    v1_words=c.generator < 2)   # is shown; version 1's sheets keep their words, byte for byte
    return Plan(c, data, probe, step_inputs(dims, opts), drawn, draw_x, rows_checked, eps, family,
                split_step(c, dims, opts, drawn, set(probe.given)))


def split_step(c: Constraints, dims, opts, drawn: list, given: set) -> str | None:
    """Where the first forward stops: the last ffn.hidden when relu_mixed may refit W_1/b_1 and
    no norm (checked before relu_mixed) comes after it, so the checks meet each candidate in the
    order a full forward would and every seed draws the variant it drew without the split."""
    from symblock.engine.steps import batch_prefixes, computed_steps
    hidden = batch_prefixes(dims)[-1] + "ffn.hidden"
    todo = computed_steps(dims, opts, given)
    if not (c.relu_mixed and any(n in ("W_1", "b_1") for n in drawn) and hidden in todo):
        return None
    after = todo[todo.index(hidden) + 1:]
    from symblock.engine import names
    return hidden if after and not any(names.parse(n).stat in ("std", "rms") for n in after) else None


ATTENTION = ("W_Q", "W_K", "b_Q", "b_K")


def draw_candidate(p: Plan, s: int, redraws: Counter) -> tuple[dict | None, str | None]:
    """The tensors of one candidate drawn with sub-seed `s`, or (None, the constraint that failed)
    when no row of X or no attention weights met their cheap checks."""
    from symblock.engine.steps import param_shape
    c, dims = p.c, p.probe.dims
    tensors = {n: draw_tensor(s, n, param_shape(n, dims), *c.range_of(n), c.sparsity) for n in p.drawn}
    if p.draw_x:
        X = draw_x(s, sequences.x_shape(dims), c)  # a batch: its sequences stacked
        if p.family:
            pick_rows(X, s, p.family, c.seed, c.generator)
        elif p.rows_checked and not fix_rows(X, s, p.probe.options.norm, p.eps, c, redraws):
            return None, "rows of X: " + next(iter(redraws), "exact_norm")
        tensors["X"] = X
    if not wants_attention(c):
        return tensors, None
    seqs = sequences.attention_inputs(tensors, p.probe)  # each sequence of a batch
    if seqs is None:
        return tensors, None
    failed = sequences.check_all(seqs, tensors, p.probe, c)
    if failed is None:
        return tensors, None
    redraws[failed.split(":")[0]] += 1
    redraw = [n for n in p.drawn if n in ATTENTION or (c.integer_scores and n in ("W_V", "b_V"))]
    if redraw and sequences.fit_all(seqs, tensors, redraw, p.probe, c, s, STAGE_BATCHES) is not None:
        redraws["attention weights refit"] += 1
        failed = sequences.check_all(seqs, tensors, p.probe, c)  # exact: the float margin is not trusted
    return (tensors, None) if failed is None else (None, failed)


def work(p: Plan, tensors: dict, source: str, prev: tuple | None = None,
         changed: tuple = (), upto: str | None = None):
    """(spec0, trace0, spec1, trace1): the candidate worked exactly, and again with the staged
    step given rounded (the same pair without staging). With staging, trace0 stops at the staged
    step: the steps after it are trace1's. `upto`: trace1 stops after that step (`split`).
    `prev` (this candidate's earlier work) and `changed` (the tensors refitted since): steps that
    read none of them are taken from `prev`; with nothing changed, prev is carried on to the end."""
    from symblock.engine import block, spec as specmod
    from symblock.engine.exact import NEG_INF
    data, c = p.data, p.c
    if prev is not None and not changed:
        spec0, trace0, spec1, trace1 = prev
        trace1 = block.forward(spec1, upto=upto, keep=unchanged(trace1, p.graph, ()))
        return spec0, trace0 if c.staged else trace1, spec1, trace1
    spec0 = specmod.with_tensors(p.probe, {n: tensors[n] for n in p.drawn},
                                 sequences.split(tensors["X"], p.probe.dims) if p.draw_x else None)
    trace0 = block.forward(spec0, upto=c.staged[0] if c.staged else upto,
                           keep=prev and unchanged(prev[1], p.graph, changed))
    if not c.staged:
        return spec0, trace0, spec0, trace0
    step, k = c.staged
    spec1 = specmod.with_given(spec0, {step: [["-oo" if e is NEG_INF else e.decimal(k) for e in row]
                                              for row in trace0[step].value.rows]})
    return spec0, trace0, spec1, block.forward(spec1, upto=upto,
                                               keep=prev and unchanged(prev[3], p.graph, changed))


def unchanged(trace: Trace, graph: Mapping, changed: tuple) -> dict:
    """The computed steps of `trace` that read none of the `changed` tensors, directly or through
    other steps (the graph is in forward order): working them again would give the same values."""
    dirty = set(changed)
    for name, ins in graph.items():
        if any(i in dirty for i in ins):
            dirty.add(name)
    return {s.name: s.value for s in trace if not s.given and s.name not in dirty}


def refit_ffn(p: Plan, tensors: dict, trace: Trace, attempt: int, redraws: Counter) -> bool:
    """relu_mixed failed on the exact trace: refit W_1 / b_1 to the FFN input it read (stage.py)."""
    redraw = [n for n in p.drawn if n in ("W_1", "b_1")]
    if not redraw:
        return False
    from symblock.engine.steps import batch_prefixes
    u = [[[float(e) for e in row] for row in trace[p.graph[prefix + "ffn.hidden"][0]].value.rows]
         for prefix in batch_prefixes(p.probe.dims)]  # each sequence's FFN input
    if fit_ffn(u, tensors, redraw, p.probe, p.c, sub_seed(p.c.seed, attempt), STAGE_BATCHES) is None:
        return False
    redraws["ffn weights refit"] += 1
    return True


def settle(p: Plan, tensors: dict, source: str, attempt: int,
           redraws: Counter) -> tuple[tuple, str | None, int]:
    """(work, the constraint that failed or None, 1 if W_1/b_1 were refitted else 0): the
    candidate worked exactly and checked. With `p.split` the forward stops after ffn.hidden first,
    so that a relu_mixed refit does not throw away the FFN worked on the weights it replaces."""
    w = work(p, tensors, source, upto=p.split)
    failed = exact_checks(p, w[1], w[3])
    if failed and failed.startswith("relu_mixed") and refit_ffn(p, tensors, w[3], attempt, redraws):
        w = work(p, tensors, source, w, ("W_1", "b_1"))
        return w, exact_checks(p, w[1], w[3]), 1
    if failed is None and p.split:  # carried on from ffn.hidden: attention is checked already
        w = work(p, tensors, source, w)
        failed = exact_checks(p, w[1], w[3], attention=False)
    return w, failed, 0


def exact_checks(p: Plan, trace0, trace1, attention: bool = True) -> str | None:
    steps = {st.name: st.value for st in trace0}
    steps.update({st.name: st.value for st in trace1})
    from symblock.engine.steps import batch_prefixes
    prefixes = batch_prefixes(p.probe.dims)  # each sequence of a batch meets every guarantee
    return next(filter(None, (check_attention(steps, p.graph, p.c, b) for b in prefixes if attention)), None) \
        or check_norms(steps, p.graph, p.probe.options.norm, p.c) \
        or next(filter(None, (check_activation(steps, p.c, b) for b in prefixes)), None)


def variant(data: Mapping, source: str, overrides: Mapping | None = None) -> Variant:
    """Draw the spec's variant for its `random.seed`: reproducible, all constraints checked on
    exact values, bounded; raises SpecError naming the constraint that could not be met."""
    from symblock.engine import spec as specmod
    p = plan(data, source, overrides)
    c = p.c
    rejections, redraws, last = Counter(), Counter(), {}
    forwards = 0
    max_draws, max_forwards = draw_limits(c, p.probe.dims, p.probe.options, p.drawn, p.draw_x,
                                          set(p.probe.given))
    for attempt in range(max_draws):
        tensors, failed = draw_candidate(p, sub_seed(c.seed, attempt), redraws)
        if tensors is not None:
            if forwards >= max_forwards:
                break
            forwards += 1
            try:
                (spec0, trace0, spec1, trace1), failed, refitted = settle(p, tensors, source,
                                                                         attempt, redraws)
                forwards += refitted
            except specmod.SpecError as e:
                if e.where.startswith("dims"):
                    raise
                failed = ("no_degenerate_rows" if c.no_degenerate_rows else "zero_variance") + ": " + e.message
        if failed is None and c.generator >= 2 and attempt < PREFER_DRAWS and forwards < max_forwards // 2:
            failed = awkward(trace1, bool(p.family))   # a preference: after PREFER_DRAWS draws, any candidate will do
            if failed is not None:
                redraws["generator 2: " + failed.split(":")[0]] += 1
                continue
        if failed is None:
            key = tuple(sorted((n, tuple(map(tuple, t))) for n, t in tensors.items()))
            return Variant(replace(spec1, seed=c.seed), trace1, trace0, attempt + 1, rejections, key, c,
                           redraws, forwards)
        name = failed.split(":")[0]
        rejections[name] += 1
        last[name] = failed
    raise give_up(source, attempt + 1, forwards, rejections, last)


PREFER_DRAWS = 8    # generator 2: draws in which a candidate with an awkward value is passed over


def awkward(trace, rows_picked: bool) -> str | None:
    """Generator 2's preference, on the exact trace: the first computed step with a rational
    entry that can be a rounding tie (at 2 or more places) or whose denominator has a prime
    factor above 5, or None. With `rows_picked` the first norm's statistics are left to the σ
    class walk that chose X's rows (draws.class_walk): redraws keep the class."""
    from symblock.engine import names
    from symblock.exercises.draws import smooth, tie_prone
    for st in trace:
        parsed = names.parse(st.name)
        if st.given or (rows_picked and parsed.norm == "norm1" and parsed.stat):
            continue
        for row in st.value.rows:
            for e in row:
                q = getattr(e, "q", None)
                if q is None:
                    continue
                den = int(q.q)
                if tie_prone(Fraction(1, den)):
                    return f"ties: {st.name} has {q}, a rounding tie at some places"
                if not smooth(den):
                    return f"denominators: {st.name} has {q}"
    return None


def draw_limits(c: Constraints, dims, opts, drawn: list, draw_x: bool, given: set) -> tuple[int, int]:
    """How many candidates to draw and how many to work through exactly, decided before drawing:
    random.max_draws, but no more than DRAW_BUDGET entries drawn and prechecked in all, and
    MAX_FORWARDS exact forwards, but no more than the engine's cost limit buys (engine/cost.py)."""
    from symblock.engine import cost
    from symblock.engine.steps import param_shape
    n, d = max(dims.batch, 1) * dims.seq_len, dims.d_model
    per_draw = sum(math.prod(param_shape(x, dims)) for x in drawn) + (n * d if draw_x else 0)
    if wants_attention(c):
        per_draw += 3 * n * d * d + n * n * d  # the integer attention fit's projections and scores
    per_forward = cost.cost(dims, opts, given) * (2 if c.staged else 1)
    return (max(1, min(c.max_draws, DRAW_BUDGET // max(per_draw, 1))),
            max(1, min(MAX_FORWARDS, cost.current_limit() // max(per_forward, 1))))


def give_up(source: str, draws: int, forwards: int, rejections: Counter, last: dict):
    worst = rejections.most_common(1)[0][0] if rejections else "random"
    counts = ", ".join(f"{k} {v}" for k, v in rejections.most_common())
    where = f"random.{worst}" if worst in CONSTRAINT_KEYS else "random"
    return err(source, where, f"no draw met the constraints in {draws} draws ({forwards} worked through "
               f"exactly; rejected by: {counts}); last failure: {last.get(worst, '')}; "
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

