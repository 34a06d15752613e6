"""What the sheets and the checker do not work yet: RoPE's rotated q and k and grouped K/V heads.
The commands that would mis-work them refuse with a clear message (exit 2) instead."""
from __future__ import annotations

from typing import TYPE_CHECKING

from symblock.errors import UsageError

if TYPE_CHECKING:
    from symblock.engine.model_spec import Spec


def uses_rope_or_groups(spec: Spec) -> bool:
    """A block or a model (any layer) with RoPE or grouped K/V heads."""
    return any(layer.options.rope or layer.dims.kv_heads != layer.dims.heads for layer in spec.blocks)


def refuse(spec: Spec, what: str) -> None:
    if uses_rope_or_groups(spec):
        raise UsageError("not available yet for RoPE (block.rope, model.positions: rope) and grouped "
                         f"K/V heads (dims.kv_heads): {what}; forward, verify, grad and params work these "
                         "blocks")
