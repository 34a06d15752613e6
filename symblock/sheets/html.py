"""HTML writer: a sheet and a key page per variant (and an index page for a set), math typeset by
KaTeX shipped beside the pages (`katex/`, vendored from npm: works offline, no CDN).

The sheet's answer grids are inputs; "Save answers" downloads a YAML (or JSON) file in the format
`symblock check` reads (grading/answers.py). The pages only read the sheet model (sheets/sheet.py):
math is its LaTeX, put into `<span class="math">` for KaTeX; prose is its text with `$...$` math;
everything is HTML-escaped by Jinja's autoescape.
"""
from __future__ import annotations

import re
from pathlib import Path

from symblock.sheets import render

PAGE = "worksheet.html.j2"
INDEX = "index.html.j2"
KATEX = "katex"  # the folder of KaTeX's files, in the templates' package data and in the output
KATEX_FILES = ("katex.min.js", "katex.min.css", "LICENSE")
_INLINE = re.compile(r"\$([^$]+)\$([,.;:)）。，；：、]*)")  # math and the punctuation that follows it


def _markup(text: str):
    from markupsafe import Markup
    return Markup(text)


def math(tex) -> str:
    """Inline math: KaTeX renders the span's text."""
    from markupsafe import escape
    return _markup(f'<span class="math">{escape(str(tex))}</span>')


def display(tex) -> str:
    from markupsafe import escape
    return _markup(f'<div class="math display">{escape(str(tex))}</div>')


def prose(text) -> str:
    """Words with `$...$` math (the sheet model's prose): text escaped, math in spans."""
    from markupsafe import escape
    out, pos = [], 0
    for m in _INLINE.finditer(str(text)):
        out.append(str(escape(str(text)[pos:m.start()])))
        if m.group(2):  # no line break between a formula and its comma
            out.append(f'<span class="nobr">{math(m.group(1))}{escape(m.group(2))}</span>')
        else:
            out.append(str(math(m.group(1))))
        pos = m.end()
    out.append(str(escape(str(text)[pos:])))
    return _markup("".join(out))


FILTERS = {"math": math, "display": display, "prose": prose}


def katex_files() -> dict[str, bytes]:
    """KaTeX's script, style sheet, licence and woff2 fonts, as shipped in the package data."""
    root = Path(render.package_template_dir()) / KATEX
    out = {f"{KATEX}/{name}": root.joinpath(name).read_bytes() for name in KATEX_FILES}
    fonts = root.joinpath("fonts")
    for font in sorted(fonts.iterdir(), key=lambda p: p.name):
        if font.name.endswith(".woff2"):
            out[f"{KATEX}/fonts/{font.name}"] = font.read_bytes()
    return out


def check_command(model: dict) -> str:
    """The `symblock check` line for this sheet's saved answers: the preset a sheet was made with
    and a gradient sheet's loss and parameters, which the answers file does not carry."""
    how = model.get("marking") or {}
    flags = f" --preset {how['preset']}" if how.get("preset") not in (None, "backprop") else ""
    flags += f" --loss {how['loss']} --wrt {','.join(how['wrt'])}" if how.get("loss") else ""
    return f"symblock check answers-{model['ident']}.yaml{flags}"


def controls(lang: str, variants: int = 0, model: dict | None = None) -> dict:
    """The pages' own words with a field filled in (the sheet model's `t` has those without)."""
    from markupsafe import escape
    from symblock.sheets.lang import TEXTS
    t = TEXTS[lang]
    command = check_command(model) if model else "symblock check"
    return {"save_intro": _markup(str(escape(t["save_intro"])).format(f"<code>{escape(command)}</code>")),
            **{k: t[k].format(variants) for k in ("index_legend", "index_legend_key")}}


def page(model: dict, key: bool, assets: str = "", template_dir=None, index: str | None = None,
         link_key: bool = False, sheet: str = "sheet.html") -> str:
    """One page: `assets` is the relative path to the folder holding `katex/`; `index` links back;
    the sheet links to its key only with `link_key` (a sheet handed out must not lead to answers);
    the key links to its sheet at `sheet`."""
    return render.render({**model, "assets": assets, "index": index, "link_key": link_key, "sheet_page": sheet,
                          "ui": controls(model["lang"], model=model)},
                         "html", key, template_dir, template=PAGE, filters=FILTERS)


def files(models: list[dict], *, many: bool, template_dir=None, assets: str | None = None,
          link_key: bool = False) -> dict[str, str | bytes]:
    """sheet.html and key.html (the sheet links to its key only with `link_key`), and KaTeX in
    `katex/` unless `assets` names a folder where it already is (the gallery's); a set (`many`)
    is laid out by `set_files`."""
    if many:
        return set_files(models, template_dir)
    out: dict[str, str | bytes] = {}
    for model in models:
        for doc in ("sheet", "key"):
            out[f"{doc}.html"] = page(model, doc == "key", assets or "", template_dir, link_key=link_key)
    if assets is None:
        out.update(katex_files())
    return out


def set_files(models: list[dict], template_dir=None) -> dict[str, str | bytes]:
    """A set's pages, apart: students/<ID>/sheet.html under students/index.html (sheets only, no
    way to a key), instructor/<ID>/key.html under instructor/index.html (each key and its sheet);
    KaTeX in both folders, so that either can be copied on its own."""
    out: dict[str, str | bytes] = {}
    for model in models:
        ident = model["ident"]
        out[f"students/{ident}/sheet.html"] = page(model, False, "../", template_dir, index="../index.html")
        out[f"instructor/{ident}/key.html"] = page(model, True, "../", template_dir, index="../index.html",
                                                   sheet=f"../../students/{ident}/sheet.html")
    first = models[0]
    for side, keys in (("students", False), ("instructor", True)):
        out[f"{side}/index.html"] = render.render(
            {"lang": first["lang"], "t": first["t"], "title": first["title"], "assets": "",
             "variants": [m["ident"] for m in models], "link_key": keys, "sheets": "../students/" if keys else "",
             "ui": controls(first["lang"], len(models))}, "html", False, template_dir, template=INDEX, filters=FILTERS)
        out.update({f"{side}/{name}": data for name, data in katex_files().items()})
    return out
