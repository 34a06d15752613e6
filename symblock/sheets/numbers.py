"""Numbers and symbols as the sheets print them: exact forms when short, rounded decimals
otherwise, matrices, answer grids and the LaTeX symbols of steps and parameters."""
from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from symblock.engine import exact

MAX_EXACT_PLACES = 6        # a terminating decimal up to this many places is shown exactly
MAX_EXACT_TEX = 26          # longer closed forms are shown as decimals with ≈
SUBSTITUTE_ENTRIES = 24     # show whole operand matrices when each has at most this many entries
ALL_TERMS = 8               # write every term of a row sum up to this many terms


class Safe(str):
    """Trusted text, valid as LaTeX math/prose and as Markdown (from this package, never a user)."""


# ---------------------------------------------------------------- numbers

def fraction(e) -> Fraction | None:
    if e is exact.NEG_INF or not e.is_rational:
        return None
    r = e.to_sympy()
    return Fraction(int(r.p), int(r.q))


def terminating(q: Fraction) -> str | None:
    """The exact decimal text of q when it terminates within MAX_EXACT_PLACES places."""
    scaled = q * 10 ** MAX_EXACT_PLACES
    if scaled.denominator != 1:
        return None
    d = (Decimal(scaled.numerator).scaleb(-MAX_EXACT_PLACES)).normalize()
    text = format(d, "f")
    return "0" if text in ("-0", "0") else text


def is_plain(e) -> bool:
    """An integer, a short terminating decimal or −∞: exact and already a decimal."""
    if e is exact.NEG_INF:
        return True
    q = fraction(e)
    return q is not None and terminating(q) is not None


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


def dec_tex(e, places: int) -> str:
    if e is exact.NEG_INF:
        return r"-\infty"
    d = exact.real(e).decimal(places)
    if d == 0:
        d = abs(d)
    return f"{d:.{places}f}"


def num(e, places: int) -> tuple[str, bool]:
    """A number as it goes into written-out work: (tex, approximate?)."""
    if is_plain(e):
        return exact_tex(e), False
    return dec_tex(e, places), True


def operand(e, places: int) -> tuple[str, bool]:
    """`num`, parenthesised when negative (so that 1·(−1) reads right)."""
    tex, approx = num(e, places)
    return (f"({tex})" if tex.startswith("-") else tex), approx


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


def bmatrix(cells: list[list[str]]) -> str:
    body = r" \\ ".join(" & ".join(row) for row in cells)
    return r"\begin{bmatrix} " + body + r" \end{bmatrix}"


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


def operand_matrix(mat, places: int) -> tuple[str, bool]:
    cells = [[num(e, places) for e in r] for r in mat.rows]
    return bmatrix([[c for c, _ in r] for r in cells]), any(a for r in cells for _, a in r)


def grid(rows: int, cols: int, places: int) -> str:
    """An empty grid of the step's shape to write the answer in."""
    cell = r"\vphantom{\Big|}\hphantom{-0." + "0" * max(places, 1) + "}"
    spec = "|" + "c|" * cols
    body = r" \\ \hline ".join(" & ".join([cell] * cols) for _ in range(rows))
    return r"\begin{array}{" + spec + r"} \hline " + body + r" \\ \hline \end{array}"


# ---------------------------------------------------------------- symbols

def param_symbol(name: str) -> str:
    if name == "X":
        return "X"
    if "." in name:
        ln, part = name.split(".")
        tag = {"ln1": "1", "ln2": "2", "ln_final": "f"}[ln]
        return rf"\{part}^{{({tag})}}"
    kind, sub = name.split("_")
    return f"{kind}^{{{sub}}}" if sub in "QKVO" else f"{kind}_{sub}"


def step_symbol(step) -> str:
    return step.latex.split(" = ")[0].strip()


def shape_tex(r: int, c: int) -> str:
    return rf"{r} \times {c}"

