"""Does each answers file belong where its `id:` and `name:` put it?

A worksheet ID is only a label the student copies from the sheet. A typo that gives another valid ID
(`.10` written `.11`) would grade a file against a classmate's numbers, and two files with one ID,
one name or one set of answers (a copy, a file handed in twice) would pass unseen. So every graded
file is also compared, cheaply, with every variant of the set: its entries against each variant's
exact asked answers, rounded at the places each entry is written to (no marking, no recomputing from
the student's own numbers). Only the entries where two variants differ say which one the file fits
(a ReLU zero or a shared mean fits them all). A file is flagged when another variant fits clearly
better: at least RATIO times as many of those entries, and at least MARGIN more. A flagged file is
still graded against its own ID's variant; the flag is shown in the summary, on the terminal and in
the gradebook's `flags` column, so that a person decides.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

RATIO = 2    # another variant fits "clearly better": this many times the entries ...
MARGIN = 3   # ... and at least this many more (and at least this many answered to call answers the same)
PLACES = 3   # the places an exact entry (a fraction, sqrt(2)/2) is compared at


@dataclass(frozen=True)
class Flag:
    kind: str          # fits | same_id | same_name | same_answers
    other: str         # the variant that fits better, or the other file
    mine: int = 0      # fits: distinguishing entries matching the file's own variant ...
    theirs: int = 0    # ... and matching the other variant


TEXT = {
    "en": {"fits": "fits {other} better than its own id ({theirs} entries match {other}, {mine} its own, "
                   "among those where the two differ)",
           "same_id": "same id as {other}", "same_name": "same name as {other}",
           "same_answers": "same answers as {other}"},
    "zh": {"fits": "与 {other} 的吻合程度明显高于它自己的 ID（在两份练习不同的数中，{theirs} 个与 {other} 相符，"
                   "{mine} 个与自己的相符）",
           "same_id": "与 {other} 的 ID 相同", "same_name": "与 {other} 的姓名相同",
           "same_answers": "与 {other} 的答案完全相同"},
}


def describe(flag: Flag, lang: str = "en") -> str:
    return TEXT["zh" if lang == "zh" else "en"][flag.kind].format(other=flag.other, mine=flag.mine,
                                                                   theirs=flag.theirs)


def flag(graded: list, answers: dict, pool) -> None:
    """Set `g.flags` of every graded file. `answers`: file -> its answers.Answers (as read for its own
    variant), `pool`: the set's gradebook.Variants."""
    truths = Truths(pool)
    entries = {g.file: _entries(answers[g.file]) for g in graded}
    for g in graded:
        fit = best_fit(g.ident, entries[g.file], pool, truths)
        g.flags += [fit] if fit else []
    for kind, key in (("same_id", lambda g: g.ident), ("same_name", lambda g: g.name.casefold()),
                      ("same_answers", lambda g: _answer_key(entries[g.file]))):
        _duplicates(graded, kind, key)


def best_fit(own: str, entries: list, pool, truths: "Truths") -> Flag | None:
    """The other variant that fits `entries` clearly better than `own`, if any (the best such)."""
    best = None
    for other in pool.seeds:
        if other == own:
            continue
        mine = theirs = 0
        for step, i, j, places, given in entries:
            a, b = truths.match(own, step, i, j, places, given), truths.match(other, step, i, j, places, given)
            if a != b:
                mine, theirs = mine + a, theirs + b
        if theirs >= RATIO * mine and theirs - mine >= MARGIN and (best is None or theirs - mine > best.theirs - best.mine):
            best = Flag("fits", other, mine, theirs)
    return best


class Truths:
    """Each variant's asked answers rounded at the places asked for, computed once per entry."""

    def __init__(self, pool):
        self.pool, self.cache = pool, {}

    def match(self, ident: str, step: str, i: int, j: int, places: int, given: Decimal) -> bool:
        """Whether `given` is the variant's entry rounded at `places`, within one unit (a slip, or
        an exact tie rounded the other way)."""
        key = (ident, step, i, j, places)
        if key not in self.cache:
            self.cache[key] = self._rounded(ident, step, i, j, places)
        truth = self.cache[key]
        return truth is not None and abs(given - truth) <= Decimal(1).scaleb(-places)

    def _rounded(self, ident, step, i, j, places) -> Decimal | None:
        from symblock.engine import exact
        from symblock.grading.manifest import asked_value
        marker = self.pool.marker(ident)
        value = asked_value(marker.trace, marker.exercise, step)
        if i >= value.shape[0] or j >= value.shape[1]:
            return None
        x = exact.real(value.rows[i][j])
        return None if x is exact.NEG_INF else x.decimal(places)


def _entries(answers) -> list[tuple]:
    """(step, row, col, places, the entry as a Decimal at those places) of every answered finite entry."""
    from symblock.engine import exact
    out = []
    for name, step in answers.steps.items():
        for i, row in enumerate(step.entries):
            for j, e in enumerate(row):
                if e is None or e.value is None or exact.real(e.value) is exact.NEG_INF:   # blank, unreadable, −∞
                    continue
                places = e.places if e.places is not None else PLACES
                given = e.decimal if e.decimal is not None and e.places is not None else exact.real(e.value).decimal(places)
                out.append((name, i, j, places, given))
    return out


def _answer_key(entries: list):
    """The answers as a comparable value; None when too few are answered to call two files the same."""
    return frozenset(entries) if len(entries) >= MARGIN else None


def _duplicates(graded: list, kind: str, key) -> None:
    groups: dict = {}
    for g in graded:
        k = key(g)
        if k is not None:
            groups.setdefault(k, []).append(g)
    for group in groups.values():
        for g in group:
            g.flags += [Flag(kind, o.file) for o in group if o is not g]
