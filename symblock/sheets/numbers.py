"""Numbers and symbols as the sheets print them: exact forms when short, rounded decimals
otherwise, matrices, answer grids and the LaTeX symbols of steps and parameters. Which value
is printed plainly and what its rounded decimal is are engine/printed's rule (grading reads
sheets by it too); this module writes them as LaTeX."""
from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from symblock.engine import exact, parameters
from symblock.engine.printed import dec_value, fixed, fraction, is_plain, scientific, terminating

if TYPE_CHECKING:
    from symblock.engine.block import Step

MAX_EXACT_TEX = 26          # longer closed forms are shown as decimals with ≈
OPERAND_DIGITS = 4          # an irrational operand is shown exactly with at most this many digits (√5/2)
SUBSTITUTE_ENTRIES = 24     # show whole operand matrices when each has at most this many entries


class Safe(str):
    """Trusted text, valid as LaTeX math/prose and as Markdown (from this package, never a user)."""


# ---------------------------------------------------------------- numbers

def exact_tex(e) -> str | None:
    """A short exact form in LaTeX, or None when the value is best shown as a decimal."""
    if e is exact.NEG_INF:
        return r"-\infty"
    q = fraction(e)
    if q is not None:
        text = terminating(q)
        if text is not None:
            return text
        if len(str(abs(q.numerator))) + len(str(q.denominator)) <= 6:
            sign = "-" if q < 0 else ""
            return rf"{sign}\frac{{{abs(q.numerator)}}}{{{q.denominator}}}"
        return None
    form = e.to_sympy(24)
    if form is None:
        return None
    import sympy
    tex = sympy.latex(form)
    return tex if len(tex) <= MAX_EXACT_TEX else None


def power_tex(x) -> str | None:
    """A power of ten at most 10⁻⁴ (ε = 1/10¹²) as `10^{-12}`, which reads at a glance; None otherwise."""
    if not isinstance(x, Fraction) or x.numerator != 1 or x.denominator < 10**4:
        return None
    k = len(str(x.denominator)) - 1
    return f"10^{{-{k}}}" if x.denominator == 10**k else None


def number_tex(x) -> str:
    """A spec's exact scalar (ε, a dropout p) in LaTeX as SymPy prints it; a rational one, the
    usual case, without importing SymPy (which costs an everyday command ~0.3 s)."""
    if isinstance(x, Fraction) and x >= 0:
        return str(x.numerator) if x.denominator == 1 else rf"\frac{{{x.numerator}}}{{{x.denominator}}}"
    import sympy
    return sympy.latex(sympy.sympify(x))


def dec_tex(e, places: int) -> str:
    """The rounded decimal; `1.235 \\times 10^{7}` when |e| ≥ 10⁶ or 0 < |e| < 10⁻⁴."""
    if e is exact.NEG_INF:
        return r"-\infty"
    sci = scientific(e, places)
    if sci is not None:
        return rf"{sci[0]:.{places}f} \times 10^{{{sci[1]}}}"
    return fixed(e, places)


class Shown:
    """A number as a line of working prints it: `tex`, and `value`, exactly the printed number
    (the true value when `exact`, else the rounded decimal). Lines compute from `value`."""
    __slots__ = ("tex", "value", "exact")

    def __init__(self, tex: str, value, is_exact: bool):
        self.tex, self.value, self.exact = tex, value, is_exact

    @property
    def base(self) -> str:
        """Parenthesised unless a plain non-negative number (for a power: (−0.5)², (⅓)²)."""
        plain = not self.tex.startswith("-") and "\\" not in self.tex
        return self.tex if plain else f"({self.tex})"

    @property
    def op(self) -> str:
        """Parenthesised when negative, a sum (1 + √6) or in scientific notation, so that a
        product such as 1·(−1) or (1 + √6)·2 reads right."""
        wrap = self.tex.startswith("-") or r"\times" in self.tex or compound(self.tex)
        return f"({self.tex})" if wrap else self.tex


def compound(tex: str) -> bool:
    """A sum or difference at the top level of a LaTeX form (`1 - \\frac{\\sqrt{2}}{2}`)."""
    depth = 0
    for i, ch in enumerate(tex):
        depth += ch == "{"
        depth -= ch == "}"
        if depth == 0 and ch in "+-" and i > 0 and tex[i - 1] == " ":
            return True
    return False


def show(e, places: int, guard: int = 0, short: bool = True) -> Shown:
    """The exact form when it is short (−1/3, 5/3, √5/2), else the decimal to `places` (+ `guard`
    digits for display-only intermediates such as e^x; `short=False`: exact only when plain)."""
    if e is exact.NEG_INF:
        return Shown(r"-\infty", e, True)
    tex = exact_tex(e) if short or is_plain(e) else None
    if tex is not None and not e.is_rational and sum(c.isdigit() for c in tex) > OPERAND_DIGITS:
        tex = None  # 17√251/1255 is exact but no help to a person: its decimal is
    if tex is not None:
        return Shown(tex, e, True)
    return Shown(dec_tex(e, places + guard), dec_value(e, places + guard), False)


