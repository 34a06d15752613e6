"""Read back every worked line of a Markdown key and recompute it from the numbers it prints.

A worked line is a chain `lhs = expr = expr ≈ result` (one row of an `aligned` block, or a whole
display). Symbolic segments (`(Q)_{11}`, `\\mu_{1}`) are skipped; every numeric segment is evaluated
here, independently of symblock, with floats: sums, products, fractions, roots, e^x, the
activations and their derivatives, `\\max`, tuples `(a, b, …)` (added and scaled entry by entry). The check: each numeric segment agrees with
the line's final result — exactly when only `=` stands between them, else within one unit in the
result's last printed place."""
from __future__ import annotations

import math
import re

FUNCS = {
    "ReLU": lambda z: max(0.0, z),
    "GELU": lambda z: z / 2 * (1 + math.erf(z / math.sqrt(2))),
    "GELU_{tanh}": lambda z: z / 2 * (1 + math.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3))),
    "SiLU": lambda z: z / (1 + math.exp(-z)),
}


def _silu_d(z):
    s = 1 / (1 + math.exp(-z))
    return s * (1 + z * (1 - s))


def _gelu_tanh_d(z):
    c, k = math.sqrt(2 / math.pi), 0.044715
    t = math.tanh(c * (z + k * z ** 3))
    return (1 + t) / 2 + z * (1 - t * t) * c * (1 + 3 * k * z * z) / 2


DERIVS = {
    "ReLU": lambda z: 1.0 if z > 0 else 0.0,
    "GELU": lambda z: (1 + math.erf(z / math.sqrt(2))) / 2 + z * math.exp(-z * z / 2) / math.sqrt(2 * math.pi),
    "GELU_{tanh}": _gelu_tanh_d,
    "SiLU": _silu_d,
}


class Symbolic(Exception):
    """The segment names symbols, not numbers."""


TOKEN = re.compile(r"\s*(\d+(?:\.\d+)?|\\[A-Za-z]+|\\[,;!: ]|[-+*/^_(){},'|&:=]|[A-Za-z]|\S)")
SKIP = {r"\left", r"\right", r"\textstyle", r"\displaystyle", "\\,", "\\ ", "\\;", "\\!", r"\quad", "&"}


def tokens(tex: str) -> list[str]:
    out, pos = [], 0
    while pos < len(tex):
        m = TOKEN.match(tex, pos)
        if not m:
            break
        pos = m.end()
        if m.group(1) not in SKIP:
            out.append(m.group(1))
    return out


class Vec(tuple):
    """A row `(a, b, …)` that adds to a row and scales by a number entry by entry (the tiles'
    accumulator lines: 0.3679 · (2.104, 1.632) + 1 · (4, 1))."""
    def _each(self, other, f):
        if isinstance(other, tuple):
            if len(other) != len(self):
                raise ValueError("rows of different lengths")
            return Vec(None if a is None or b is None else f(a, b) for a, b in zip(self, other))
        return Vec(None if a is None else f(a, other) for a in self)

    def __add__(self, other):
        return self._each(other, lambda a, b: a + b)

    def __sub__(self, other):
        return self._each(other, lambda a, b: a - b)

    def __mul__(self, other):
        return self._each(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __truediv__(self, other):
        return self._each(other, lambda a, b: a / b)


class Parser:
    def __init__(self, tex: str):
        self.t, self.i = tokens(tex), 0

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self, want=None):
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise Symbolic(f"expected {want!r}, got {tok!r}")
        self.i += 1
        return tok

    def parse(self):
        v = self.tuple_or_expr()
        if self.peek() is not None:
            raise Symbolic(f"left over: {self.t[self.i:]}")
        return v

    def tuple_or_expr(self):
        v = self.expr()
        if self.peek() == ",":
            items = [v]
            while self.peek() == ",":
                self.take(",")
                items.append(self.expr())
            return Vec(items)
        return v

    def expr(self):
        v = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            w = self.term()
            v = None if v is None or w is None else v + w if op == "+" else v - w
        return v

    def term(self):
        v = self.unary()
        while self.peek() in (r"\cdot", "/", r"\times", "("):
            op = self.take() if self.peek() != "(" else "("
            if op == "(":
                w = self.unary()
                v = v * w
                continue
            w = self.unary()
            v = v * w if op in (r"\cdot", r"\times") else v / w
        return v

    def unary(self):
        if self.peek() == "-":
            self.take()
            v = self.unary()
            return -v
        return self.power()

    def power(self):
        v = self.atom()
        while self.peek() == "^":
            self.take("^")
            e = self.group() if self.peek() == "{" else float(self.take())
            v = v ** e
        return v

    def group(self):
        self.take("{")
        v = self.tuple_or_expr()
        self.take("}")
        return v

    def atom(self):
        tok = self.peek()
        if tok is None:
            raise Symbolic("empty")
        if re.fullmatch(r"\d+(\.\d+)?", tok):
            self.take()
            return float(tok)
        if tok == r"\dots":
            self.take()
            return None
        if tok == r"\infty":
            self.take()
            return math.inf
        if tok == r"\max":   # the tiles' running maximum: \max(m, s_1, s_2)
            self.take()
            self.take("(")
            args = self.tuple_or_expr()
            self.take(")")
            return max(args) if isinstance(args, tuple) else args
        if tok in (r"\frac", r"\tfrac", r"\dfrac"):
            self.take()
            return self.group() / self.group()
        if tok == r"\sqrt":
            self.take()
            return math.sqrt(self.group())
        if tok == "e" and self.t[self.i + 1:self.i + 2] == ["^"]:
            self.take()
            self.take("^")
            x = self.group() if self.peek() == "{" else float(self.take())
            return 0.0 if x == -math.inf else math.exp(x)
        if tok == "(":
            self.take("(")
            v = self.tuple_or_expr()
            self.take(")")
            return v
        if tok == "{":
            return self.group()
        if tok == r"\mathrm":
            self.take()
            self.take("{")
            name = ""
            while self.peek() != "}":
                name += self.take()
            self.take("}")
            table = FUNCS
            if self.peek() == "'":
                self.take("'")
                table = DERIVS
            if name not in table:
                raise Symbolic(name)
            self.take("(")
            z = self.expr()
            self.take(")")
            return table[name](z)
        raise Symbolic(tok)


