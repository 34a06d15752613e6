"""The text fields of an answers file around its numbers: the student's own data (the top-level
keys that are not the format's) and the short, inert excerpt an unreadable entry is quoted by."""
from __future__ import annotations

import difflib
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
