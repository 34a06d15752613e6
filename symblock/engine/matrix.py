"""An immutable matrix of exact entries (`exact.Real`, or SymPy expressions in symbolic mode).

Only what the block needs: matmul through `exact.dot` (one graph node per entry; in bulk by
engine/matmul.py when the right factor is rational), elementwise
arithmetic with a 1 × n row broadcast over rows (biases, γ, β), column blocks for heads.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Iterable, Iterator, Sequence, Union, cast, overload

from symblock.engine import exact, matmul

Entry = Union[exact.Real, Any]  # a matrix entry: a Real, or a SymPy expression in symbolic mode (no hints)


class Mat:
    __slots__ = ("rows",)
    rows: tuple[tuple[Entry, ...], ...]

    def __init__(self, rows: Iterable[Sequence[Entry]]) -> None:
        self.rows = tuple(tuple(r) for r in rows)

    @classmethod
    def from_sympy(cls, m: ExactMatrix | Any, symbolic: bool = False) -> "Mat":
        """From a spec's ExactMatrix or a SymPy matrix: exact Reals, or (symbolic) SymPy entries."""
        if symbolic:
            return cls([[to_sympy_number(e) for e in row] for row in m.tolist()])
        if isinstance(m, ExactMatrix):  # immutable: converted once, however many forwards read it
            if m._mat is None:
                m._mat = cls([[exact.from_sympy(e) for e in row] for row in m._rows])
            return m._mat
        return cls([[exact.from_sympy(e) for e in row] for row in m.tolist()])

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.rows), len(self.rows[0]) if self.rows else 0)

    def __getitem__(self, ij: tuple[int, int]) -> Entry:
        i, j = ij
        return self.rows[i][j]

    def __iter__(self) -> Iterator[tuple[Entry, ...]]:
        return iter(self.rows)

    @property
    def T(self) -> "Mat":
        return Mat(zip(*self.rows))

    def __matmul__(self, other: "Mat") -> "Mat":
        if self.shape[1] != other.shape[0]:
            raise ValueError(f"cannot multiply {self.shape} by {other.shape}")
        if self.shape[1] and (rows := matmul.matmul(self.rows, other.rows)) is not None:
            return Mat(rows)  # B rational: the same entries, made in bulk
        cols = list(zip(*other.rows))
        return Mat([[exact.dot(r, c) for c in cols] for r in self.rows])

    def _zip(self, other: "Mat", f: Callable[[Entry, Entry], Entry]) -> "Mat":
        if other.shape[0] == 1 and self.shape[0] != 1:  # a row vector, broadcast over rows
            return Mat([[f(a, b) for a, b in zip(r, other.rows[0])] for r in self.rows])
        if other.shape[1] == 1 and self.shape[1] != 1:  # a column (per-row statistic)
            return Mat([[f(a, o[0]) for a in r] for r, o in zip(self.rows, other.rows)])
        if other.shape != self.shape:
            raise ValueError(f"shapes {self.shape} and {other.shape} do not match")
        return Mat([[f(a, b) for a, b in zip(r, s)] for r, s in zip(self.rows, other.rows)])

    def __add__(self, other: "Mat") -> "Mat":
        return self._zip(other, lambda a, b: a + b)

    def __sub__(self, other: "Mat") -> "Mat":
        return self._zip(other, lambda a, b: a - b)

    def __mul__(self, other: "Mat") -> "Mat":
        """Elementwise (Hadamard) product, with row/column broadcasting."""
        return self._zip(other, lambda a, b: a * b)

    def __truediv__(self, other: "Mat") -> "Mat":
        return self._zip(other, lambda a, b: a / b)

    def scale(self, c: Entry) -> "Mat":
        return self.map(lambda a: a * c)

    def map(self, f: Callable[[Entry], Entry]) -> "Mat":
        return Mat([[f(a) for a in r] for r in self.rows])

    def map_rows(self, f: Callable[[tuple[Entry, ...]], Sequence[Entry]]) -> "Mat":
        return Mat([f(r) for r in self.rows])

    def cols(self, start: int, stop: int) -> "Mat":
        return Mat([r[start:stop] for r in self.rows])

    @staticmethod
    def hstack(mats: Sequence["Mat"]) -> "Mat":
        return Mat([sum((m.rows[i] for m in mats), ()) for i in range(mats[0].shape[0])])

    def tolist(self) -> list[list[Entry]]:
        return [list(r) for r in self.rows]

    def to_sympy(self, max_size: int = exact.CLOSED_FORM_SIZE) -> Any:
        """Closed forms as a SymPy matrix; raises if an entry is too large to show."""
        import sympy
        entries = [[exact.to_sympy(e, max_size) for e in r] for r in self.rows]
        if any(e is None for r in entries for e in r):
            raise ValueError("an entry's closed form is too large to build; raise max_size")
        return sympy.ImmutableMatrix(entries)

    def floats(self) -> list[list[float]]:
        return [[float(e) for e in r] for r in self.rows]

    def __repr__(self) -> str:
        return f"Mat({[[exact.to_sympy(e) for e in r] for r in self.rows]})"

    # ---- Jupyter display: `= [exact]` and `≈ [decimals]` (exact forms only when short)
    REPR_TEX = 40     # longer closed forms show only as decimals
    REPR_PLACES = 4

    @overload
    @staticmethod
    def entry_latex(e: Entry, places: None = None) -> str | None: ...
    @overload
    @staticmethod
    def entry_latex(e: Entry, places: int) -> str: ...

    @staticmethod
    def entry_latex(e: Entry, places: int | None = None) -> str | None:
        """An entry as LaTeX: its short closed form, or (`places`) its rounded decimal."""
        import sympy
        if places is not None:
            if e is exact.NEG_INF:
                return r"-\infty"
            if exact.is_symbolic(e):
                return sympy.latex(e)
            d = exact.real(e).decimal(places)
            return f"{abs(d) if d == 0 else d:.{places}f}"
        form = exact.to_sympy(e, 64)
        tex = None if form is None else sympy.latex(form)
        return tex if tex is not None and len(tex) <= Mat.REPR_TEX else None

    def latex(self) -> str:
        """`\\begin{bmatrix} exact \\end{bmatrix} \\approx \\begin{bmatrix} decimals \\end{bmatrix}`:
        the exact matrix when every entry has a short closed form, the decimals unless all exact
        entries are already integers or short decimals."""
        def bm(cells: list[list[str]]) -> str:
            return r"\begin{bmatrix} " + r" \\ ".join(" & ".join(r) for r in cells) + r" \end{bmatrix}"
        ex = [[self.entry_latex(e) for e in r] for r in self.rows]
        dec = [[self.entry_latex(e, self.REPR_PLACES) for e in r] for r in self.rows]
        if all(c is not None for r in ex for c in r):
            plain = all(c == d.rstrip("0").rstrip(".") or c in (r"-\infty",) for r, rd in zip(ex, dec)
                        for c, d in zip(r, rd))
            shown = cast("list[list[str]]", ex)  # every entry has a form: the test above
            return bm(shown) if plain else bm(shown) + r" \approx " + bm(dec)
        return r"\approx " + bm(dec)

    def _repr_latex_(self) -> str:
        return "$" + self.latex() + "$"


