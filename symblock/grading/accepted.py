"""What a static LMS question (Moodle Cloze, QTI) can accept for each asked entry, so that its marks
agree with `symblock grade` for every answer that carries no error of its own.

An LMS question compares each entry with fixed numbers; it cannot follow a student's own earlier
answers as the checker does. So each entry accepts, at full credit, every value the checker
accepts from an honest chain that can be known in advance:

* the exact value (rounded at the sheet's places: |answer − v| ≤ ½·10⁻ᵈ, both roundings of an
  exact tie);
* the value recomputed (`Item.recompute`, as grading recomputes a step from a person's inputs)
  from the key's printed numbers: each earlier asked step as the key prints it (its exact value
  rounded, or exact when short);
* the value of the rounded chain: each earlier asked step recomputed and rounded in turn, as a
  student who carries their own rounded numbers forward writes it;

and, at the checker's slip credit, one unit off in the last place from any of those (a rounding
slip). Unasked steps in between are recomputed from the same chain, as the checker does.
"""
from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from symblock.engine import exact
from symblock.engine.matrix import Mat
from symblock.grading.policy import Credit

MAX_EXACT_PLACES = 6    # as the sheets: a terminating decimal this short is printed exactly


def accepted(trace, exercise, places: int) -> dict[str, list[list[list[tuple[str, Fraction]]]]]:
    """{asked step: rows of entries, each a list of (12-place centre, credit), full credit first}:
    the centres are ranged ½·10⁻ᵈ either side (`places` d). A masked −∞ entry has no centre ([])."""
    from symblock.grading.marker import Marker
    asked = set(exercise.ask)
    printed, rounded = dict(trace.params), dict(trace.params)
    out = {}
    for it in Marker(trace, exercise).items:
        key = _recompute(it, printed)
        own = _recompute(it, rounded)
        if it.name in asked:
            out[it.name] = _entries([it.value, key, own], places)
            printed[it.name], rounded[it.name] = _printed(it.value, places), _printed(own, places, True)
        else:
            printed[it.name], rounded[it.name] = key, own
    return out


def annotate(tasks: list[dict], trace, exercise, places: int) -> None:
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
    return Mat([[e if _plain(e) and not always or e is exact.NEG_INF else _round(e, places) for e in row]
                for row in mat.rows])


def _plain(e) -> bool:
    """A short terminating decimal, which the key prints exactly (as the sheets' numbers do)."""
    if e is exact.NEG_INF or not e.is_rational:
        return e is exact.NEG_INF
    q = e.to_sympy()
    scaled = Fraction(int(q.p), int(q.q)) * 10 ** MAX_EXACT_PLACES
    return scaled.denominator == 1


def _fixed(e, places: int) -> str:
    d = exact.real(e).decimal(places)
    return f"{abs(d) if d == 0 else d:.{places}f}"


def _round(e, places: int):
    try:
        return exact.from_sympy(Fraction(exact.real(e).decimal(places)))
    except exact.UndecidableError:   # on a rounding tie to thousands of digits: either is fair
        return e


def _entries(values: list[Mat], places: int) -> list[list[list[tuple[str, Fraction]]]]:
    rows = []
    for i, row in enumerate(values[0].rows):
        rows.append([_answers([v.rows[i][j] for v in values], places) for j in range(len(row))])
    return rows


def _answers(values: list, places: int) -> list[tuple[str, Fraction]]:
    """Distinct full-credit centres (12 places), then the slips one unit either side of each
    value's rounding that no full-credit range already covers."""
    if values[0] is exact.NEG_INF:
        return []
    fixed = _fixed
    values = [v for v in values if v is not exact.NEG_INF]
    full = list(dict.fromkeys(fixed(v, 12) for v in values))
    unit, half = Decimal(1).scaleb(-places), Decimal(5).scaleb(-places - 1)
    slips = []
    for v in values:
        r = Decimal(fixed(v, places))
        for s in (r - unit, r + unit):
            if all(abs(s - Decimal(c)) > half for c in full) and f"{s:.12f}" not in slips:
                slips.append(f"{s:.12f}")
    credit = Credit().slip
    return [(c, Fraction(1)) for c in full] + [(s, credit) for s in slips]
