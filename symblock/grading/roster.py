"""Who a student is to the school's LMS: the student ID and email an answers file carries
(`student_id:`, `email:` beside `id:` and `name:`), or a roster CSV given to `grade --roster FILE`.

An LMS matches an imported grade to a person by such an identifier, never by the worksheet ID or
the name typed on the sheet, so the gradebook needs them. The roster is the instructor's list and
wins over what a student typed; it is keyed by answers file name or by student name:

    file,name,student_id,email,section      (file or name required; the others optional)
    ada.yaml,,s1001,ada@example.edu,A
    ,Bob,s1002,bob@example.edu,
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

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
    row = (roster or {}).get(file) or (roster or {}).get(name.casefold()) or {}
    return {**own, **row}
