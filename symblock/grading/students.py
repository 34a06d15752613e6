"""Who a file belongs to: the student's own data in an answers file (the top-level keys that are
not the format's), the short inert excerpt an unreadable entry is quoted by, and the class roster
(a CSV an LMS exports) that fills in each student's identifiers.
"""
from __future__ import annotations

import csv
import difflib
import io
from pathlib import Path
from typing import Any, Mapping

from symblock.engine.fields import kind_of


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
        near = difflib.get_close_matches(text.lower(), top_keys, n=1, cutoff=0.8)
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
