"""symblock: a Transformer block worked forward exactly.

    >>> import symblock
    >>> trace = symblock.forward(symblock.load("seed-post-ln"))
    >>> trace["resid2"].value.shape
    (3, 2)

The functions are in `symblock.api`; they import the engine when first called, and heavy modules
(SymPy printing, NumPy, torch) are imported where they are used, so that `import symblock` and
`symblock --help` stay fast.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from symblock.api import check, forward, from_mapping, grade, load, spec_from, verify, worksheet

__version__ = "0.1.0"
__all__ = ["load", "from_mapping", "forward", "verify", "check", "worksheet", "grade", "spec_from", "SpecError"]

if TYPE_CHECKING:  # what a type checker reads; at run time `__getattr__` imports each on first use
    from symblock.engine.block import Step, Trace
    from symblock.errors import SpecError


def __getattr__(name: str) -> Any:
    if name == "SpecError":
        from symblock.errors import SpecError
        return SpecError
    if name in ("Trace", "Step"):
        from symblock.engine import block
        return getattr(block, name)
    raise AttributeError(f"module 'symblock' has no attribute {name!r}")
