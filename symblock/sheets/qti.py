"""Canvas / QTI 1.2 writer: `qti.zip`, a content package with one quiz (assessment) per variant and
one numerical question per asked entry worth its share of the task's points, accepting the exact
value and the key's printed chain (each ±½·10⁻ᵈ; grading.accepted's full-credit answers: Canvas
scores a numerical question all or nothing, so a slip earns no partial credit there), its feedback
the exact value. A masked −∞ is a short-answer question: Canvas
matches its text (trimmed, any case) against moodle.masked_texts(), −∞'s spellings and masked_fill's.

Written from templates rather than with text2qti: text2qti prints numerical bounds with 4 decimal
places (a wrong tolerance from `--decimals 4` on), stamps the manifest with today's date (output
would not be byte-identical), and reads only its own Markdown dialect (no display math or tables).
The XML follows the Canvas dialect text2qti emits (numerical_question with vargte/varlte, math as
Canvas equation images). The zip is deterministic (fixed timestamps). Reads the sheet model only.
"""
from __future__ import annotations

import hashlib
import io
import re
import zipfile
from decimal import Decimal
from fractions import Fraction
from urllib.parse import quote

from symblock.sheets import render
from symblock.sheets.moodle import masked_texts, xml_chars

FILE = "qti.zip"
MANIFEST, ASSESSMENT, META = "qti-manifest.xml.j2", "qti-assessment.xml.j2", "qti-meta.xml.j2"
_INLINE = re.compile(r"\$([^$]+)\$")
_STAMP = (1980, 1, 1, 0, 0, 0)


def _markup(text: str):
    from markupsafe import Markup
    return Markup(text)


def equation(tex, block: bool = False) -> str:
    """LaTeX as a Canvas equation image (Canvas renders `/equation_images/<latex>` itself)."""
    from markupsafe import escape
    tex = str(tex)
    img = (f'<img class="equation_image" title="{escape(tex)}" src="/equation_images/{quote(tex, safe="")}'
           f'?scale=1" alt="LaTeX: {escape(tex)}" data-equation-content="{escape(tex)}">')
    return _markup(f"<p>{img}</p>" if block else img)


def prose(text) -> str:
    from markupsafe import escape
    text, out, pos = str(text), [], 0
    for m in _INLINE.finditer(text):
        out += [str(escape(text[pos:m.start()])), str(equation(m.group(1)))]
        pos = m.end()
    return _markup("".join(out) + str(escape(text[pos:])))


def bounds(cell: dict, places: int) -> list[dict]:
    """The numerical answers of one entry that earn full credit (grading.accepted): each a centre (exact
    when it is a short decimal), its range ±½·10⁻ᵈ and its score in percent. A slip's partial credit
    is left out: Canvas's numerical questions are all or nothing (its import takes every range as
    fully right), so a slip range would earn full credit there."""
    tol = Decimal(5).scaleb(-(places + 1))
    answers = [a for a in cell.get("accept") or [] if a[1] == 1] \
        or [(cell["exact"] if cell["plain"] else cell["precise"], 1)]
    out = []
    for k, (centre, credit) in enumerate(answers):
        if k == 0 and cell["plain"]:
            centre = cell["exact"]
        out.append({"centre": centre, "low": str(Decimal(centre) - tol), "high": str(Decimal(centre) + tol),
                    "score": _number(Fraction(credit) * 100)})
    return out


def share(task: dict) -> str:
    """One entry's points: the task's points shared by its entries (6 places when not exact)."""
    return _number(Fraction(task.get("worth", 1), sum(len(r) for r in task["cells"])))


def _number(q: Fraction) -> str:
    if q.denominator == 1:
        return str(q.numerator)
    return f"{float(q):.6f}".rstrip("0")


def ident(*parts: str) -> str:
    return "sb_" + hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:24]


FILTERS = {"math": equation, "display": lambda tex: equation(tex, block=True), "prose": prose,
           "bounds": bounds, "share": share}


def files(models: list[dict], *, many: bool, template_dir=None) -> dict[str, bytes]:
    quizzes = []
    for model in models:
        aid = ident("assessment", model["ident"], str(model["title"]))
        quizzes.append({"id": aid, "meta_id": ident("meta", aid), "model": model,
                        "points": sum(task.get("worth", 1) for task in model["tasks"])})
    lang = models[0]["lang"]

    def xml(template, **context):
        return xml_chars(render.render({"lang": lang, **context}, "xml", False, template_dir,
                                       template=template, filters=FILTERS))
    parts = {"imsmanifest.xml": xml(MANIFEST, quizzes=quizzes, package=ident("package", *[q["id"] for q in quizzes]))}
    for q in quizzes:
        parts[f"{q['id']}/{q['id']}.xml"] = xml(ASSESSMENT, quiz=q, ident=ident, masked=masked_texts())
        parts[f"{q['id']}/assessment_meta.xml"] = xml(META, quiz=q)
    stream = io.BytesIO()
    with zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, text in parts.items():
            info = zipfile.ZipInfo(name, date_time=_STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, text.encode("utf-8"))
    return {FILE: stream.getvalue()}
