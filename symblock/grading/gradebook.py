"""Grade a class: every answers file of a folder, each against its own variant of a set, into the
gradebook an LMS imports.

`grade(manifest, files)` reads each file's `id:`, finds the variant the manifest lists, builds that
variant's exact forward once (a Marker), marks the file and scores its asked tasks (points.py). A
file that cannot be graded (no id, an id of another spec or of no variant of the set, a malformed
file or entry) is kept as a `Rejected` with the reason, never marked against another block. A graded
file whose ID, name or answers are in doubt carries flags for a person to look at (`flag`, below).
The CSV in an LMS's import layout is `gradebook_csv` (end of this module); the printed views are in
report.py.
"""
from __future__ import annotations

import csv
import io
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal, ROUND_HALF_UP
from fractions import Fraction
from pathlib import Path

from symblock.errors import SpecError, UsageError
from symblock.exercises.variant import UNDECIDED, matrix_entries, stored_rounded
from symblock.grading.students import IN_DOUBT, answered_entries, flag, variant_rounded


SUFFIXES = (".yaml", ".yml", ".json", ".csv")


@dataclass
class Graded:
    file: str
    name: str
    ident: str
    result: object                         # marking.CheckResult
    scores: dict[str, Fraction] = field(default_factory=dict)   # asked step -> points earned
    student: dict[str, str] = field(default_factory=dict)      # student_id, email, section (students.py)
    flags: list = field(default_factory=list)                   # Flag: a person should look

    @property
    def total(self) -> Fraction:
        return sum(self.scores.values(), Fraction(0))


@dataclass
class Rejected:
    file: str
    name: str
    ident: str | None
    reason: str            # why, in English; it names neither the file nor the name (printed beside it)
    student: dict[str, str] = field(default_factory=dict)      # as Graded.student: the LMS still finds the row
    why: tuple = ()        # (kind, values) of lang.NOT_GRADED: the reason in each language
    flags: list = field(default_factory=list)   # students.Flag: a student ID or email shared with another file

    @classmethod
    def of(cls, file: str, name: str, ident, why: tuple, student: dict) -> "Rejected":
        from symblock.grading.lang import not_graded
        return cls(file, name, ident, not_graded(*why), student, why)

    def said(self, lang: str = "en") -> str:
        from symblock.grading.lang import not_graded
        return not_graded(*self.why, lang) if self.why else self.reason


@dataclass
class Class:
    manifest: dict
    graded: list[Graded]
    rejected: list[Rejected]
    _stats: tuple | None = field(default=None, repr=False, compare=False)   # task_stats: (flags, rows)

    @property
    def asked(self) -> list[str]:
        return list(self.manifest["asked"])

    @property
    def points(self) -> dict[str, int]:
        return {s: int(self.manifest["points"].get(s, 1)) for s in self.asked}

    @property
    def max_total(self) -> int:
        return sum(self.points.values())

    @property
    def counted(self) -> list[Graded]:
        """The graded files the task statistics count: all but those flagged as another variant's or
        as answering nothing (students.IN_DOUBT), whose marks would fill the class's mistakes with a
        wrong variant's errors or a template's blanks. The gradebook and the mean total count them."""
        return [g for g in self.graded if not any(f.kind in IN_DOUBT for f in g.flags)]

    def task_stats(self) -> list[dict]:
        """Per asked step, over the `counted` files (shares as exact Fractions): mean points, the share
        of students wrong, the share of the class's entries left blank (`blank_share`: a step not
        answered counts all its entries), the most frequent diagnoses. Worked once for the flags as
        they stand (the summaries, plots and terminal lines each read it; flags are added after)."""
        key = tuple(tuple(f.kind for f in g.flags) for g in self.graded)
        if self._stats is None or self._stats[0] != key:
            self._stats = key, self._task_stats()
        return self._stats[1]

    def _task_stats(self) -> list[dict]:
        counted = self.counted
        rows, named = [], [{x.name: x for x in reversed(g.result.steps)} for g in counted]   # the first of a name
        for s in self.asked:
            steps = [by[s] for by in named]
            n = len(steps) or 1
            codes = Counter(c for x in steps if x.status == "wrong" for c in x.diagnosis)
            rows.append({"step": s, "points": self.points[s],
                         "mean": sum((g.scores[s] for g in counted), Fraction(0)) / n,
                         "wrong": Fraction(sum(x.status == "wrong" for x in steps), n),
                         "missing": sum((blank_share(x) for x in steps), Fraction(0)) / n,
                         "codes": codes.most_common(3)})
        return rows


