"""A count as a formula in the block's sizes (8·d² + 4·d·f, …): exact integer coefficients over
products of size symbols, printed as text and LaTeX in one symbol order, and evaluated at the sizes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

# seq_len, d_model, d_ff (and, with other widths, heads, d_k, d_v): the order symbols print in
_SYMBOL_ORDER = ("n", "m", "d", "f", "h", "g", "k", "v")  # g: K/V heads (grouped); m: memory rows
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")



@dataclass(frozen=True)
class Formula:
    """A polynomial with positive integer coefficients in n (seq_len), d (d_model), f (d_ff).

    `terms` is a tuple of (coefficient, monomial) pairs, a monomial being a tuple of symbol
    names with repetition (("d", "d") is d²; sums put the factors in the order n, d, f). Terms
    print in order of falling degree, ties in the order they were first added, so a sum reads
    like the architecture (`2·d·f + f + d`)."""
    terms: tuple[tuple[int, tuple[str, ...]], ...]

    @staticmethod
    def of(*symbols: str, coef: int = 1, as_given: bool = False) -> "Formula":
        """One monomial; `as_given` keeps the factor order (W_2 is f·d), sums reorder it."""
        mono = symbols if as_given else tuple(sorted(symbols, key=_SYMBOL_ORDER.index))
        return Formula(((coef, mono),))

    def __add__(self, other: "Formula") -> "Formula":
        coefs: dict[tuple[str, ...], int] = {}
        for c, mono in self.terms + other.terms:
            mono = tuple(sorted(mono, key=_SYMBOL_ORDER.index))
            coefs[mono] = coefs.get(mono, 0) + c
        # stable sort: terms of equal degree keep the order they were first seen in
        ordered = sorted(coefs.items(), key=lambda kv: -len(kv[0]))
        return Formula(tuple((c, mono) for mono, c in ordered if c))

    def over(self, symbol: str) -> "Formula":
        """The same polynomial with n (the positions attended) read as `symbol` (a memory's m rows)."""
        return Formula(tuple((c, tuple(symbol if s == "n" else s for s in mono)) for c, mono in self.terms))

    def value(self, env: Mapping[str, int]) -> int:
        total = 0
        for c, mono in self.terms:
            term = c
            for s in mono:
                term *= env[s]
            total += term
        return total

    def _render(self, name) -> str:
        parts = []
        for c, mono in self.terms:
            factors = [] if c == 1 and mono else [str(c)]
            for s in dict.fromkeys(mono):
                p = mono.count(s)
                factors.append(name(s) + (str(p).translate(_SUPERSCRIPT) if p > 1 else ""))
            parts.append("·".join(factors))
        return " + ".join(parts) or "0"

    def __str__(self) -> str:
        return self._render(lambda s: s)

    def latex(self, env: Mapping[str, int] | None = None) -> str:
        """The formula in LaTeX (`4 d^{2} + 4 d`), or with the numbers put in (`4 \\cdot 32^{2}`)."""
        parts = []
        for c, mono in self.terms:
            factors = [] if c == 1 and mono else [str(c)]
            for s in dict.fromkeys(mono):
                p = mono.count(s)
                factors.append((s if env is None else str(env[s])) + (f"^{{{p}}}" if p > 1 else ""))
            parts.append((" " if env is None else r" \cdot ").join(factors))
        return " + ".join(parts) or "0"

    def substituted(self, env: Mapping[str, int]) -> str:
        """The formula with the numbers put in: `4·d² + 4·d` -> `4·32² + 4·32`."""
        return self._render(lambda s: str(env[s]))

    def sympy(self):
        """The same polynomial as a SymPy expression in the symbols n, d, f (imports SymPy)."""
        import sympy
        sym = {s: sympy.Symbol(s, positive=True, integer=True) for s in _SYMBOL_ORDER}
        return sympy.Add(*(c * sympy.Mul(*(sym[s] for s in mono)) for c, mono in self.terms))


def sum_of(formulas: Iterable[Formula]) -> Formula:
    total = Formula(())
    for f in formulas:
        total = total + f
    return total
