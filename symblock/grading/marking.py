"""Mark a person's answers against the exact Trace: per entry, per step, with error carried
forward and mistake diagnosis. Pure data out (`CheckResult`); check.py prints it.

Walk the steps in forward order, keeping the person's *chain*: their own answer for every step
they gave, else the step recomputed from the chain (so a skipped step passes their numbers on),
else the truth. For each answered step:

* an entry is right when it matches the truth (rounding rule: answers.py), or what the step
  gives from the chain (so rounded numbers carried forward honestly are never marked wrong);
* the step is `correct` when every entry is right and the chain it needed was not built on a
  wrong answer; `carried` when it is right only from a chain that contains a wrong (or carried)
  answer the person gave; `wrong` otherwise, with the mistake catalogue's diagnosis.
Unanswered steps are `missing` (or `given` when the spec pins them); they never make `ok` false.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from symblock.engine import exact
from symblock.grading.mistakes import diagnose, is_rounding_slip
from symblock.grading.onestep import compute

CORRECT, WRONG, CARRIED, MISSING, GIVEN = "correct", "wrong", "carried", "missing", "given"


@dataclass
class EntryResult:
    row: int
    col: int
    given: str
    expected: str                # the truth, at the entry's places (or exact)
    ok: bool
    own: str | None = None       # what the person's own earlier answers give, when that differs
    exact: str | None = None     # the truth's closed form, when short


@dataclass
class StepResult:
    name: str
    status: str
    entries: list[EntryResult] = field(default_factory=list)
    diagnosis: list[str] = field(default_factory=list)
    built_on: list[str] = field(default_factory=list)   # wrong/carried answers this step relied on


@dataclass
class CheckResult:
    steps: list[StepResult]
    spec_source: str
    answers_source: str
    decimals: int | None

    @property
    def ok(self) -> bool:
        return not any(s.status == WRONG for s in self.steps)

    @property
    def first_break(self) -> str | None:
        return next((s.name for s in self.steps if s.status == WRONG), None)

    def count(self, status: str) -> int:
        return sum(s.status == status for s in self.steps)


def matches(entry, value) -> bool:
    """The acceptance rule for one entry against one exact value."""
    if entry.value is exact.NEG_INF or value is exact.NEG_INF:
        return entry.value is value
    if entry.places is None:
        try:
            return (entry.value - value).sign() == 0
        except exact.UndecidableError:  # equal to ~4900 digits and no short closed form
            return True
    try:
        return value.decimal(entry.places) == entry.decimal
    except exact.UndecidableError:
        # the value sits on a rounding tie (to ~4900 digits, e.g. 1/8 written in exps):
        # either neighbour is a fair rounding
        diff = entry.value - value
        half = exact.real(Fraction(1, 2 * 10 ** entry.places))
        try:
            return ((diff if diff.sign() >= 0 else -diff) - half).sign() <= 0
        except exact.UndecidableError:
            return True


def show(value, places: int | None) -> str:
    if value is exact.NEG_INF:
        return "-inf"
    if places is not None:
        try:
            d = value.decimal(places)
        except exact.UndecidableError:  # a rounding tie: show more digits
            return value.digits(places + 3)
        return f"{d:.{places}f}" if d != 0 else f"{0:.{places}f}"
    form = exact.text(value, 40)  # written from the graph: no SymPy expression per entry
    if form is not None and len(form) <= 40:
        return form
    return "≈" + value.digits(10)


def closed_form(value) -> str | None:
    if value is exact.NEG_INF:
        return "-oo"
    return exact.text(value, 40)


def check(spec, trace, answers) -> CheckResult:
    truth = dict(trace.params)
    truth.update({s.name: s.value for s in trace})
    chain = dict(trace.params)       # the person's chain: name -> Mat
    bad: dict[str, list[str]] = {}   # name -> the wrong/carried answers its chain value rests on
    results = []
    for step in trace:
        name, value = step.name, step.value
        deps = [i for i in step.inputs if i in truth and i not in trace.params]
        built_on = sorted({b for i in deps for b in bad.get(i, [])})
        own = None
        if not step.given and any(chain[i] is not truth[i] for i in deps):
            try:
                own = compute(name, chain, spec)
            except (ArithmeticError, ValueError, KeyError):
                own = None  # e.g. the person's σ is 0: nothing to recompute from
        answer = answers.steps.get(name)
        if answer is None:
            results.append(StepResult(name, GIVEN if step.given else MISSING, built_on=built_on))
            chain[name] = own if own is not None else value
            bad[name] = built_on
            continue
        entries, needed_own = [], False
        for i, row in enumerate(answer.entries):
            for j, e in enumerate(row):
                t = value.rows[i][j]
                ok = matches(e, t)
                o = own.rows[i][j] if own is not None else None
                if not ok and o is not None and matches(e, o):
                    ok = needed_own = True
                er = EntryResult(i, j, e.text, show(t, e.places), ok, exact=closed_form(t))
                if o is not None and show(o, e.places) != er.expected:
                    er.own = show(o, e.places)
                entries.append(er)
        if all(er.ok for er in entries):
            status = CARRIED if needed_own and built_on else CORRECT
        else:
            status = WRONG
        result = StepResult(name, status, entries, built_on=built_on if status == CARRIED else [])
        if status == WRONG:
            envs = [chain] if own is None else [chain, truth]
            result.diagnosis = diagnose(name, spec, answer, envs, matches)
            if not result.diagnosis and is_rounding_slip(answer, [value, own]):
                result.diagnosis = ["rounding"]
        results.append(result)
        chain[name] = answer.values()
        bad[name] = [name] if status == WRONG else (built_on if status == CARRIED else [])
    return CheckResult(results, spec.source, answers.source, answers.decimals)
