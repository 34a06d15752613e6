"""A proved fact: what `derive --facts` prints, and what each fact function of derive.py and its
siblings (facts_rope.py) returns, and the algebra their proofs share."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fact:
    name: str
    statement: str     # prose, as tutorials state it
    latex: str         # the identity shown symbolically
    verified: bool     # SymPy proved it (on this run)
    how: str           # how SymPy verified it


def is_zero(e) -> bool:
    """e = 0 for a rational function of exponentials: its numerator, with e^(a+b) = e^a e^b,
    expands to 0 (what sympy.simplify finds, some 15 times faster)."""
    import sympy
    n = sympy.numer(sympy.together(sympy.expand(e, power_exp=True)))
    return sympy.expand(n, power_exp=True) == 0


def normal_expectation(expr, variables):
    """E[expr] for a polynomial in independent standard normal `variables`, exactly: expanded into
    monomials, each the product of its variables' moments (what sympy.stats computes, without its
    integrals: 5 s for d_k = 4)."""
    import sympy
    poly = sympy.Poly(sympy.expand(expr), *variables)
    total = sympy.Integer(0)
    for powers, coeff in poly.terms():
        if all(n % 2 == 0 for n in powers):
            total += coeff * sympy.prod([sympy.factorial2(n - 1) if n else 1 for n in powers])
    return total