def outcome(computed, true, exact_in: bool, places: int, note: str) -> str:
    """The relation and result of a line whose operands are printed: exact operands give the
    exact result; rounded ones give what they give, and when that rounds differently from the
    exact value, both (`note` is the translated "(from exact values …)", with {0} for it)."""
    if exact_in:
        return result(true, places)
    if computed is exact.NEG_INF:
        return r"= -\infty"
    q = fraction(computed)
    same = q is not None and exact.real(q).decimal(places) == q
    got = ("= " if same else r"\approx ") + dec_tex(computed, places)
    if true is not exact.NEG_INF and dec_tex(computed, places) != dec_tex(true, places):
        got += " " + note.format(dec_tex(true, places))
    return got






def rel(approx: bool) -> str:
    return r"\approx" if approx else "="


def result(e, places: int, approx_in: bool = False) -> str:
    """`= 3`, `= \\frac{1}{3} \\approx 0.333` or `\\approx 0.447` for a computed entry."""
    tex = exact_tex(e)
    if tex is not None and is_plain(e):
        return f"{rel(approx_in)} {tex}"
    if tex is not None and not approx_in:
        return rf"= {tex} \approx {dec_tex(e, places)}"
    return rf"\approx {dec_tex(e, places)}"


MATRIX_COLS = 10   # amsmath's default MaxMatrixCols: wider matrices are arrays (no counter to set)


def bmatrix(cells: list[list[str]]) -> str:
    body = r" \\ ".join(" & ".join(row) for row in cells)
    cols = max((len(r) for r in cells), default=1)
    if cols <= MATRIX_COLS:
        return r"\begin{bmatrix} " + body + r" \end{bmatrix}"
    return r"\left[\begin{array}{" + "c" * cols + "} " + body + r" \end{array}\right]"


def matrix_value(mat, places: int) -> str:
    """`= [exact]`, `= [exact] ≈ [decimals]` or `≈ [decimals]` for a whole matrix."""
    rows = mat.rows
    exact_cells = [[exact_tex(e) for e in r] for r in rows]
    dec = bmatrix([[dec_tex(e, places) for e in r] for r in rows])
    if all(c is not None for r in exact_cells for c in r):
        out = "= " + bmatrix(exact_cells)
        if not all(is_plain(e) for r in rows for e in r):
            out += r" \approx " + dec
        return out
    return r"\approx " + dec




def grid(rows: int, cols: int, places: int) -> str:
    """An empty grid of the step's shape to write the answer in."""
    cell = r"\vphantom{\Big|}\hphantom{-0." + "0" * max(places, 1) + "}"
    spec = "|" + "c|" * cols
    body = r" \\ \hline ".join(" & ".join([cell] * cols) for _ in range(rows))
    return r"\begin{array}{" + spec + r"} \hline " + body + r" \\ \hline \end{array}"


# ---------------------------------------------------------------- symbols

def cells(mat, places: int) -> list[list[dict]]:
    """Each entry of an answer for the writers that grade (HTML, Moodle, QTI, notebook): its short
    exact form (LaTeX, or None), its decimal rounded to `places`, and a 12-place decimal for a
    tolerance centred on the exact value (None for a masked −∞)."""
    return [[{"exact": exact_tex(e), "decimal": fixed(e, places), "plain": is_plain(e),
              "precise": None if e is exact.NEG_INF else fixed(e, 12)} for e in row] for row in mat.rows]


def param_symbol(name: str) -> str:
    p = parameters.parse(name)
    if p.kind == "input":
        return "X" if p.batch is None else f"X^{{(b{p.batch})}}"   # a batch's input: b1.X
    if p.norm:
        tag = {"ln1": "1", "ln2": "2", "ln3": "3", "ln_final": "f", "ln_embed": "e"}.get(p.norm, p.norm)
        return rf"\{p.kind}^{{({tag})}}"
    kind = "W" if p.kind == "weight" else "b"
    if p.cross:   # a decoder layer's cross-attention, as the engine writes it: W^{Q}_{c}
        return f"{kind}^{{{p.sub}}}_{{c}}"
    return f"{kind}^{{{p.sub}}}" if (p.sub or "") in "QKVO" else f"{kind}_{p.sub}"


def step_symbol(step: Step) -> str:
    return step.symbol


def shape_tex(r: int, c: int) -> str:
    return rf"{r} \times {c}"