def blank_share(step) -> Fraction:
    """The share of a step's entries (a marking.StepResult) left blank: all of them when it is not answered."""
    if step.status == "missing" or not step.entries:
        return Fraction(int(step.status == "missing"))
    return Fraction(sum(e.mark == "blank" for e in step.entries), len(step.entries))


def answer_files(folder: Path, skip: Path | None = None) -> list[Path]:
    """The answers files directly inside `folder` (YAML, JSON, CSV), sorted by name. Symbolic links
    and other files that are not regular are listed too, so that `grade` names them as refused."""
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a directory (expected a folder of answers files)")
    return sorted(p for p in folder.iterdir() if (p.is_symlink() or not p.is_dir()) and p.suffix.lower() in SUFFIXES
                  and p.name != "manifest.yaml" and (skip is None or p.resolve() != skip.resolve()))


class Variants:
    """The set's variants by ID, each rebuilt (forward; the exercise as stored; a Marker) the first
    time it is needed. `guard`: the manifest's file, read without its entries checked
    (manifest.read(entries=False)): each variant's are checked when it is first rebuilt."""

    def __init__(self, manifest: dict, guard: str | None = None):
        from symblock.exercises import variants
        self.manifest, self.guard = manifest, guard
        self.token = str(manifest["spec_token"])
        self.seeds = {str(v["id"]): int(v["seed"]) for v in manifest["variants"]}
        self.stored = {str(v["id"]): v.get("exercise") for v in manifest["variants"]}   # validated by manifest.read
        if self.token.startswith("h") and variants.token_of(manifest["spec"]) != variants.split_version(self.token)[0]:
            raise SpecError("manifest.yaml", "spec", f"does not give the spec token {self.token} of its IDs "
                            "(the manifest was edited)")
        self._markers: dict[str, object] = {}
        self._variants: dict[str, object] = {}
        self._rows: dict[tuple, list] = {}   # (ID, step) -> its stored answer's entry texts (`rounded`)

    def problem(self, ident: str | None) -> str | None:
        """Why `ident` names no variant of this set (None: it does)."""
        from symblock.grading.lang import not_graded
        why = self.problem_of(ident)
        return None if why is None else not_graded(*why)

    def problem_of(self, ident: str | None) -> tuple | None:
        """`problem` as (kind, values) of lang.NOT_GRADED, to be said in either language."""
        if not ident:
            return "no_id", {}
        if ident in self.seeds:
            return None
        from symblock.exercises.variants import split_id, split_version
        token = split_id(ident)[0]
        (base, g), (own, mine) = split_version(token), split_version(self.token)
        if token != self.token and base == own:
            return "version", {"ident": ident, "g": g, "mine": mine, "token": self.token}
        if token != self.token:
            return "spec", {"ident": ident, "token": token, "own": self.token}
        ids = list(self.seeds)
        return "variant", {"ident": ident, "n": len(ids), "first": ids[0], "last": ids[-1]}

    def variant(self, ident: str):
        """The variant `ident` as the set stored it (exercises/variant.py): its trace drawn again
        from the spec and seed (for recompute and diagnosis), its exercise and answers as stored."""
        if ident not in self._variants:
            from symblock.exercises import variant
            if self.guard is not None:
                from symblock.grading.manifest import check_entries
                check_entries(self.manifest, self.guard, {ident})
            from symblock.exercises.generate import merge_random
            m = self.manifest
            data = merge_random(m["spec"], m.get("random_flags") or None)
            got = variant.draw(data, str(m.get("spec_source", "manifest")), self.seeds[ident])
            if got is None:
                raise SpecError("manifest.yaml", "variants", f"{ident}: its seed no longer gives a usable block")
            options = variant.Options.of(m.get("preset"), m.get("loss"), m.get("wrt"))
            self._variants[ident] = variant.build(ident, got[1], options, stored=self.stored[ident])
        return self._variants[ident]

    def rounded(self, ident: str, step: str, i: int, j: int, places: int):
        """`students.variant_rounded` of the variant `ident`, read from its stored answer where that
        decides it (exercises/variant.stored_rounded: no draw), so that the identity check compares a
        file with every variant of the set without drawing each; else from the variant drawn again."""
        text = (self.stored[ident] or {}).get("answers", {}).get(step)
        if text is not None:
            if (ident, step) not in self._rows:
                self._rows[ident, step] = matrix_entries(text)
            rows = self._rows[ident, step]
            if i >= len(rows) or j >= len(rows[i]):
                return None
            out = stored_rounded(rows[i][j], places, f"variants: {ident}: answers.{step}[{i}][{j}]")
            if out is not UNDECIDED:
                return out
        return variant_rounded(self.variant(ident), step, i, j, places)

    def marker(self, ident: str):
        if ident not in self._markers:
            from symblock.grading.marking import Marker
            self._markers[ident] = Marker.of(self.variant(ident))
        return self._markers[ident]


