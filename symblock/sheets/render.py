"""Jinja environments for the worksheet writers: templates from the package (`templates/`, also
inside a wheel) with an optional user directory searched first, always rendered in Jinja's sandbox.

Escaping is on by default: every value printed by a template goes through the format's
`finalize`, which escapes it unless it is `sheet.Safe` (math and prose made by this package). So a
title such as `\\input{/etc/passwd}` prints as text. LaTeX templates use `((* *))` for blocks,
`((( )))` for values and `((= =))` for comments, so TeX's braces never clash with Jinja.
"""
from __future__ import annotations

import re
import signal
import threading
import time
import unicodedata
from importlib import resources
from pathlib import Path

from symblock.errors import UsageError
from symblock.sheets.numbers import Safe

FORMATS = {"latex": ".tex", "markdown": ".md", "html": ".html", "moodle": ".xml", "qti": ".zip",
           "ipynb": ".ipynb"}
TEMPLATE = {"latex": "worksheet.tex.j2", "markdown": "worksheet.md.j2"}
MARKUP = {"html", "xml"}  # autoescaped: user text and `Safe` LaTeX alike are escaped unless a filter marks it
LATEX_DELIMITERS = dict(block_start_string="((*", block_end_string="*))",
                        variable_start_string="(((", variable_end_string=")))",
                        comment_start_string="((=", comment_end_string="=))",
                        line_statement_prefix=None, line_comment_prefix=None)

_TEX_SPECIAL = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
    "^": r"\textasciicircum{}", "%": r"\%", "~": r"\textasciitilde{}",
    "<": r"\ensuremath{<}", ">": r"\ensuremath{>}", "|": r"\ensuremath{|}",
    # the typewriter glyphs, so that text copied from the PDF keeps `_` and straight quotes
    "_": r"{\ttfamily\char95}", '"': r"{\ttfamily\char34}",
    # straight, as typed: TeX would make `` and '' curly double quotes (and ` and ' curly singles)
    "`": r"\textasciigrave{}", "'": r"\textquotesingle{}",
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
        if fmt in MARKUP:
            return value  # Jinja's autoescape escapes it (filters turn math and prose into markup)
        if isinstance(value, Safe):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        return latex_escape(value, unicode_ok) if fmt == "latex" else markdown_escape(value)
    return finalize


# A render budget: user templates are code, and code can loop or grow without end.
MAX_OUTPUT = 32 * 2**20   # characters of one document
MAX_SECONDS = 10.0        # wall time of one document
MAX_REPEAT = 2**20        # length of a string or list built by `*` or a number built by `**`


class RenderBudgetError(Exception):
    """A template went past the render budget (output size, time, or a huge `*`/`**`)."""


def package_template_dir() -> str:
    """The built-in templates' folder: `templates/` beside the package in a checkout (so a checkout
    runs without an install, and a worktree uses its own templates), else the package data of a
    wheel or an editable install."""
    checkout = Path(__file__).resolve().parents[2] / "templates"
    if (checkout / "worksheet.tex.j2").is_file() and (checkout / "__init__.py").is_file():
        return str(checkout)
    return str(resources.files("symblock.templates"))


class _Sandbox:
    """Mixin for Jinja's `SandboxedEnvironment`: a deadline checked on every call, attribute,
    `range` step and output chunk, and `*`/`**` that refuse to build huge values."""

    intercepted_binops = frozenset(["*", "**"])
    deadline = float("inf")

    def check_time(self):
        if time.monotonic() > self.deadline:
            raise RenderBudgetError(f"the template ran longer than {MAX_SECONDS:g} s")

    def call_binop(self, context, operator, left, right):
        self.check_time()
        if operator == "**":
            if isinstance(right, (int, float)) and abs(right) > 64 and not (isinstance(left, (int, float))
                                                                           and abs(left) <= 1):
                raise RenderBudgetError(f"the template computes {left!r} ** {right!r}, too large")
            return left ** right
        for a, b in ((left, right), (right, left)):
            if isinstance(a, (str, list, tuple)) and isinstance(b, int) and len(a) * b > MAX_REPEAT:
                raise RenderBudgetError(f"the template builds a sequence of {len(a) * b} items")
        return left * right

    def call(self, __context, __obj, *args, **kwargs):
        self.check_time()
        return super().call(__context, __obj, *args, **kwargs)

    def getattr(self, obj, attribute):
        self.check_time()
        return super().getattr(obj, attribute)

    def getitem(self, obj, argument):
        self.check_time()
        return super().getitem(obj, argument)


