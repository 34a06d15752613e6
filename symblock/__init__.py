"""symblock: a Transformer block worked forward exactly.

    >>> import symblock
    >>> trace = symblock.forward(symblock.load("seed-post-ln"))
    >>> trace["resid2"].value  # exact

Heavy modules (SymPy printing, NumPy, torch) are imported where they are used, so that
`import symblock` and `symblock --help` stay fast.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["load", "forward", "spec_from", "SpecError"]

if TYPE_CHECKING:  # what a type checker reads; at run time `__getattr__` imports each on first use
    from pathlib import Path
    from typing import Mapping

    from symblock.engine.block import Step, Trace
    from symblock.engine.model import forward_any as forward
    from symblock.engine.model_spec import Spec
    from symblock.errors import SpecError
    from symblock.reference.spec_from import spec_from

    def load(name_or_path: str | Path) -> Spec:
        """A built-in example name or a spec file: a BlockSpec, or a ModelSpec for a `model:` spec."""

    def from_mapping(data: Mapping[str, Any], source: str = "<spec>") -> Spec:
        """A parsed spec (a mapping), validated as `load` validates a file."""


def __getattr__(name: str) -> Any:
    if name in ("load", "from_mapping"):  # constraints drawn, models too (exercises.generate)
        import functools
        from symblock.exercises import generate
        return functools.partial(getattr(generate, name), allow_model=True)
    if name == "SpecError":
        from symblock.errors import SpecError
        return SpecError
    if name == "forward":  # a block or a tiny GPT
        from symblock.engine.model import forward_any
        return forward_any
    if name == "spec_from":  # torch / Hugging Face / nanoGPT objects (imports torch only when called)
        from symblock.reference.spec_from import spec_from
        return spec_from
    if name in ("Trace", "Step"):
        from symblock.engine import block
        return getattr(block, name)
    raise AttributeError(f"module 'symblock' has no attribute {name!r}")
