"""Draw many variants of a spec and report what students would meet (R/exams' stress test).

    symblock stress SPEC -n 200 [--seed 1] [--json] [--difficulty medium] [--require exact_norm] ...

For seeds S, S+1, …, S+n−1 the generator draws each variant (generate.variant, constraints
checked on exact values) and the report gives: draws rejected per constraint (the first check that
failed; rows of X redrawn for the first norm count too), the spread of every step (min and max
entry, the largest integer a student writes — numerator or denominator of an exact rational), how
many variants have the step entirely rational and entirely as a printable closed form, and how many
distinct variants there are: distinct among the n drawn, and the number of distinct tensor draws the
ranges allow (an exact count, times the dims a preset can choose: an upper bound on the variants
the spec can produce), with the valid share estimated from the acceptance rate.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class StepStats:
    name: str
    variants: int = 0
    min: float | None = None
    max: float | None = None
    largest_integer: int = 0
    rational: int = 0
    closed_form: int = 0

    def add(self, value) -> None:
        from symblock.engine import exact
        self.variants += 1
        entries = [e for row in value.rows for e in row if e is not exact.NEG_INF]
        floats = [float(e) for e in entries]
        if floats:
            self.min = min(floats) if self.min is None else min(self.min, min(floats))
            self.max = max(floats) if self.max is None else max(self.max, max(floats))
        rats = [e for e in entries if e.is_rational]
        for e in rats:
            self.largest_integer = max(self.largest_integer, abs(int(e.q.p)), int(e.q.q))
        self.rational += len(rats) == len(entries)
        self.closed_form += all(e.size <= exact.CLOSED_FORM_SIZE for e in entries)


@dataclass
class Report:
    source: str
    first_seed: int
    n: int
    draws: int = 0
    rejections: dict = field(default_factory=dict)
    distinct: int = 0
    space: int = 0                    # distinct tensor draws the ranges allow (upper bound)
    steps: dict = field(default_factory=dict)

    @property
    def estimated_valid(self) -> float:
        return self.space * self.n / self.draws if self.draws else 0.0

    def to_dict(self) -> dict:
        return {"source": self.source, "seeds": [self.first_seed, self.first_seed + self.n - 1],
                "variants": self.n, "draws": self.draws,
                "draws_per_variant": round(self.draws / self.n, 3) if self.n else None,
                "rejections": dict(sorted(self.rejections.items(), key=lambda kv: -kv[1])),
                "distinct": self.distinct, "space_bound": self.space,
                "estimated_valid": float(f"{self.estimated_valid:.3g}"),
                "steps": [vars(s) for s in self.steps.values()]}


def stress(data: dict, source: str, n: int, first_seed: int = 1, overrides: dict | None = None,
           max_cost: int | None = None) -> Report:
    """Draw variants for seeds first_seed … first_seed+n−1 and gather the report."""
    from collections import Counter
    from symblock.exercises.generate import dims_choices, space_bound, variant
    report = Report(source, first_seed, n)
    rejections: Counter = Counter()
    keys, space = set(), 0
    for seed in range(first_seed, first_seed + n):
        v = variant(data, source, overrides={**(overrides or {}), "seed": seed}, max_cost=max_cost)
        report.draws += v.draws
        rejections.update(v.rejections)
        keys.add((v.spec.dims, v.key))
        space = max(space, space_bound(v))
        for step in v.trace:
            report.steps.setdefault(step.name, StepStats(step.name)).add(step.value)
        c = v.constraints
    report.rejections = dict(rejections)
    report.distinct = len(keys)
    report.space = space * dims_choices(data, c) if n else 0
    return report


def text(report: Report) -> str:
    r = report
    out = [f"stress: {r.source} · {r.n} variants (seeds {r.first_seed}..{r.first_seed + r.n - 1}) · "
           f"{r.draws} draws ({r.draws / max(r.n, 1):.1f} per variant)"]
    if r.rejections:
        out.append("rejected draws by constraint (first failing check; rows of X redrawn included):")
        out += [f"  {k:<20} {v}" for k, v in sorted(r.rejections.items(), key=lambda kv: -kv[1])]
    else:
        out.append("rejected draws: none")
    out.append(f"distinct variants: {r.distinct} of {r.n} drawn; the ranges allow at most {r.space:.3g} "
               f"distinct blocks ({r.space} exactly), about {r.estimated_valid:.3g} of them valid "
               "(estimated from the acceptance rate)")
    out.append("")
    width = max([len(s) for s in r.steps] + [4])
    out.append(f"{'step':<{width}}  {'variants':>8}  {'min':>9}  {'max':>9}  {'largest int':>11}  "
               f"{'rational':>8}  {'closed form':>11}")
    for s in r.steps.values():
        fmt = lambda x: "" if x is None else f"{x:.4g}"  # noqa: E731
        out.append(f"{s.name:<{width}}  {s.variants:>8}  {fmt(s.min):>9}  {fmt(s.max):>9}  "
                   f"{s.largest_integer if s.rational or s.largest_integer else '':>11}  "
                   f"{s.rational:>8}  {s.closed_form:>11}")
    return "\n".join(out) + "\n"
