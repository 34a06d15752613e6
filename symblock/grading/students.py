"""Who a file belongs to: the student's own data in an answers file (the top-level keys that are
not the format's), the short inert excerpt an unreadable entry is quoted by, the class roster
(a CSV an LMS exports) that fills in each student's identifiers, and whether a graded file belongs
where its `id:` and `name:` put it (`flag`, at the end: the identity check against every variant).
"""
from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Mapping

from symblock.engine.fields import kind_of
from symblock.errors import close_matches


MAX_STUDENT_KEYS = 32      # student data: keys kept, each key and value at most...
MAX_STUDENT_TEXT = 200     # ...this many characters (longer text is cut, marked …)
EXCERPT = 24               # characters of an unreadable entry quoted back


def student_data(data: Mapping, source: str, shapes: Mapping, top_keys: tuple) -> dict[str, str]:
    """The top-level keys that are not the format's: the student's own data (student_id, email,
    section), kept as short one-line text under lower-cased keys. A near-miss of a format key
    (`decimal:`) or a step name outside `steps:` is refused: read as data, it would change marks."""
    from symblock.engine.spec import SpecError
    out: dict[str, str] = {}
    for key, value in data.items():
        if key in top_keys:
            continue
        text = one_line(str(key), MAX_STUDENT_TEXT)
        near = near_miss(text, top_keys)
        if near or key in shapes:
            hint = f"did you mean {near[0]}?" if near else "a step goes under steps: (in CSV, with its row and col)"
            raise SpecError(source, text, f"unknown key ({hint}); expected one of {', '.join(top_keys)}, "
                                          "or student data such as student_id or email")
        if isinstance(value, (list, dict)):
            raise SpecError(source, text, f"student data: expected text, got {kind_of(value)}")
        if value is not None:
            out[text.lower()] = one_line(inert_excerpt(value, MAX_STUDENT_TEXT, inert=False), MAX_STUDENT_TEXT)
    if len(out) > MAX_STUDENT_KEYS:
        raise SpecError(source, "", f"{len(out)} keys of student data; expected at most {MAX_STUDENT_KEYS}")
    return out


def near_miss(key: str, top_keys: tuple) -> list[str]:
    """[the format key `key` is a typo of] or []: close by difflib (`decimal`, `stpes`), or the same
    letters in another order (`nmae`, `naem`: a swap difflib scores below its cutoff)."""
    low = key.lower()
    return close_matches(low, top_keys, cutoff=0.8) or [k for k in top_keys if sorted(k) == sorted(low)][:1]


def unknown_keys(data: Mapping, top_keys: tuple) -> list[tuple[str, str]]:
    """(key, the known key it is close to, or "") of each top-level key that is neither the format's nor
    student data a roster column takes (student_id, email, section): kept as the student's own
    data, but perhaps a typo, which `check` and `grade` name (`unknown_key_note`)."""
    known = {*top_keys, *COLUMNS}
    out = []
    for key in data:
        text = one_line(str(key), MAX_STUDENT_TEXT)
        if key in known or text.lower() in known or near_miss(text, top_keys):   # a near miss is refused
            continue
        near = close_matches(text.lower(), sorted(known))
        out.append((text, near[0] if near else ""))
    return out


def unknown_key_note(where: str, key: str, near: str, top_keys: tuple, lang: str = "en") -> str:
    """The warning naming a key `unknown_keys` found (and `near`, the key it may be a typo of), in `lang`."""
    from symblock.grading.lang import words
    w = words(lang)
    return w["unknown_key"].format(where=where, key=key, hint=w["near_key"].format(near=near) if near else "",
                                   keys=", ".join(top_keys), columns=", ".join(COLUMNS))


