"""Points: what a mark is worth (`Credit`: the credit of a rounding slip, the statement printed on
every report), which mark one entry earns against one exact value (`matches`, `fewer_places`,
`is_slip`: the checker's acceptance rule), and what a static LMS question (Moodle Cloze, QTI) can
accept for each asked entry, so that its marks agree with `symblock grade` for every answer that
carries no error of its own.

An LMS question compares each entry with fixed numbers; it cannot follow a student's own earlier
answers as the checker does. So each entry accepts, at full credit, every value the checker
accepts from an honest chain that can be known in advance:

* the exact value (rounded at the sheet's places: |answer − v| ≤ ½·10⁻ᵈ, both roundings of an
  exact tie);
* the value recomputed (`Item.recompute`, as grading recomputes a step from a person's inputs)
  from the key's printed numbers: each earlier asked step as the key prints it (its exact value
  rounded, or exact when short), and the given data as the sheet prints them (`plan.as_printed`);
* the value of the rounded chain: each earlier asked step recomputed and rounded in turn, as a
  student who carries their own rounded numbers forward writes it;

and, at the checker's slip credit, one unit off in the last place from any of those (a rounding
slip). Unasked steps in between are recomputed from the same chain, as the checker does.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING

from symblock.engine import exact, printed
from symblock.engine.matrix import Mat
from symblock.grading import answers as answers_mod

if TYPE_CHECKING:
    from symblock.engine.block import Trace
    from symblock.exercises.presets import Exercise


# How marks become points: the credit of each entry mark, and a task's points.
#
# A task (an asked step) is worth `exercise.points` (default 1), shared equally by its entries. An
# entry earns its share times the credit of its mark:
#
#     correct 1 · carried (right from the person's own wrong earlier answer) 1 by default, or what
#     --carried gives · rounded (right, but to fewer places than asked) 1 − 1/10 · slip (one unit
#     off in the last place) 1/2 · wrong 0 · blank 0
#
# so a blank, an empty cell or a missing row scores 0 for its entries only, and a mistake carried
# forward is charged once, where it was made (full credit for what follows from it).


@dataclass(frozen=True)
class Credit:
    carried: Fraction = Fraction(1)
    rounded: Fraction = Fraction(9, 10)
    slip: Fraction = Fraction(1, 2)

    def of(self, mark: str) -> Fraction:
        return {"correct": Fraction(1), "carried": self.carried, "rounded": self.rounded,
                "slip": self.slip}.get(mark, Fraction(0))

    def task(self, step, points: int) -> Fraction:
        """Points earned on one task from its marking.StepResult (None or no entries: 0)."""
        if step is None or not step.entries:
            return Fraction(0)
        return points * sum((self.of(e.mark) for e in step.entries), Fraction(0)) / len(step.entries)

    def statement(self, lang: str = "en") -> str:
        c, r, s = (_pct(x) for x in (self.carried, self.rounded, self.slip))
        if lang == "zh":
            return (f"每题的分数平均分给它的每个数。正确得全分；由自己前面的错误答案推得正确（误差传递）得 {c}；"
                    f"位数少于要求但正确得 {r}；末位差一个单位（舍入失误）得 {s}；错误或空白得 0。"
                    "错误只在出错的那一步扣分。")
        return (f"Each task's points are shared equally by its entries. A correct entry earns its full share; "
                f"one right from the student's own wrong earlier answer (error carried forward) earns {c}; "
                f"one right but rounded to fewer places than asked {r}; a rounding slip (one unit in the last "
                f"place) {s}; a wrong or blank entry 0. A mistake is charged once, where it was made.")


def _pct(x: Fraction) -> str:
    from symblock.grading.lang import percent
    return percent(x, 0 if (x * 100).denominator == 1 else 1)   # 1/16: "6.3%", rounded half up


def parse_credit(text: str, flag: str) -> Fraction:
    """A credit from the command line: a number 0..1 (0.5, 1/2) or a percentage (50%)."""
    from symblock.errors import UsageError
    import re
    t = text.strip()
    v = None
    exponent = re.search(r"[eE]\s*([+-]?\d+)", t)
    if len(t) <= 20 and not (exponent and abs(int(exponent.group(1))) > 20):   # 1e999999999: no huge power
        try:
            v = Fraction(t[:-1]) / 100 if t.endswith("%") else Fraction(t)
        except (ValueError, ZeroDivisionError):
            v = None
    if v is None or not 0 <= v <= 1:
        raise UsageError(f"{flag}: expected a credit between 0 and 1 (e.g. 0.5, 1/2 or 50%), got {text!r}")
    return v


# ---------------------------------------------------------------- which mark one entry earns
#
# The checker's acceptance rule for one answered entry against one exact value (marking.judge tries it
# against the truth and the person's chains); the LMS answers below are its static counterpart.

def matches(entry, value) -> bool:
    """The acceptance rule for one entry against one exact value."""
    if getattr(entry, "reason", None) is not None:   # unreadable: wrong against anything
        return False
    if entry.value is exact.NEG_INF or value is exact.NEG_INF:
        return entry.value is value or (value is exact.NEG_INF and answers_mod.is_fill(entry))
    if entry.tol is not None:
        return _within(entry.value, value, entry.tol * _max1(value)) \
            and (entry.cap is None or _within(entry.value, value, entry.cap))
    if entry.sig_figs is not None:
        return _sig_equal(entry, value, entry.sig_figs)
    if entry.places is None:
        try:
            return (entry.value - value).sign() == 0
        except exact.UndecidableError:  # equal to ~4900 digits and no short closed form
            return True
    return _places_equal(entry, value, entry.places)


def _places_equal(entry, value, places: int) -> bool:
    """`value` rounded to `places` is the entry. Rounding is half away from zero, and an exact tie
    at `places` (1.5625 at 3) is accepted rounded either way: 1.563, or 1.562 as half to even
    (Python, NumPy) gives it."""
    try:
        rounded = value.decimal(places)
    except exact.UndecidableError:
        # the value sits on a rounding tie (to ~4900 digits, e.g. 1/8 written in exps):
        # either neighbour is a fair rounding
        return _within(entry.value, value, Fraction(1, 2 * 10 ** places))
    return rounded == entry.decimal or _tie_neighbour(entry, value, rounded, places)


def _tie_neighbour(entry, value, rounded, places: int) -> bool:
    """Whether the entry is the other rounding of a value exactly halfway between it and `rounded`."""
    if entry.decimal is None or abs(Fraction(entry.decimal) - Fraction(rounded)) != Fraction(1, 10 ** places):
        return False
    middle = (Fraction(entry.decimal) + Fraction(rounded)) / 2
    try:
        return (value - exact.real(middle)).sign() == 0
    except exact.UndecidableError:   # equal to ~4900 digits
        return True


def _sig_equal(entry, value, sig: int) -> bool:
    """`value` rounded to `sig` significant digits equals the entry (numerically)."""
    if value.sign() == 0:
        return entry.decimal == 0
    import math
    try:
        magnitude = math.floor(math.log10(abs(float(value))))
    except (OverflowError, ValueError):
        return False
    return _places_equal(entry, value, sig - 1 - magnitude)


def _within(a, b, tol: Fraction) -> bool:
    diff = a - b
    try:
        return ((diff if diff.sign() >= 0 else -diff) - exact.real(tol)).sign() <= 0
    except exact.UndecidableError:
        return True


def _max1(value) -> Fraction:
    """max(1, |value|) as a rational a little above it (a tolerance scale, never below the truth)."""
    try:
        f = abs(float(value))
    except OverflowError:
        f = float("inf")
    if f == float("inf"):   # beyond a double: a power of 10 above it is scale enough
        text = value.digits(3).lower()
        return Fraction(10) ** (int(text.split("e")[1]) + 1 if "e" in text else len(text))
    return max(Fraction(1), Fraction(f).limit_denominator(10 ** 12) * Fraction(1001, 1000))


def fewer_places(entry, value) -> bool:
    """Written with fewer places (or significant digits) than asked, at least one, and right there."""
    if entry.decimal is None or entry.tol is not None or not entry.written:
        return False
    if entry.sig_figs is not None:
        return entry.written < entry.sig_figs and _sig_equal(entry, value, entry.written)
    return entry.places is not None and entry.written < entry.places and _places_equal(entry, value, entry.written)


def is_slip(entry, value) -> bool:
    """Off by at most one unit in the last place written from the value rounded there (a decimal
    entry under places or sig figs): 0.351 or 0.353 where the key has 0.352, whatever digits follow
    in the exact value, as the student compares it with the key; at an exact tie, from either rounding."""
    if entry.decimal is None or entry.tol is not None or value is exact.NEG_INF or (
            entry.sig_figs is None and not entry.written and entry.places is None):
        return False
    places = entry.places if entry.sig_figs is None and not entry.written else -entry.decimal.as_tuple().exponent
    unit = Fraction(10) ** -places
    if places >= 0:
        try:   # 25/16 at 3 places: 1.563 and 1.562 are right, so 1.564 and 1.561 are slips
            right = (Fraction(value.decimal(places)), other_rounding(value, places))
            return any(abs(Fraction(entry.decimal) - c) <= unit for c in right if c is not None)
        except exact.UndecidableError:   # on a rounding tie: within one unit of the value itself
            pass
    return _within(entry.value, value, unit)


def other_rounding(value, places: int) -> Fraction | None:
    """The other rounding of a value exactly halfway at `places` (1.562 beside 1.563 for 25/16 at 3:
    `matches` accepts both); None off a tie."""
    if value is exact.NEG_INF or not value.is_rational:
        return None
    if places >= 0:   # halfway at `places` iff 2·10^places·value is an odd whole number (most values: no)
        twice = value.q * (2 * 10 ** places)
        if twice.q != 1 or twice.p % 2 == 0:
            return None
    q, r = Fraction(int(value.q.p), int(value.q.q)), Fraction(value.decimal(places))
    return 2 * q - r if 2 * abs(q - r) == Fraction(10) ** -places else None


def accepted(trace: Trace, exercise: Exercise, places: int) -> dict[str, list[list[list[tuple[str, Fraction]]]]]:
    """{asked step: rows of entries, each a list of (12-place centre, credit), full credit first}:
    the centres are ranged ½·10⁻ᵈ either side (`places` d). A masked −∞ entry has no centre ([])."""
    from symblock.grading import plan
    asked, shown = set(exercise.ask), set(exercise.data_steps)
    printed, rounded = dict(trace.params), dict(trace.params)
    out = {}
    for it in plan.items(trace, exercise):
        key = _recompute(it, printed)
        own = _recompute(it, rounded)
        if it.name in shown:   # given data, read off the sheet as printed (as the checker reads it)
            printed[it.name] = rounded[it.name] = plan.as_printed(it.value, places)
        elif it.name in asked:
            out[it.name] = _entries([it.value, key, own], places)
            printed[it.name], rounded[it.name] = _printed(it.value, places), _printed(own, places, True)
        else:
            printed[it.name], rounded[it.name] = key, own
    return out


def annotate(tasks: list[dict], trace: Trace, exercise: Exercise, places: int) -> None:
    """Give each cell of a sheet model's tasks the answers an LMS question accepts (`accept`: [(centre, credit)], see `accepted`)."""
    answers = accepted(trace, exercise, places)
    for task in tasks:
        for row, accept in zip(task["cells"], answers[task["name"]]):
            for cell, a in zip(row, accept):
                cell["accept"] = a