def evaluate(tex: str):
    """A float, a tuple of floats (None for …), or raises Symbolic."""
    return Parser(tex).parse()


NUMBER = re.compile(r"\d+(?:\.(\d+))?(?:\s*\\times\s*10\^\{(-?\d+)\})?")


def last_place(tex: str) -> list[float]:
    """The unit in the last printed place of each number of a result (tuple-aware)."""
    units = []
    for m in NUMBER.finditer(tex):
        places = len(m.group(1) or "")
        exp = int(m.group(2) or 0)
        units.append(10.0 ** (exp - places))
    return units


RELATION = re.compile(r"\s(=|\\approx)\s")
NOTE = re.compile(r"\\quad \(\\text\{[^}]*\}\s*\\approx .*\)\s*$")


def logical_lines(display: str) -> list[str]:
    """The rows of an aligned block (continuation rows joined), or the display itself."""
    body = display.strip()
    if r"\begin{bmatrix}" in body or r"\begin{array}" in body:
        return []
    body = body.replace(r"\begin{aligned}", "").replace(r"\end{aligned}", "")
    rows = [r.strip() for r in body.split(r"\\")]
    out: list[str] = []
    for r in rows:
        if out and re.match(r"&\s*(=|\\approx|\\quad)", r):
            out[-1] += " " + r.lstrip("&").replace(r"\quad", "", 1)
        else:
            out.append(r)
    return [re.sub(r"^i = \d+:\\ ", "", r).replace("&", " ").replace(r"\right.", "").replace(r"\left.", "")
            for r in out if r]   # a tuple split over rows (work_norm.split_tuple) is one tuple


def check_line(line: str) -> tuple[int, str | None]:
    """(numeric segments checked, an error message or None)."""
    line = NOTE.sub("", line).strip()
    parts = RELATION.split(" " + line + " ")
    segs, rels = parts[0::2], parts[1::2]
    values = []
    for s in segs:
        try:
            values.append(evaluate(s))
        except (Symbolic, ZeroDivisionError, TypeError, ValueError, OverflowError):
            values.append(Symbolic)
    final = values[-1]
    if final is Symbolic or len(segs) < 2:
        return 0, None
    exact_from = len(segs) - 1     # segments after the last ≈ are tied to the result by = only
    while exact_from > 0 and rels[exact_from - 1] == "=":
        exact_from -= 1
    units = last_place(segs[-1])
    finals = final if isinstance(final, tuple) else (final,)
    checked = 0
    for k, v in enumerate(values[:-1]):
        if v is Symbolic:
            continue
        vs = v if isinstance(v, tuple) else (v,)
        if len(vs) != len(finals):
            return checked, f"segment {segs[k]!r} has {len(vs)} entries, the result {len(finals)}"
        for n, (a, b) in enumerate(zip(vs, finals)):
            if a is None or b is None:
                if (a is None) != (b is None):
                    return checked, f"… in one tuple only: {segs[k]!r}"
                continue
            if math.isinf(a) or math.isinf(b):
                ok = a == b
            elif k >= exact_from:
                ok = abs(a - b) <= 1e-9 * max(1.0, abs(b))
            else:
                unit = units[n] if n < len(units) else units[-1]
                ok = abs(a - b) <= unit * (1 + 1e-6) + 1e-12
            if not ok:
                return checked, f"{segs[k].strip()!r} = {a!r}, but the line says {segs[-1].strip()!r}"
        checked += 1
    return checked, None


def displays(markdown: str) -> list[str]:
    out, block = [], None
    for line in markdown.splitlines():
        if line.strip() == "$$":
            if block is None:
                block = []
            else:
                out.append("\n".join(block))
                block = None
        elif block is not None:
            block.append(line)
    return out


def check_key(markdown: str, where: str) -> tuple[int, list[str]]:
    """(lines checked, errors) over every worked line of a Markdown key."""
    checked, errors = 0, []
    for d in displays(markdown):
        for line in logical_lines(d):
            n, err = check_line(line)
            checked += n > 0
            if err:
                errors.append(f"{where}: {err}\n    {line[:300]}")
    return checked, errors
