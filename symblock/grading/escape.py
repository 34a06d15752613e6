"""User text (names, file names, IDs, reasons) as plain text in the Markdown outputs of `grade`."""
from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~&$])")


def md_text(text) -> str:
    """User text as plain Markdown text inside a line: every character Markdown (emphasis, code,
    links, tables, headings) or HTML could read as markup is escaped; line breaks become spaces."""
    return " ".join(_MD_SPECIAL.sub(r"\\\1", str(text)).splitlines())


def one_line(text) -> str:
    """User text on one terminal line: line breaks and other control characters (an escape
    sequence that would repaint the terminal) become spaces."""
    return "".join(" " if (c < " " or c == "\x7f") else c for c in " ".join(str(text).splitlines()))