def one_line(text: str, limit: int) -> str:
    """`text` on one line, control characters and lone surrogates escaped, cut to `limit`."""
    from symblock.errors import printable
    text = printable(" ".join(text.split()))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def inert_excerpt(value: Any, limit: int = EXCERPT, inert: bool = True) -> str:
    """A short excerpt of what was written, at most `limit` characters; `inert`: letters, digits
    and number punctuation kept, anything else (markup, quotes, control characters) shown as `?`.
    A number is shown as written (1e99999999999999999999 stays short)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        return "…"   # past Python's int-to-text limit; never longer than `limit` digits anyway
    text = " ".join(str(value).split())
    short = text if len(text) <= limit else text[:limit - 1] + "…"
    return "".join(ch if ch.isalnum() or ch in " .,+-/^()…" else "?" for ch in short) if inert else short


# Who a student is to the school's LMS: the student ID and email an answers file carries
# (`student_id:`, `email:` beside `id:` and `name:`), or a roster CSV given to `grade --roster FILE`.
#
# An LMS matches an imported grade to a person by such an identifier, never by the worksheet ID or
# the name typed on the sheet, so the gradebook needs them. The roster is the instructor's list and
# wins over what a student typed; it is keyed by answers file name or by student name:
#
#     file,name,student_id,email,section      (file or name required; the others optional)
#     ada.yaml,,s1001,ada@example.edu,A
#     ,Bob,s1002,bob@example.edu,


FIELDS = ("student_id", "email")          # kept from an answers file as student data
COLUMNS = ("student_id", "email", "section")
ALIASES = {"id": "student_id", "sis user id": "student_id", "e-mail": "email", "mail": "email"}


def take(data: dict) -> dict[str, str]:
    """The student's own fields of an answers mapping (the answers reader keeps them as student data)."""
    out = {}
    for key in FIELDS:
        v = data.get(key)
        if v is not None and not isinstance(v, (dict, list, bool)) and str(v).strip():
            out[key] = str(v).strip()
    return out


def read(path: str | Path) -> dict[str, dict[str, str]]:
    """The roster as {file name or casefolded student name: {student_id, email, section}}."""
    from symblock.errors import SpecError
    source = str(path)
    if not Path(path).is_file():
        raise SpecError(source, "", "no such file (the roster: a CSV of file or name, student_id, email)")
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(source, "", f"cannot read it as UTF-8 text: {e}") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise SpecError(source, "line 1", "expected a header naming file or name, and student_id or email")
    head = [ALIASES.get(c.strip().lower(), c.strip().lower()) for c in rows[0]]
    if not {"file", "name"} & set(head) or not {"student_id", "email"} & set(head):
        raise SpecError(source, "line 1", "expected a header naming file or name, and student_id or email, "
                                          f"got {','.join(rows[0])!r}")
    out: dict[str, dict[str, str]] = {}
    for n, r in enumerate(rows[1:], start=2):
        cells = dict(zip(head, (c.strip() for c in r)))
        who = {k: cells[k] for k in COLUMNS if cells.get(k)}
        keys = [cells[k] if k == "file" else cells[k].casefold() for k in ("file", "name") if cells.get(k)]
        if not keys and any(cells.values()):
            raise SpecError(source, f"line {n}", "expected a file or a name")
        for key in keys:
            if key in out:
                raise SpecError(source, f"line {n}", f"{key!r} is listed twice")
            out[key] = who
    return out


def student(roster: dict | None, file: str, name: str, own: dict[str, str]) -> dict[str, str]:
    """A file's student data: the roster's row (by file, then by name) over the file's own fields."""
    return {**own, **(row_of(roster, file, name) or {})}


def row_of(roster: dict | None, file: str, name: str) -> dict[str, str] | None:
    """A file's roster row: by file name, then by student name."""
    return (roster or {}).get(file) or (roster or {}).get(name.casefold())


