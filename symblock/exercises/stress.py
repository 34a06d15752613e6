"""Draw many variants of a spec and report what students would meet (R/exams' stress test).

    symblock stress SPEC -n 200 [--seed 1] [--json] [--difficulty medium] [--require exact_norm] ...

For seeds S, S+1, …, S+n−1 the generator draws each variant (generate.variant, constraints
checked on exact values) and the report gives: draws rejected per constraint (the first check that
failed; rows of X redrawn for the first norm count too), the spread of every step (min and max
entry, the largest integer a student writes — numerator or denominator of an exact rational), how
many variants have the step entirely rational and entirely as a printable closed form, and how many
distinct variants there are: distinct among the n drawn, and the number of distinct tensor draws the
ranges allow (an exact count, times the dims a difficulty can choose: an upper bound on the variants
the spec can produce), with the valid share estimated from the acceptance rate; and the variety of
the set: per asked step, how many distinct exact answers the n variants have and how often the
most common one repeats, with a warning on every step below the guarantee (`problems`).

The variety guarantee (every student's exercise differs): in a set of n variants no asked
step repeats its answer matrix in more than 10% of the variants (at most max(1, n // 10) share one),
and every per-row statistic (.mean .var .std .ms .rms, and a key tile's running .max and .sum) takes
at least min(5, n) distinct values.
Steps that read only data the spec gives (the same in every variant by the author's choice, e.g. the
norm of a given X) are named, not held against the set.
Answers are compared exactly (rationals as fractions, other entries to 30 digits).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from symblock.engine import names


@dataclass
class StepStats:
    name: str
    variants: int = 0
    min: float | None = None
    max: float | None = None
    low: object = None    # the entries at min and max, exact: printed as the sheets round them
    high: object = None
    largest_integer: int = 0
    rational: int = 0
    closed_form: int = 0

    def to_dict(self) -> dict:
        """The JSON report's fields (the exact entries stay out: `min`/`max` are their floats)."""
        return {k: v for k, v in vars(self).items() if k not in ("low", "high")}

    def add(self, value) -> None:
        from symblock.engine import exact
        self.variants += 1
        entries = [e for row in value.rows for e in row if e is not exact.NEG_INF]
        floats = [float(e) for e in entries]
        if floats:
            lo, hi = min(zip(floats, entries), key=lambda p: p[0]), max(zip(floats, entries), key=lambda p: p[0])
            if self.min is None or lo[0] < self.min:
                self.min, self.low = lo
            if self.max is None or hi[0] > self.max:
                self.max, self.high = hi
        rats = [e for e in entries if e.is_rational]
        for e in rats:
            self.largest_integer = max(self.largest_integer, abs(int(e.q.p)), int(e.q.q))
        self.rational += len(rats) == len(entries)
        self.closed_form += all(e.size <= exact.CLOSED_FORM_SIZE for e in entries)


REPEAT_SHARE = 10      # an answer may repeat in at most 1/REPEAT_SHARE of a set
MIN_STAT_VALUES = 5    # distinct values a per-row statistic takes over a set
PER_ROW_TILES = ("tile_max", "tile_sum")   # the online softmax's per-row running values count as statistics


def answer_key(value) -> tuple:
    """An answer matrix as a hashable exact key."""
    from symblock.engine import exact
    out = []
    for row in value.rows:
        for e in row:
            if e is exact.NEG_INF:
                out.append("-oo")
            elif e.is_rational:
                out.append((int(e.q.p), int(e.q.q)))
            else:
                out.append(e.digits(30))
    return tuple(out)


