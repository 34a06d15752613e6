"""Jinja environments for the worksheet writers: templates from the package (`templates/`, also
inside a wheel) with an optional user directory searched first, always rendered in Jinja's sandbox.

Escaping is on by default: every value printed by a template goes through the format's
`finalize`, which escapes it unless it is `sheet.Safe` (math and prose made by this package). So a
title such as `\\input{/etc/passwd}` prints as text. LaTeX templates use `((* *))` for blocks,
`((( )))` for values and `((= =))` for comments, so TeX's braces never clash with Jinja.
"""
from __future__ import annotations

import re
import unicodedata
from importlib import resources

from .sheet import Safe

FORMATS = {"latex": ".tex", "markdown": ".md"}
TEMPLATE = {"latex": "worksheet.tex.j2", "markdown": "worksheet.md.j2"}
LATEX_DELIMITERS = dict(block_start_string="((*", block_end_string="*))",
                        variable_start_string="(((", variable_end_string=")))",
                        comment_start_string="((=", comment_end_string="=))",
                        line_statement_prefix=None, line_comment_prefix=None)

_TEX_SPECIAL = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
    "^": r"\textasciicircum{}", "_": r"\_", "%": r"\%", "~": r"\textasciitilde{}",
    "<": r"\ensuremath{<}", ">": r"\ensuremath{>}", "|": r"\ensuremath{|}", '"': "''",
    "[": "{[}", "]": "{]}",
}
# characters pdflatex (utf8 inputenc, OT1) prints; others become "?" in pdflatex documents
_PDFLATEX_OK = set("–—‘’“”…·×") | {chr(c) for c in range(0xA0, 0x100)} - {"\xad"}


def latex_escape(text: str, unicode_ok: bool = False) -> str:
    """User text as LaTeX that prints literally. Control characters and line breaks become
    spaces; with `unicode_ok=False` (pdflatex) characters it cannot typeset become `?`."""
    out = []
    for ch in str(text):
        if ch in _TEX_SPECIAL:
            out.append(_TEX_SPECIAL[ch])
        elif unicodedata.category(ch)[0] in "CZ" and ch != " ":
            out.append(" ")
        elif ord(ch) < 128 or unicode_ok:
            out.append(ch)
        elif ch in _PDFLATEX_OK:
            out.append(ch)
        else:
            ascii_ = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode()
            out.append(latex_escape(ascii_) if ascii_ else "?")
    return "".join(out)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]#!|$~])")


def markdown_escape(text: str) -> str:
    """User text as Markdown that prints literally (no emphasis, links, HTML or math)."""
    text = " ".join(str(text).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def _finalizer(fmt: str, unicode_ok: bool):
    def finalize(value):
        if value is None:
            return ""
        if isinstance(value, Safe):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        return latex_escape(value, unicode_ok) if fmt == "latex" else markdown_escape(value)
    return finalize


def _package_template(name: str):
    try:
        source = resources.files("symblock.templates").joinpath(name).read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    return source, None, lambda: True


def environment(fmt: str, template_dir: str | None = None, unicode_ok: bool = False):
    from jinja2 import ChoiceLoader, FileSystemLoader, FunctionLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment
    loaders = [FileSystemLoader(template_dir)] if template_dir else []
    loaders.append(FunctionLoader(_package_template))
    options = LATEX_DELIMITERS if fmt == "latex" else {}
    env = SandboxedEnvironment(loader=ChoiceLoader(loaders), finalize=_finalizer(fmt, unicode_ok),
                               undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                               keep_trailing_newline=True, autoescape=False, **options)
    if fmt == "latex":
        env.filters["code"] = lambda s: Safe(r"\texttt{" + latex_escape(s, unicode_ok) + "}")
    else:
        env.filters["code"] = lambda s: Safe("`" + str(s).replace("`", "'") + "`")
    env.filters["fmt"] = lambda s, *a: Safe(str(s).format(*a)) if isinstance(s, Safe) else str(s).format(*a)
    return env


def render(model: dict, fmt: str, key: bool, template_dir: str | None = None) -> str:
    """One document: the sheet (`key=False`) or the answer key (`key=True`) in one format."""
    from jinja2 import TemplateError
    from .cli import UsageError
    env = environment(fmt, template_dir, unicode_ok=model["lang"] != "en")
    try:
        text = env.get_template(TEMPLATE[fmt]).render(**model, key=key)
    except TemplateError as e:
        where = f" ({template_dir})" if template_dir else ""
        raise UsageError(f"template {TEMPLATE[fmt]}{where}: {type(e).__name__}: {e}") from None
    return text if text.endswith("\n") else text + "\n"