def _recompute(it, chain: dict) -> Mat:
    """The item from `chain` (its truth when it is given data or cannot be recomputed there)."""
    if it.given:
        return it.value
    try:
        return it.recompute(chain)
    except (ArithmeticError, ValueError, KeyError):
        return it.value


def _printed(mat: Mat, places: int, always: bool = False) -> Mat:
    """The numbers as the key prints them (exact when a short decimal, else rounded at `places`),
    or, `always`, as a student writes them: rounded at `places`."""
    return Mat([[e if printed.is_plain(e) and not always or e is exact.NEG_INF else _round(e, places) for e in row]
                for row in mat.rows])


def _round(e, places: int):
    try:
        return printed.rounded(e, places)
    except exact.UndecidableError:   # on a rounding tie to thousands of digits: either is fair
        return e


def _entries(values: list[Mat], places: int) -> list[list[list[tuple[str, Fraction]]]]:
    rows = []
    for i, row in enumerate(values[0].rows):
        rows.append([_answers([v.rows[i][j] for v in values], places) for j in range(len(row))])
    return rows


def _answers(values: list, places: int) -> list[tuple[str, Fraction]]:
    """Distinct full-credit centres (12 places), then the slips one unit either side of each
    value's rounding (of both roundings of an exact tie) that no full-credit range already covers."""
    if values[0] is exact.NEG_INF:
        return []
    fixed = printed.fixed
    values = [v for v in values if v is not exact.NEG_INF]
    full = list(dict.fromkeys(fixed(v, 12) for v in values))
    unit, half = Decimal(1).scaleb(-places), Decimal(5).scaleb(-places - 1)
    slips = []
    for v in values:
        r, m = Decimal(fixed(v, places)), Decimal(fixed(v, 12))
        for s in (r - unit, r + unit) + ((2 * m - r - unit,) if abs(m - r) == half else ()):   # a tie's other rounding
            if all(abs(s - Decimal(c)) > half for c in full) and f"{s:.12f}" not in slips:
                slips.append(f"{s:.12f}")
    credit = Credit().slip
    return [(c, Fraction(1)) for c in full] + [(s, credit) for s in slips]