@dataclass
class Variety:
    step: str
    variants: int = 0
    distinct: int = 0          # distinct answer matrices
    largest_group: int = 0     # variants sharing the most common answer
    values: int | None = None  # per-row statistics: distinct entries over all rows and variants

    def problem(self) -> str | None:
        n = self.variants
        allowed = max(1, n // REPEAT_SHARE)
        if self.largest_group > allowed:
            return (f"{self.step}: one answer is shared by {self.largest_group} of {n} variants "
                    f"(at most {allowed} may share one)")
        if self.values is not None and self.values < min(MIN_STAT_VALUES, n):
            return (f"{self.step}: its entries take only {self.values} distinct values over {n} variants "
                    f"(at least {min(MIN_STAT_VALUES, n)} wanted)")
        return None


def variety(answers: list[dict]) -> dict[str, Variety]:
    """Per step asked in the set: distinct answers; `answers` holds one {step: Mat} per variant."""
    from collections import Counter
    out: dict[str, Variety] = {}
    groups: dict[str, Counter] = {}
    entries: dict[str, set] = {}
    for one in answers:
        for name, value in one.items():
            key = answer_key(value)
            groups.setdefault(name, Counter())[key] += 1
            if per_row(name):
                entries.setdefault(name, set()).update(key)
    for name, counts in groups.items():
        out[name] = Variety(name, sum(counts.values()), len(counts), max(counts.values()),
                            len(entries[name]) if name in entries else None)
    return out


def fixed_steps(traces: list) -> set[str]:
    """Steps computed only from data that is the same in every variant (given by the spec, not
    drawn): the same answer for everybody by the author's choice, so outside the guarantee."""
    if not traces:
        return set()
    first = traces[0]
    same = {p for p, m in first.params.items()
            if all(p in t.params and answer_key(t.params[p]) == answer_key(m) for t in traces[1:])}
    fixed: set[str] = set()
    for step in first:
        if all(i in same or i in fixed for i in step.inputs):
            fixed.add(step.name)
    return fixed


def problems(var: dict[str, Variety]) -> list[str]:
    return [p for v in var.values() if (p := v.problem())]


def spread(n: int, values: bool = False):
    """A `keep(variant)` for variant.draw_set that turns down a variant whose answer to an asked
    step is already held by as many variants as an n-variant set may share (`Variety.problem`), so
    a small class gets a set that meets the guarantee instead of a refusal. Steps read only from
    data the spec gives are left out, as `require_variety` leaves them, which still judges the
    whole set. `values`: also turn down a variant that adds no new value to a per-row statistic
    still short of its MIN_STAT_VALUES (the second draw of a small set that missed them)."""
    from collections import Counter
    allowed, held, first = max(1, n // REPEAT_SHARE), {}, []
    seen: dict[str, set] = {}
    need = min(MIN_STAT_VALUES, n)

    def keep(v) -> bool:
        fixed = fixed_steps([first[0], v.trace]) if first else set()
        keys = {k: answer_key(a) for k, a in v.varied.items() if k not in fixed}
        if any(held.get(k, Counter())[key] >= allowed for k, key in keys.items()):
            return False
        stats = {k: key for k, key in keys.items() if values and per_row(k)}
        if any(len(seen.get(k, ())) < need and set(key) <= seen.get(k, set()) for k, key in stats.items()):
            return False
        for k, key in keys.items():
            held.setdefault(k, Counter())[key] += 1
        for k, key in stats.items():
            seen.setdefault(k, set()).update(key)
        first[:] = first or [v.trace]
        return True
    return keep


def per_row(name: str) -> bool:
    """A per-row statistic (mean, variance, σ, rms; the online softmax's running values): its
    entries, not its matrices, must vary over a set."""
    parsed = names.parse(name)
    return bool(parsed.stat or parsed.kind in PER_ROW_TILES) and not parsed.dropped


def require_variety(variants: list) -> None:
    """The set's variety guarantee over its Variants, or UsageError listing what breaks it
    (worksheet --variants)."""
    from symblock.errors import UsageError
    fixed = fixed_steps([v.trace for v in variants])
    bad = problems(variety([{k: a for k, a in v.varied.items() if k not in fixed} for v in variants]))
    if bad:
        raise UsageError("the variants are too alike to hand out: " + "; ".join(bad)
                         + " (widen random.ranges, draw more of the block, or pass --allow-repeats)")


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
    redraws: dict = field(default_factory=dict)   # rows of X, attention / FFN weights refitted
    forwards: int = 0
    variety: dict = field(default_factory=dict)   # asked step -> Variety
    minutes: tuple = ()               # (min, max) of presets.estimate over the set
    max_exponent: float = 0.0         # largest |x| of an e^x in a softmax
    skipped: dict = field(default_factory=dict)   # seeds a judge (distinct_mistakes) turned down
    fixed: tuple = ()                 # asked steps that read only data given by the spec

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
                "redraws": dict(self.redraws), "forwards": self.forwards,
                "minutes": list(self.minutes), "max_exponent": round(self.max_exponent, 4),
                "skipped": dict(self.skipped), "fixed": list(self.fixed),
                "variety": [vars(v) for v in self.variety.values()],
                "variety_problems": problems(self.variety),
                "steps": [s.to_dict() for s in self.steps.values()]}


def stress(data: dict, source: str, n: int, first_seed: int = 1, overrides: dict | None = None,
           judge=None) -> Report:
    """Draw n variants from seed first_seed on and gather the report. `judge(variant)` -> a reason
    or None (grading's distinct_mistakes check) turns seeds down as `worksheet --variants` does, when
    the spec asks for it; without a judge the seeds are first_seed … first_seed+n−1."""
    from collections import Counter
    from symblock.errors import SpecError
    from symblock.exercises import variant as one_variant
    from symblock.exercises.presets import estimate
    from symblock.exercises.generate import dims_choices, space_bound, variant
    from symblock.exercises.variants import MAX_TRIES
    report = Report(source, first_seed, n)
    rejections, redraws, skipped = Counter(), Counter(), Counter()
    keys, space, answers, minutes, traces = set(), 0, [], [], []
    seed, c, accepted = first_seed, None, 0
    while accepted < n and seed < first_seed + n * MAX_TRIES:
        v = variant(data, source, overrides={**(overrides or {}), "seed": seed})
        seed += 1
        c = v.constraints
        report.draws += v.draws
        report.forwards += v.forwards
        rejections.update(v.rejections)
        redraws.update(v.redraws)
        try:   # the spec's own exercise (default: full), chosen once
            one, unasked = one_variant.build(str(seed - 1), v.trace), None
        except SpecError as e:
            one, unasked = None, e
        if judge is not None and c.distinct_mistakes and one is None:
            raise unasked
        reason = judge(one) if judge is not None and c.distinct_mistakes else None
        if reason:
            skipped[reason.split(":")[0]] += 1
            continue
        accepted += 1
        keys.add((v.spec.dims, v.key))
        space = max(space, space_bound(v))
        for step in v.trace:
            report.steps.setdefault(step.name, StepStats(step.name)).add(step.value)
        report.max_exponent = max(report.max_exponent, largest_exponent(v.trace))
        traces.append(v.trace)
        if one is not None:
            answers.append(dict(one.varied))
            minutes.append(estimate(v.trace, one.exercise).minutes)
    report.n = accepted
    report.rejections, report.redraws, report.skipped = dict(rejections), dict(redraws), dict(skipped)
    report.distinct = len(keys)
    report.space = space * dims_choices(data, c) if c is not None else 0
    fixed = fixed_steps(traces)
    report.fixed = tuple(n for n in (answers[0] if answers else {}) if n in fixed)
    report.variety = variety([{k: v for k, v in a.items() if k not in fixed} for a in answers])
    report.minutes = (min(minutes), max(minutes)) if minutes else ()
    return report


def largest_exponent(trace) -> float:
    """The largest |x| of a softmax input e^x (live entries), as the key works it."""
    from symblock.engine import exact
    from symblock.engine.steps import step_kind
    top = 0.0
    for step in trace:
        if step_kind(step.name) == "weights":  # a batch's b1.attn.h0.weights too
            for row in trace[step.inputs[0]].value.rows:
                top = max([top] + [abs(float(e)) for e in row if e is not exact.NEG_INF])
    return top


def text(report: Report) -> str:
    r = report
    out = [f"stress: {r.source} · {r.n} variants (seeds from {r.first_seed}) · "
           f"{r.draws} draws ({r.draws / max(r.n, 1):.1f} per variant), {r.forwards} exact forwards"]
    if r.rejections:
        out.append("rejected draws by constraint (first failing check):")
        out += [f"  {k:<24} {v}" for k, v in sorted(r.rejections.items(), key=lambda kv: -kv[1])]
    else:
        out.append("rejected draws: none")
    if r.redraws:
        out.append("built into the draws (rows of X, attention / FFN weights refitted; first failing check):")
        out += [f"  {k:<24} {v}" for k, v in sorted(r.redraws.items(), key=lambda kv: -kv[1])]
    if r.skipped:
        out.append("seeds turned down (two catalogued mistakes give the same numbers):")
        out += [f"  {k:<24} {v}" for k, v in sorted(r.skipped.items(), key=lambda kv: -kv[1])]
    out.append(f"distinct variants: {r.distinct} of {r.n} drawn; the ranges allow at most {r.space:.3g} "
               f"distinct blocks ({r.space} exactly), about {r.estimated_valid:.3g} of them valid "
               "(estimated from the acceptance rate)")
    if r.minutes:
        span = r.minutes[0] if r.minutes[0] == r.minutes[1] else f"{r.minutes[0]}–{r.minutes[1]}"
        out.append(f"time by hand (presets.estimate): {span} min; "
                   f"largest |x| of an e^x: {r.max_exponent:.4g}")
    out += ["", *steps_table(r)]
    out += ["", *variety_table(r)]
    return "\n".join(out) + "\n"


def significant(e, digits: int = 4) -> str:
    """An exact entry to `digits` significant digits, rounded as the sheets round (half away from
    zero, by the engine's certified Real.decimal), so that the table and the sheets agree on a tie
    such as 81/16 (5.063, where a float's {:.4g} gives 5.062); very large or small values in
    scientific notation."""
    import math
    from symblock.engine import exact
    x = float(e)
    if x == 0 or not 1e-4 <= abs(x) < 10 ** digits:
        return f"{x:.{digits}g}"
    places = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    text = f"{exact.real(e).decimal(places):f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text == "-0" else text


def steps_table(r: Report) -> list[str]:
    width = max([len(s) for s in r.steps] + [4])
    out = [f"{'step':<{width}}  {'variants':>8}  {'min':>9}  {'max':>9}  {'largest int':>11}  "
           f"{'rational':>8}  {'closed form':>11}"]
    for s in r.steps.values():
        fmt = lambda x: "" if x is None else significant(x)  # noqa: E731
        out.append(f"{s.name:<{width}}  {s.variants:>8}  {fmt(s.low):>9}  {fmt(s.high):>9}  "
                   f"{s.largest_integer if s.rational or s.largest_integer else '':>11}  "
                   f"{s.rational:>8}  {s.closed_form:>11}")
    return out


def variety_table(r: Report) -> list[str]:
    if not r.variety:
        return ["variety: no exercise to measure"]
    n = max(v.variants for v in r.variety.values())
    width = max([len(s) for s in r.variety] + [4])
    out = [f"variety of the asked steps over {n} variants (guarantee: an answer shared by at most "
           f"{max(1, n // REPEAT_SHARE)}, statistics with >= {min(MIN_STAT_VALUES, n)} values):",
           f"{'step':<{width}}  {'distinct':>8}  {'most shared':>11}  {'values':>6}"]
    for v in r.variety.values():
        mark = "  << below the guarantee" if v.problem() else ""
        out.append(f"{v.step:<{width}}  {v.distinct:>8}  {v.largest_group:>11}  "
                   f"{'' if v.values is None else v.values:>6}{mark}")
    if r.fixed:
        out.append("the same in every variant by the spec (read only given data): " + ", ".join(r.fixed))
    bad = problems(r.variety)
    out += [f"warning: {p}" for p in bad] or ["every asked step meets the variety guarantee"]
    return out
