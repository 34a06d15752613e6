"""The Python API: what the command line does, as functions. `import symblock` exposes these names
and imports the engine only when one is first used, so `import symblock` stays light.

    >>> import symblock
    >>> trace = symblock.forward(symblock.load("seed-post-ln"))
    >>> trace["norm1.std"].value.to_sympy()
    Matrix([
    [901/1000],
    [  31/250],
    [  43/100]])
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["load", "from_mapping", "forward", "verify", "spec_from"]
from typing import TYPE_CHECKING, Any, Mapping, Union

if TYPE_CHECKING:
    from symblock.engine.block import Trace
    from symblock.engine.model_spec import ModelSpec
    from symblock.engine.spec import BlockSpec
    from symblock.reference.verify import VerifyResult

    Spec = Union[BlockSpec, ModelSpec]


def load(name_or_path: str | Path) -> "Spec":
    """A built-in example name (`"seed-post-ln"`) or a YAML/JSON spec file, validated, with any
    `random:` draws made under their guarantees. A bad spec raises `SpecError` naming the file,
    the field and what was expected.

        >>> symblock.load("tiny-gpt").vocab
        ('the', 'cat', 'sat', 'on', 'mat')
    """
    from symblock.exercises import generate
    return generate.load(name_or_path, allow_model=True)


def from_mapping(data: Mapping[str, Any], source: str = "<spec>") -> "Spec":
    """A spec given as a mapping (what `spec_from` returns, or a parsed YAML file).

        >>> dims = {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1}
        >>> symblock.from_mapping({"dims": dims, "random": {"seed": 1}}).dims.seq_len
        2
    """
    from symblock.exercises import generate
    return generate.from_mapping(data, source, allow_model=True)


def forward(spec: "Spec") -> "Trace":
    """Work the block (or tiny GPT) forward exactly: a Trace of named steps in forward order, each
    with its formula and exact value.

        >>> trace = symblock.forward(symblock.load("seed-post-ln"))
        >>> [s.name for s in trace][:3]
        ['x', 'attn.out', 'resid1']
    """
    from symblock.engine.model import forward_any
    return forward_any(spec)


def verify(spec: "Spec", tol: float = 1e-9, use_torch: bool = True) -> "VerifyResult":
    """Every step again through independent NumPy float64 code and real torch.nn modules (when torch is
    installed and `use_torch`), compared with the exact values; `.ok` says whether all agree.

        >>> symblock.verify(symblock.load("seed-post-ln"), use_torch=False).ok
        True
    """
    from symblock.reference import verify as v
    return v.run(spec, tol=tol, use_torch=use_torch)


def spec_from(obj: Any, *inputs: Any, **options: Any) -> dict[str, Any]:
    """The spec mapping that reproduces a torch, Hugging Face or nanoGPT object's forward on `inputs`
    (see `symblock.reference.spec_from`); `from_mapping` turns it into a spec."""
    from symblock.reference.spec_from import spec_from as read
    return read(obj, *inputs, **options)