def _budget_range(env):
    from jinja2.sandbox import safe_range

    def budget_range(*args):
        for i in safe_range(*args):
            env.check_time()
            yield i
    return budget_range


def _alarm(seconds: float):
    """Raise RenderBudgetError in the main thread after `seconds`; returns the undo."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return lambda: None

    def ring(signum, frame):
        raise RenderBudgetError(f"the template ran longer than {MAX_SECONDS:g} s")
    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)

    def restore():
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return restore


_COMPILED: dict = {}  # (format, filter names) -> {template key: bytecode}, for this process


def _bytecode_cache(fmt: str, filters):
    """Compiled templates kept in memory: every render makes a fresh environment (its own
    deadline), and a set of N variants would otherwise compile the same template 2N times. Jinja
    checks each entry against the template's source, so a changed file is compiled again."""
    from jinja2.bccache import BytecodeCache

    class Memory(BytecodeCache):
        codes = _COMPILED.setdefault((fmt, tuple(sorted(filters or ()))), {})

        def load_bytecode(self, bucket):
            if bucket.key in self.codes:
                bucket.bytecode_from_string(self.codes[bucket.key])

        def dump_bytecode(self, bucket):
            self.codes[bucket.key] = bucket.bytecode_to_string()
    return Memory()


def environment(fmt: str, template_dir: str | None = None, unicode_ok: bool = False, filters=None):
    """A sandboxed environment whose loader finds names only inside the template directories
    (Jinja's `FileSystemLoader` refuses absolute and `..` names), the user's folder first.
    `fmt` "html" or "xml" autoescapes; `filters` are added (a writer's math and prose markup)."""
    from jinja2 import FileSystemLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    class Environment(_Sandbox, SandboxedEnvironment):
        pass
    dirs = ([template_dir] if template_dir else []) + [package_template_dir()]
    options = LATEX_DELIMITERS if fmt == "latex" else {}
    env = Environment(loader=FileSystemLoader(dirs), finalize=_finalizer(fmt, unicode_ok),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      keep_trailing_newline=True, autoescape=fmt in MARKUP,
                      bytecode_cache=_bytecode_cache(fmt, filters), **options)
    env.globals["range"] = _budget_range(env)
    if fmt == "latex":
        env.filters["code"] = lambda s: Safe(r"\texttt{" + latex_escape(s, unicode_ok)
                                             .replace(r"{\ttfamily\char", r"{\char") + "}")
    elif fmt not in MARKUP:
        env.filters["code"] = lambda s: Safe("`" + str(s).replace("`", "'") + "`")
    env.filters.update(filters or {})
    return env


def render(model: dict, fmt: str, key: bool, template_dir: str | None = None, *, template: str | None = None,
           filters=None) -> str:
    """One document: the sheet (`key=False`) or the answer key (`key=True`) in one format (a
    writer module passes its own `template`, markup `fmt` "html"/"xml" and `filters`)."""
    from jinja2 import TemplateError
    template = template or TEMPLATE[fmt]
    env = environment(fmt, template_dir, unicode_ok=model["lang"] != "en", filters=filters)
    where = f"template {template}" + (f" ({template_dir})" if template_dir else "")
    env.deadline = time.monotonic() + MAX_SECONDS
    chunks, size = [], 0
    restore = _alarm(MAX_SECONDS + 0.5)  # loops with no call inside (`for c in s`) check no deadline
    try:
        for chunk in env.get_template(template).generate(**model, key=key):
            size += len(chunk)
            if size > MAX_OUTPUT:
                raise RenderBudgetError(f"the document grew past {MAX_OUTPUT // 2**20} MiB")
            env.check_time()
            chunks.append(chunk)
    except (TemplateError, RenderBudgetError, OverflowError) as e:
        raise UsageError(f"{where}: {type(e).__name__}: {e}") from None
    except RecursionError:
        raise UsageError(f"{where}: the template includes or calls itself without end") from None
    finally:
        restore()
    text = "".join(chunks)
    return text if text.endswith("\n") else text + "\n"