def grade(manifest: dict, files: list[Path], credit, roster: dict | None = None, marks=None, marked=None) -> Class:
    """Mark every file against its own variant and score it, then flag the files whose identity is
    in doubt (`flag`); see the module docstring. `roster`: students.read's mapping. `marks(read,
    pool, how)`: how the read files are marked, (outcomes in the files' order, the rounded values
    already worked out or None); default `mark_all`, in this process (`grade --jobs`: in several).
    `marked(cls)`: called once the scores and flags are in (`grade --jobs` starts the plots)."""
    from symblock.grading.answers import set_policy
    pool = Variants(manifest)
    how = How(set_policy(manifest), credit, roster,
              {s: int(manifest["points"].get(s, 1)) for s in manifest["asked"]})
    read = [read_one(path, pool, roster) for path in files]
    outcomes, truths = (marks or mark_all)(read, pool, how)
    graded = [g for g, _ in outcomes if isinstance(g, Graded)]
    cls = Class(manifest, graded, [r for r, _ in outcomes if isinstance(r, Rejected)])
    flag(graded, {g.file: e for g, e in outcomes if isinstance(g, Graded)}, pool, truths, cls.rejected)
    if marked:   # after the flags: the task plots count what the task table counts (`Class.counted`)
        marked(cls)
    return cls


def mark_all(read: list, pool: "Variants", how: "How") -> tuple[list, None]:
    return [mark_one(r, pool, how) for r in read], None


@dataclass(frozen=True)
class How:
    """What marking a file takes besides the file and its variant."""
    default: object        # answers.Policy: the set's places
    credit: object         # points.Credit
    roster: dict | None
    points: dict


def read_one(path: Path, pool: "Variants", roster):
    """A file read for its ID: (file, name, ident, own data, its mapping), or its Rejected."""
    from symblock.grading import answers as answers_mod
    from symblock.grading import students
    file, name, ident, own = shown(path.name), shown(path.stem), None, {}
    try:
        if file != path.name:
            raise SpecError(file, "", "the file name is not UTF-8 text; rename the file")
        data, _ = answers_mod.read(path)
        own = students.take(data)
        name = _name(data.get("name")) or name
        ident = _name(data.get("id"))
        why = pool.problem_of(ident)
    except Exception as e:   # this file's failure, named; the others are still graded
        why = _why(e, file)
    if why:
        return Rejected.of(file, name, ident, why, students.student(roster, file, name, own))
    return file, name, ident, own, data


def mark_one(read, pool: "Variants", how: How) -> tuple:
    """(Graded, its answered entries) of a file `read_one` read, or (Rejected, None)."""
    from symblock.grading import students
    if isinstance(read, Rejected):
        return read, None
    file, name, ident, own, data = read
    who = students.student(how.roster, file, name, own)
    try:
        marker = pool.marker(ident)
        answers = marker.answers(data, file, how.default)
        result = marker.mark_answers(answers, forms=False)
        entries = answered_entries(answers)
    except Exception as e:   # this file's failure, named; the others are still graded
        return Rejected.of(file, name, ident, _why(e, file), who), None
    by_name = {s.name: s for s in result.steps}
    g = Graded(file, name, ident, result, student=who)
    g.scores = {s: how.credit.task(by_name.get(s), n) for s, n in how.points.items()}
    return g, entries


def _why(e: Exception, file: str) -> tuple:
    """The reason a file is not graded, as (kind, values) of lang.NOT_GRADED: its input's error (the
    field and what was expected; the source only when it is another file than `file`), anything
    else named as an internal error (a bug in symblock, not the student's fault), never a traceback."""
    from symblock.errors import excerpt
    if isinstance(e, SpecError):
        where = "".join(f"{x}: " for x in (e.source if Path(e.source).name != file else "", e.where) if x)
        return "input", {"where": shown(where), "message": shown(e.message)}
    if isinstance(e, UsageError):
        return "input", {"where": "", "message": shown(str(e))}
    return "internal", {"error": shown(f"{type(e).__name__}: {excerpt(str(e))}")}


