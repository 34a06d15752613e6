"""What a node of the exact graph shows the modules below exact.py (balls, cancel, closed), which
read nodes but never build one: `exact.Real` as a type they can name without importing it."""
from __future__ import annotations

from typing import Protocol, TypeVar

from flint import arb, fmpq


class Node(Protocol):
    """A node: `q` when rational, else `op` on `args`; its ball, tree size and serial number."""
    q: fmpq | None
    op: str
    args: tuple
    ball: arb
    size: int
    n: int
    _hi: dict[int, arb] | None  # balls at higher precision, made on demand (balls.hi_ball)

    def enclosure(self, prec: int = ...) -> arb: ...


N = TypeVar("N", bound=Node)  # a function that hands nodes back gives the caller's own type
