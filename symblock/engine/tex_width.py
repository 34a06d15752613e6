"""How wide a LaTeX formula prints, roughly, in digits (one digit of 10pt math is 5pt): enough to
decide where a display is broken, without running TeX. Measured against pdflatex on every
matrix `forward --format latex` prints for the built-in examples, a digit of this count is
3.8 to 5.1pt in a wide display (wide displays are what get broken), so a budget in digits at
5.1pt each (options.LATEX_LINE) never lets a line overflow by much. A key's worked lines
(softmax rows of fractions) were measured too: a comma is followed by a thin space, and
brackets grow round a display fraction."""
from __future__ import annotations

import re

_FUNCTIONS = {"sin", "cos", "tan", "exp", "log", "ln", "max", "min", "arg"}
_SPACES = {",": 0.3, ";": 0.5, ":": 0.4, " ": 0.5, "!": -0.2, "quad": 2.0, "qquad": 4.0}
_RELATIONS = {"cdot", "times", "approx", "mapsto", "le", "ge", "to"}
_COMMAND = re.compile(r"\\([A-Za-z]+|.)")


def _group(tex: str, i: int) -> tuple[str, int]:
    """The body of the {...} group opening at tex[i], and the index after it."""
    depth = 0
    for k in range(i, len(tex)):
        depth += (tex[k] == "{") - (tex[k] == "}")
        if depth == 0:
            return tex[i + 1:k], k + 1
    return tex[i + 1:], len(tex)


def _argument(tex: str, i: int) -> tuple[str, int]:
    """A command's argument from tex[i]: a group, a command or one character."""
    while i < len(tex) and tex[i] == " ":
        i += 1
    if i < len(tex) and tex[i] == "{":
        return _group(tex, i)
    m = _COMMAND.match(tex, i)
    end = m.end() if m else i + 1
    return tex[i:end], end


def _command(tex: str, name: str, i: int) -> tuple[float, int]:
    """The width of the command `name` whose argument (if any) starts at tex[i]."""
    if name in ("frac", "tfrac", "dfrac"):
        a, i = _argument(tex, i)
        b, i = _argument(tex, i)
        return max(width(a), width(b)) * (0.7 if name == "tfrac" else 1.0) + 0.4, i
    if name == "sqrt":
        a, i = _argument(tex, i)
        return width(a) + 1.6, i
    if name in ("left", "right"):
        d, i = _argument(tex, i)
        if d == ".":
            return 0.0, i
        inside = tex[i:tex.find("\\right", i)] if name == "left" else tex[tex.rfind("\\left", 0, i):i]
        return (1.5 if "\\frac" in inside else 0.8), i   # grown round a display fraction
    if name == "begin":
        env, i = _argument(tex, i)
        if env == "array":
            _, i = _argument(tex, i)   # the column spec
        end = tex.find("\\end{" + env + "}", i)
        end = len(tex) if end < 0 else end
        return matrix_width(tex[i:end]), end + len(env) + 6
    if name in ("text", "mathrm", "operatorname", "texttt"):
        a, i = _argument(tex, i)
        return 0.9 * len(a), i
    if name in _FUNCTIONS:
        return 0.95 * len(name) + 0.3, i
    if name in _SPACES:
        return _SPACES[name], i
    return (2.2 if name in _RELATIONS else 1.1), i   # a relation, or one symbol (\pi, \infty, \mu)


def width(tex: str) -> float:
    """The printed width of LaTeX math, in digits."""
    w, i = 0.0, 0
    while i < len(tex):
        c = tex[i]
        if c == "\\":
            m = _COMMAND.match(tex, i)
            assert m is not None
            dw, i = _command(tex, m.group(1), m.end())
            w += dw
            continue
        if c in "^_":
            a, i = _argument(tex, i + 1)
            w += 0.7 * width(a)
            continue
        if c == "{":
            a, i = _group(tex, i)
            w += width(a)
            continue
        if c in "+-=":
            before = tex[:i].rstrip()
            unary = not before or before[-1] in "({[&=,"
            w += 1.6 if unary else 2.4
        elif c == ".":
            w += 0.5
        elif c == ",":
            w += 0.8   # a comma and the thin space math sets after it
        elif c in "()[]":
            w += 0.8
        elif c not in " }":
            w += 1.0
        i += 1
    return w


def column_widths(cells: list[list[str]]) -> list[float]:
    """Each column's width in a matrix: its widest entry and the space between columns."""
    cols = max(len(r) for r in cells)
    return [max(width(r[j]) for r in cells if j < len(r)) + 2.0 for j in range(cols)]


def matrix_width(body: str) -> float:
    """The width of a matrix body (`a & b \\\\ c & d`) with its brackets."""
    cells = [row.split("&") for row in body.split("\\\\")]
    return sum(column_widths(cells)) + 1.0