def shown(text: str) -> str:
    """Text that can be written to a UTF-8 file: a lone surrogate (from a file name that is not
    UTF-8, or a YAML escape) becomes its escape \\udcff instead of failing the whole write."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _name(v) -> str | None:
    return shown(str(v)).strip() or None if v is not None and not isinstance(v, (dict, list)) else None


def feedback_files(cls) -> dict[str, str]:
    """{answers file: its feedback file, relative to the output folder (`feedback/<name>.md`)} of
    every graded file, in the class's order: one naming for the files written and the gradebook."""
    taken: set[str] = set()
    return {g.file: f"feedback/{slug(g.name, taken)}.md" for g in cls.graded}


def slug(name: str, taken: set[str]) -> str:
    """A file name for `name`'s feedback: letters, digits (any script), - and _; unique in `taken`."""
    base = re.sub(r"[^\w-]+", "-", name, flags=re.UNICODE).strip("-_")[:60] or "student"
    out, k = base, 2
    while out.lower() in taken:
        out, k = f"{base}-{k}", k + 1
    taken.add(out.lower())
    return out


# gradebook.csv in a layout an LMS's grade import takes as it is.
#
# Canvas's gradebook import reads `Student, ID, SIS User ID, SIS Login ID, Section`, then one column
# per assignment, and matches a row to a person by ID, SIS User ID or SIS Login ID. Moodle's CSV import
# lets the teacher map any one column to a user field (email address, ID number) and any columns to
# grade items, ignoring the rest. So the identifying columns come first in Canvas's names and order
# (`ID`, Canvas's own user number, is left empty; `SIS User ID` holds the student ID, `SIS Login ID` the
# email), then the grade columns (`total`, `percent`, each task), then what only a person reads
# (`max`, `worksheet`, `file`, `status`, `flags`, and `feedback`: the feedback file, relative to the
# gradebook's folder, to send each student).
#
# A total is the sum of the task cells as printed (2 decimals), so the columns add up in a spreadsheet;
# the percentage is worked from that printed total. Every text cell goes through `text_cell`.


IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
GRADES = ["total", "percent"]
NOTES = ["max", "worksheet", "file", "status", "flags", "feedback"]
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def text_cell(text) -> str:
    """A text cell as a spreadsheet will not run it: one that would start a formula gets a leading '
    (OWASP's advice), and line breaks become spaces so that every row stays one line."""
    raw = "" if text is None else str(text)
    s = " ".join(raw.splitlines())
    return "'" + s if raw.startswith(_FORMULA) or s.lstrip().startswith(_FORMULA) else s


def header(asked: list[str]) -> list[str]:
    return IDENTITY + GRADES + list(asked) + NOTES


def gradebook_csv(cls, lang: str = "en") -> str:
    """One row per file: the graded, then those that could not be graded (no points)."""
    from symblock.grading.lang import describe
    from symblock.grading.report import pts, shown_total
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(header(cls.asked))
    feedback = feedback_files(cls)
    for g in cls.graded:
        cells = [pts(g.scores[s]) for s in cls.asked]
        total = Decimal(shown_total(g, cls))
        w.writerow(_who(g.name, g.student) + [str(total), percent(total, cls.max_total), *cells]
                   + _notes(cls.max_total, g.ident, g.file, "graded", "; ".join(describe(f, lang) for f in g.flags))
                   + [text_cell(feedback[g.file])])
    for r in cls.rejected:
        w.writerow(_who(r.name, r.student) + ["", "", *([""] * len(cls.asked))]
                   + _notes(cls.max_total, r.ident, r.file, "not graded: " + r.said(lang),
                            "; ".join(describe(f, lang) for f in r.flags)) + [""])
    return out.getvalue()


def percent(total: Decimal, max_total: int) -> str:
    if not max_total:
        return ""
    return str((total * 100 / max_total).quantize(Decimal("0.01"), ROUND_HALF_UP))


def _who(name: str, student: dict) -> list[str]:
    return [text_cell(name), "", text_cell(student.get("student_id")), text_cell(student.get("email")),
            text_cell(student.get("section"))]


def _notes(max_total: int, ident, file: str, status: str, flags: str) -> list[str]:
    return [str(max_total), text_cell(ident), text_cell(file), text_cell(status), text_cell(flags)]
