"""A proved fact: what `derive --facts` prints, and what each fact function of derive.py and its
siblings (facts_rope.py) returns."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fact:
    name: str
    statement: str     # prose, as tutorials state it
    latex: str         # the identity shown symbolically
    verified: bool     # SymPy proved it (on this run)
    how: str           # how SymPy verified it