def unmatched(roster: dict, people: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """(the roster rows no answers file matched, by their first key; the files, of (file, name),
    with no roster row): what `grade --roster` reports, so that a misspelt name is not silent."""
    used, alone = set(), []
    for file, name in people:
        row = row_of(roster, file, name)
        if row is None:
            alone.append(file)
        else:
            used.add(id(row))
    rows = {}
    for key, row in roster.items():   # a row listed by file and by name is one row: its first key names it
        rows.setdefault(id(row), key)
    return [key for i, key in rows.items() if i not in used], alone


# ---------------------------------------------------------------- does each file belong where its ID puts it?

# A worksheet ID is only a label the student copies from the sheet. A typo that gives another valid ID
# (`.10` written `.11`) would grade a file against a classmate's numbers, and two files with one ID,
# one name or one set of answers (a copy, a file handed in twice) would pass unseen, as would two files
# given one student ID (by the roster or by the files: the LMS import puts both grades on one person). So every graded
# file is also compared, cheaply, with every variant of the set: its entries against each variant's
# exact asked answers, rounded at the places each entry is written to (no marking, no recomputing from
# the student's own numbers). Only the entries where two variants differ say which one the file fits
# (a ReLU zero or a shared mean fits them all). A file is flagged when another variant fits clearly
# better: at least RATIO times as many of those entries, and at least MARGIN more. A flagged file is
# still graded against its own ID's variant; the flag is shown in the summary, on the terminal and in
# the gradebook's `flags` column, so that a person decides.


RATIO = 2    # another variant fits "clearly better": this many times the entries ...
MARGIN = 3   # ... and at least this many more (and at least this many answered to call answers the same)
PLACES = 3   # the places an exact entry (a fraction, sqrt(2)/2) is compared at


IN_DOUBT = frozenset({"fits", "blank"})   # flags whose file's marks say nothing of the class's work: left out of its task stats


@dataclass(frozen=True)
class Flag:
    kind: str          # fits | blank | same_id | same_name | same_answers | same_student_id | same_email
    other: str         # the variant that fits better, or the other file
    mine: int = 0      # fits: distinguishing entries matching the file's own variant ...
    theirs: int = 0    # ... and matching the other variant
    value: str = ""    # same_student_id, same_email: the student ID or email the two files share


def flag(graded: list, entries: dict, pool, truths: "Truths | None" = None, rejected: list = ()) -> None:
    """Set `g.flags` of every graded file. `entries`: file -> its answered entries (`answered_entries` of
    its answers as read for its own variant), `pool`: the set's Variants, `truths` (optional) their
    rounded values, some or all already worked out (`grade --jobs`). A student ID or an email two files
    share (the roster's, else the file's) is flagged on the `rejected` files too: an LMS import would
    still put both rows on one student."""
    truths = truths or Truths(pool)
    for g in graded:
        if not entries[g.file]:   # nothing answered: most often the blank template handed in
            g.flags.append(Flag("blank", ""))
        elif fit := best_fit(g.ident, entries[g.file], pool, truths):
            g.flags.append(fit)
    for kind, key in (("same_id", lambda g: g.ident), ("same_name", lambda g: g.name.casefold()),
                      ("same_answers", lambda g: _answer_key(entries[g.file]))):
        _duplicates(graded, kind, key)
    for kind, column in (("same_student_id", "student_id"), ("same_email", "email")):   # the roster's, else the file's
        _duplicates([*graded, *rejected], kind, lambda g: (g.student.get(column) or "").strip().casefold() or None,
                    lambda g: g.student.get(column, ""))


def best_fit(own: str, entries: list, pool, truths: "Truths") -> Flag | None:
    """The other variant that fits `entries` clearly better than `own`, if any (the best such; the
    first in the set's order among equals). Only the variants an entry fits are visited (`fitting`),
    so a class of N files costs about N × entries, not N² × entries."""
    if sum(e[3] is not None and not truths.match(own, *e) for e in entries) < MARGIN:
        return None   # another variant fits only entries own does not: fewer than MARGIN, none fits clearly better
    held, both, theirs = 0, Counter(), Counter()   # entries own fits; per other variant: fits with own, fits without
    for step, i, j, places, given in entries:
        if places is None:   # unreadable or −∞: no number to fit
            continue
        fits = truths.fitting(step, i, j, places, given)
        mine = own in fits
        held += mine
        (both if mine else theirs).update(fits)
    best = None
    for other in pool.seeds:
        if other == own:
            continue
        m, t = held - both.get(other, 0), theirs.get(other, 0)   # entries only own fits, only other fits
        if t >= RATIO * m and t - m >= MARGIN and (best is None or t - m > best.theirs - best.mine):
            best = Flag("fits", other, m, t)
    return best


def neighbours(ident: str) -> list[str]:
    """The IDs a slip of the pen makes of a variant's ID when no set lists the variants (`check`
    of a copy): its number with one digit changed, two neighbours swapped or one dropped."""
    from symblock.exercises.variants import make_id, split_id
    token, seed = split_id(ident)
    if seed is None or seed >= 10 ** 6:   # a set's variants are numbered from 1; a long seed is typed from no set
        return []
    d = str(seed)
    near = {d[:k] + c + d[k + 1:] for k in range(len(d)) for c in "0123456789"}
    near |= {d[:k] + d[k + 1] + d[k] + d[k + 2:] for k in range(len(d) - 1)} | {d[:k] + d[k + 1:] for k in range(len(d))}
    return [make_id(token, int(n)) for n in sorted(near, key=lambda n: (len(n), n)) if n[:1] not in ("", "0") and n != d]


class Truths:
    """Each variant's asked answers rounded at the places asked for, computed once per entry, and
    for each entry the variants' values in order, so that the variants a given number fits are found
    by bisection."""

    def __init__(self, pool):
        self.pool, self.cache, self.index, self.fits = pool, {}, {}, {}

    def match(self, ident: str, step: str, i: int, j: int, places: int, given: Decimal) -> bool:
        """Whether `given` is the variant's entry rounded at `places`, within one unit (a slip, or
        an exact tie rounded the other way)."""
        key = (ident, step, i, j, places)
        if key not in self.cache:
            self.cache[key] = self.rounded(ident, step, i, j, places)
        truth = self.cache[key]
        return truth is not None and abs(given - truth) <= Decimal(1).scaleb(-places)

    def fitting(self, step: str, i: int, j: int, places: int, given: Decimal) -> set[str]:
        """The variants whose entry `given` matches (`match`): the window of the sorted values
        within one unit, its ends exact (a very long number: every variant tested). Files that
        give the same number share the answer (a set: read, never changed)."""
        from bisect import bisect_left, bisect_right
        asked = (step, i, j, places, given)
        if asked in self.fits:
            return self.fits[asked]
        key = (step, i, j, places)
        if key not in self.index:
            values = [(self.rounded(v, step, i, j, places), v) for v in self.pool.seeds]
            pairs = sorted(((t, v) for t, v in values if t is not None), key=lambda p: p[0])
            self.index[key] = [t for t, _ in pairs], pairs
        keys, pairs = self.index[key]
        unit = Decimal(1).scaleb(-places)
        if given.is_finite() and given.adjusted() + places < 20:   # given ± unit exact: the window is |given − t| <= unit
            out = {v for _, v in pairs[bisect_left(keys, given - unit):bisect_right(keys, given + unit)]}
        else:
            out = {v for t, v in pairs if abs(given - t) <= unit}
        self.fits[asked] = out
        return out

    def rounded(self, ident, step: str, i, j, places) -> Decimal | None:
        key = (ident, step, i, j, places)
        if key not in self.cache:
            self.cache[key] = self.pool.rounded(ident, step, i, j, places)
        return self.cache[key]


def variant_rounded(v, step: str, i: int, j: int, places: int) -> Decimal | None:
    """Entry (i, j) of the variant's answer `step` (else of its trace's step) rounded half away from
    zero at `places`; None where it has no such entry, or it is −∞. What a pool's `rounded` gives."""
    from symblock.engine import exact
    value = v.answers[step] if step in v.answers else v.trace[step].value if step in v.trace else None
    if value is None or i >= value.shape[0] or j >= value.shape[1]:
        return None
    x = exact.real(value.rows[i][j])
    return None if x is exact.NEG_INF else x.decimal(places)


def answered_entries(answers) -> list[tuple]:
    """(step, row, col, places, the entry as a Decimal at those places) of every answered finite entry;
    an unreadable or −∞ entry as (step, row, col, None, its text as written), which only the
    same-answers check reads (two files differing there are not the same answers)."""
    from symblock.engine import exact
    out = []
    for name, step in answers.steps.items():
        for i, row in enumerate(step.entries):
            for j, e in enumerate(row):
                if e is None:
                    continue
                if e.value is None or exact.real(e.value) is exact.NEG_INF:   # unreadable, −∞
                    out.append((name, i, j, None, e.text))
                    continue
                places = e.places if e.places is not None else PLACES
                given = e.decimal if e.decimal is not None and e.places is not None else exact.real(e.value).decimal(places)
                out.append((name, i, j, places, given))
    return out


def _answer_key(entries: list):
    """The answers as a comparable value; None when too few are answered to call two files the same."""
    return frozenset(entries) if len(entries) >= MARGIN else None


def _duplicates(files: list, kind: str, key, value=lambda g: "") -> None:
    """Flag each of `files` that shares its `key` (not None) with others, naming each other file."""
    groups: dict = {}
    for g in files:
        k = key(g)
        if k is not None:
            groups.setdefault(k, []).append(g)
    for group in groups.values():
        for g in group:
            g.flags += [Flag(kind, o.file, value=value(g)) for o in group if o is not g]
