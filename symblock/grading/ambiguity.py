"""Is a diagnosis ever ambiguous? Two catalogued mistakes (mistakes.CATALOGUE) that give the same
numbers on an asked step cannot be told apart by the checker, so an exercise set for a class
turns such variants down (`random.distinct_mistakes`, applied by `worksheet --variants` and
`stress`, which skip the seed as they skip an unusable one)."""
from __future__ import annotations

import math

from symblock.engine import exact
from symblock.grading.mistakes import CATALOGUE

# Slips that divide the scores by a wrong factor: when two factors are equal for the block's dims
# (√d_model = d_k when d_model = 4 and heads = 2) the two slips are one formula, whatever the
# numbers, so no draw can tell them apart; such structural ties are not held against a variant.
SCALE_FACTORS = {"attn_no_scale": lambda d: 1.0, "attn_scale_d_model": lambda d: math.sqrt(d.d_model),
                 "attn_scale_no_sqrt": lambda d: float(d.d_head)}


def structural_ties(spec) -> set[frozenset]:
    """Pairs of mistake codes that are the same formula for this block's dims."""
    f = {code: fn(spec.dims) for code, fn in SCALE_FACTORS.items()}
    return {frozenset((a, b)) for a in f for b in f if a < b and math.isclose(f[a], f[b])}


def rounded(value, places: int) -> tuple:
    out = []
    for row in value.rows:
        for e in row:
            if e is exact.NEG_INF:
                out.append("-inf")
                continue
            try:
                out.append(str(e.decimal(places)))
            except exact.UndecidableError:   # a rounding tie: both neighbours are fair
                out.append(e.digits(places + 3))
    return tuple(out)


def ambiguous(trace, ask, places: int = 3) -> str | None:
    """"distinct_mistakes: …" naming the step, the two mistakes and their numbers when two
    catalogued mistakes give the same numbers (rounded to `places`) on an asked forward step and
    differ from the right answer there; None when every diagnosis is unambiguous."""
    spec = trace.spec
    ties = structural_ties(spec)
    env = dict(trace.params)
    env.update({s.name: s.value for s in trace})
    for name in ask:
        if name not in trace or trace[name].given:
            continue
        truth = rounded(trace[name].value, places)
        seen: dict[tuple, str] = {}
        for m in CATALOGUE:
            if not m.applies(name, spec):
                continue
            try:
                values = list(m.compute(name, env, spec))
            except (KeyError, ArithmeticError, ValueError):
                continue
            for v in values:
                if v.shape != trace[name].value.shape:
                    continue
                key = rounded(v, places)
                if key == truth:
                    continue   # this slip leaves no trace on this step: nothing to confuse
                other = seen.get(key)
                if other is not None and other != m.code and frozenset((other, m.code)) not in ties:
                    shown = ", ".join(key[:4]) + (", …" if len(key) > 4 else "")
                    return (f"distinct_mistakes: on {name}, {other} and {m.code} both give [{shown}]")
                seen[key] = m.code
    return None


def judge(preset: str | None = None, loss: str | None = None, wrt=None, places: int = 3):
    """A judge for exercises.stress / variants.draw_variants: trace -> reason or None, for the
    exercise the options choose."""
    from symblock.exercises.presets import choose

    def check(trace) -> str | None:
        return ambiguous(trace, choose(trace, preset, loss, wrt).ask, places)
    return check