SpecNumber = Union[Fraction, exact.Real]  # an entry of a spec's matrix


class ExactMatrix:
    """A spec's matrix of exact numbers, read like a SymPy ImmutableMatrix (shape, rows/cols
    counts, `m[i, j]`, flat iteration, tolist, T, row, ==) without importing SymPy: loading a
    spec and working it forward never needs SymPy. Entries are `fractions.Fraction` (every
    rational, the common case) or `exact.Real` (an irrational entry such as sqrt(2)/2, and −∞
    in a given masked step). `to_sympy()` (also `sympy.sympify(m)`) converts on demand for the
    symbolic and derive paths."""
    __slots__ = ("_rows", "shape", "_mat")
    _rows: tuple[tuple[SpecNumber, ...], ...]
    shape: tuple[int, int]
    _mat: Mat | None  # the exact Mat of it, made on first use (Mat.from_sympy)

    def __init__(self, rows: Iterable[Sequence[SpecNumber]]) -> None:
        self._mat = None
        self._rows = tuple(tuple(r) for r in rows)
        self.shape = (len(self._rows), len(self._rows[0]) if self._rows else 0)

    def __getstate__(self) -> tuple:  # pickled without the made-on-demand Mat
        return self._rows, self.shape

    def __setstate__(self, state: tuple) -> None:
        self._rows, self.shape = state
        self._mat = None

    @classmethod
    def filled(cls, r: int, c: int, v: SpecNumber) -> "ExactMatrix":
        return cls([[v] * c for _ in range(r)])

    @classmethod
    def ones(cls, r: int, c: int) -> "ExactMatrix":
        return cls.filled(r, c, Fraction(1))

    @classmethod
    def zeros(cls, r: int, c: int) -> "ExactMatrix":
        return cls.filled(r, c, Fraction(0))

    @property
    def rows(self) -> int:
        return self.shape[0]

    @property
    def cols(self) -> int:
        return self.shape[1]

    def __len__(self) -> int:
        return self.shape[0] * self.shape[1]

    def __iter__(self) -> Iterator[SpecNumber]:
        return (e for r in self._rows for e in r)

    def __getitem__(self, ij: int | tuple[int | slice, int | slice]) -> Any:  # an entry, or a block
        if isinstance(ij, tuple):
            i, j = ij
            if isinstance(i, slice) or isinstance(j, slice):  # a block, as SymPy slices
                rows = self._rows[i] if isinstance(i, slice) else (self._rows[i],)
                return ExactMatrix([r[j] if isinstance(j, slice) else (r[j],) for r in rows])
            return self._rows[i][j]
        return self._rows[ij // self.shape[1]][ij % self.shape[1]]

    def tolist(self) -> list[list[SpecNumber]]:
        return [list(r) for r in self._rows]

    def row(self, i: int) -> "ExactMatrix":
        return ExactMatrix([self._rows[i]])

    @property
    def T(self) -> "ExactMatrix":
        return ExactMatrix(zip(*self._rows))

    def _keys(self) -> tuple:
        """Entries as comparable keys: a rational itself, an irrational entry by its closed form
        (written from its graph: equal forms are equal values)."""
        return tuple(e if isinstance(e, Fraction) else ("real", exact.text(e, 10**9)) for e in self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ExactMatrix):
            return self.shape == other.shape and self._keys() == other._keys()
        if getattr(other, "is_Matrix", False):
            return self.to_sympy() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.shape, self._keys()))

    def to_sympy(self) -> Any:
        import sympy
        return sympy.ImmutableMatrix(self.shape[0], self.shape[1], [to_sympy_number(e) for e in self])

    _sympy_ = to_sympy

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        """As SymPy's matrices do: an object array of SymPy numbers (so `sympy.Matrix(m)` keeps
        the shape), or the entries converted to `dtype` (float: correctly rounded)."""
        import numpy as np
        if dtype is None or np.dtype(dtype) == object:
            return np.array([[to_sympy_number(e) for e in r] for r in self._rows], dtype=object)
        return np.array([[float(e) for e in r] for r in self._rows], dtype=dtype)

    def __repr__(self) -> str:
        return f"ExactMatrix({[[str(e) if isinstance(e, Fraction) else exact.text(e, 10**9) for e in r] for r in self._rows]})"


def to_sympy_number(e: object) -> Any:
    """One exact number (Fraction, Real, int, or already SymPy) as a SymPy number."""
    import sympy
    if isinstance(e, exact.Real):
        return -sympy.oo if e is exact.NEG_INF else exact.to_sympy(e, 10**9)
    return sympy.sympify(e)
