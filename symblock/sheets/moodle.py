"""Moodle XML writer: one Cloze (multianswer) question per variant, in one category per set.

Each asked entry is a NUMERICAL sub-question `{w:NUMERICAL:%100%v:t#fb~%100%c:t#fb~%50%s:t#fb}`:
full credit for the exact value v and for what the key's printed chain gives c (12 places, each
with t = ½·10⁻ᵈ: a d-place answer that is the value rounded, either rounding of an exact tie), the
checker's slip credit one unit off (grading.accepted). Weights w make a task's entries share its points
and the question's grade is the sheet's total, as `symblock grade` counts. The feedback names the
exact value. A masked −∞ is a SHORTANSWER (`-inf`, `-oo`, `-∞`, ... as `grade` reads them, and
the usual spellings of a `masked_fill` value, −1e9, −10000, ...: a SHORTANSWER matches text, so a
fill `grade` reads as −∞ but spelled otherwise is wrong here). Math is `\\(...\\)` / `\\[...\\]` for Moodle's
MathJax filter. Reads the sheet model only (`task.cells`).
"""
from __future__ import annotations

import re
from fractions import Fraction
from math import gcd
from math import lcm as math_lcm

from symblock.sheets import render

TEMPLATE = "moodle.xml.j2"
FILE = "moodle.xml"
_INLINE = re.compile(r"\$([^$]+)\$")
_CLOZE_SPECIAL = re.compile(r'([}#~/"\\])')
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_chars(text: str) -> str:
    """The document without the characters XML 1.0 forbids (control characters, lone surrogates,
    U+FFFE/U+FFFF), which user text may hold: an LMS refuses to import a file with one."""
    return _NOT_XML.sub("", text)


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


def masked_texts() -> list[str]:
    """What a masked score's text answer accepts: every spelling of −∞ that `grade` reads, then the
    common spellings of a `masked_fill` value that it reads as −∞ (options.MASK_FILLS), each with the
    ASCII minus and with the one a PDF copies."""
    from symblock.options import MASK_FILLS, NEG_INF
    texts = [*NEG_INF, *MASK_FILLS]
    return [*texts, *(t.replace("-", "\u2212", 1) for t in texts)]


def cloze(cell: dict, places: int, weight: int = 1) -> str:
    """The sub-question of one entry (escaped for HTML; the Cloze syntax is plain text): each
    answer the checker accepts without the student's own chain (grading.accepted), with its credit."""
    from markupsafe import escape
    if cell["precise"] is None:  # a masked score: −∞ in every spelling `grade` reads, and masked_fill's
        return _markup(f"{{{weight}:SHORTANSWER:" + "~".join(f"%100%{cloze_escape(t)}#{cloze_escape('= −∞')}"
                                                           for t in masked_texts()) + "}")
    if cell["plain"]:           # an integer or a short terminating decimal: exact as written
        note = f"= {cell['exact']}"
    elif cell["exact"] is not None:
        note = rf"= \({cell['exact']}\) ≈ {cell['decimal']}"
    else:
        note = f"≈ {cell['decimal']}"
    answers = list(cell.get("accept") or [(cell["precise"], 1)])
    if cell["plain"]:
        answers[0] = (cell["exact"], answers[0][1])
    fb = escape(cloze_escape(note))
    body = "~".join(f"%{percent(credit)}%{value}:{tolerance(places)}#{fb}" for value, credit in answers)
    return _markup(f"{{{weight}:NUMERICAL:{body}}}")


def percent(credit) -> str:
    """A credit as Moodle's answer fraction in percent (Moodle keeps 7 decimal places)."""
    v = Fraction(credit) * 100
    return str(v.numerator) if v.denominator == 1 else f"{float(v):.5f}".rstrip("0")


def weights(model: dict) -> dict[str, int]:
    """Each task's Cloze weight per entry, so that a task's entries share its points: entry weight
    ∝ points / entries (Moodle gives a sub-question defaultgrade·weight/Σweights)."""
    sizes = {t["name"]: sum(len(r) for r in t["cells"]) for t in model["tasks"]}
    common = math_lcm(*sizes.values())
    raw = {t["name"]: t.get("worth", 1) * common // sizes[t["name"]] for t in model["tasks"]}
    g = gcd(*raw.values()) or 1
    return {k: v // g for k, v in raw.items()}


def total(model: dict) -> int:
    return sum(t.get("worth", 1) for t in model["tasks"])


FILTERS = {"math": math, "display": display, "prose": prose, "cloze": cloze}


def category(models: list[dict]) -> str:
    """The set's category: the title and the spec part of the IDs (`token` of `token.seed`)."""
    from symblock.exercises.variants import split_id
    token = split_id(models[0]["ident"])[0]
    title = str(models[0]["title"]).replace("/", "//")  # Moodle's escape of a / in a category name
    return f"$course$/top/symblock/{title} ({token})"


def files(models: list[dict], *, many: bool, template_dir=None) -> dict[str, str]:
    first = models[0]
    return {FILE: xml_chars(render.render({"lang": first["lang"], "category": category(models),
                                 "questions": [dict(m, weights=weights(m), points=total(m)) for m in models]},
                                "xml", False, template_dir, template=TEMPLATE, filters=FILTERS))}
