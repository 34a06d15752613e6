"""gradebook.csv in a layout an LMS's grade import takes as it is.

Canvas's gradebook import reads `Student, ID, SIS User ID, SIS Login ID, Section`, then one column
per assignment, and matches a row to a person by ID, SIS User ID or SIS Login ID. Moodle's CSV import
lets the teacher map any one column to a user field (email address, ID number) and any columns to
grade items, ignoring the rest. So the identifying columns come first in Canvas's names and order
(`ID`, Canvas's own user number, is left empty; `SIS User ID` holds the student ID, `SIS Login ID` the
email), then the grade columns (`total`, `percent`, each task), then what only a person reads
(`max`, `worksheet`, `file`, `status`, `flags`).

A total is the sum of the task cells as printed (2 decimals), so the columns add up in a spreadsheet;
the percentage is worked from that printed total. Every text cell goes through `text_cell`.
"""
from __future__ import annotations

import csv
import io
from decimal import ROUND_HALF_UP, Decimal

IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
GRADES = ["total", "percent"]
NOTES = ["max", "worksheet", "file", "status", "flags"]
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
    from symblock.grading.classreport import pts, shown_total
    from symblock.grading.identity import describe
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(header(cls.asked))
    for g in cls.graded:
        cells = [pts(g.scores[s]) for s in cls.asked]
        total = Decimal(shown_total(g, cls))
        w.writerow(_who(g.name, g.student) + [str(total), percent(total, cls.max_total), *cells]
                   + _notes(cls.max_total, g.ident, g.file, "graded", "; ".join(describe(f, lang) for f in g.flags)))
    for r in cls.rejected:
        w.writerow(_who(r.name, r.student) + ["", "", *([""] * len(cls.asked))]
                   + _notes(cls.max_total, r.ident, r.file, "not graded: " + r.reason, ""))
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
