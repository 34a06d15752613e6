"""Moodle XML writer: one Cloze (multianswer) question per variant, in one category per set.

Each asked entry is a NUMERICAL sub-question `{1:NUMERICAL:=v:t#feedback}` centred on the exact
value v (12 places) with the tolerance t = ½·10⁻ᵈ of `symblock check`'s rule: a d-place answer is
right when it is v rounded to d places, i.e. |answer − v| ≤ ½·10⁻ᵈ. The feedback names the exact
value. A masked −∞ is a SHORTANSWER (`-inf`, `-oo`). Math is `\\(...\\)` / `\\[...\\]` for Moodle's
MathJax filter. Reads the sheet model only (`task.cells`).
"""
from __future__ import annotations

import re

from symblock.sheets import render

TEMPLATE = "moodle.xml.j2"
FILE = "moodle.xml"
_INLINE = re.compile(r"\$([^$]+)\$")
_CLOZE_SPECIAL = re.compile(r'([}#~/"\\])')


def _markup(text: str):
    from markupsafe import Markup
    return Markup(text)


def cloze_escape(text: str) -> str:
    """Moodle's Cloze syntax: `} # ~ / " \\` inside an answer or feedback take a backslash."""
    return _CLOZE_SPECIAL.sub(r"\\\1", text)


def tolerance(places: int) -> str:
    return "0." + "0" * places + "5" if places else "0.5"


def math(tex) -> str:
    from markupsafe import escape
    return _markup(rf"\({escape(str(tex))}\)")


def display(tex) -> str:
    from markupsafe import escape
    return _markup(rf"<p>\[{escape(str(tex))}\]</p>")


def prose(text) -> str:
    from markupsafe import escape
    text = str(text)
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        out += [str(escape(text[pos:m.start()])), str(math(m.group(1)))]
        pos = m.end()
    return _markup("".join(out) + str(escape(text[pos:])))


def cloze(cell: dict, places: int) -> str:
    """The sub-question of one entry (escaped for HTML; the Cloze syntax is plain text)."""
    from markupsafe import escape
    if cell["precise"] is None:  # a masked score
        return _markup(r"{1:SHORTANSWER:%100%-inf#" + cloze_escape(r"= −∞") + r"~%100%-oo#"
                       + cloze_escape("= −∞") + "}")
    if cell["plain"]:           # an integer or a short terminating decimal: exact as written
        value, note = cell["exact"], f"= {cell['exact']}"
    elif cell["exact"] is not None:
        value, note = cell["precise"], rf"= \({cell['exact']}\) ≈ {cell['decimal']}"
    else:
        value, note = cell["precise"], f"≈ {cell['decimal']}"
    return _markup(f"{{1:NUMERICAL:={value}:{tolerance(places)}#{escape(cloze_escape(note))}}}")


FILTERS = {"math": math, "display": display, "prose": prose, "cloze": cloze}


def category(models: list[dict]) -> str:
    """The set's category: the title and the spec part of the IDs (`token` of `token.seed`)."""
    token = models[0]["ident"].split(".")[0]
    title = str(models[0]["title"]).replace("/", "//")  # Moodle's escape of a / in a category name
    return f"$course$/top/symblock/{title} ({token})"


def files(models: list[dict], *, many: bool, template_dir=None) -> dict[str, str]:
    first = models[0]
    return {FILE: render.render({"lang": first["lang"], "category": category(models), "questions": models},
                                "xml", False, template_dir, template=TEMPLATE, filters=FILTERS)}
