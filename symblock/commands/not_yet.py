"""What the sheets and the checker do not work yet. Every block and tiny GPT the engine works has
its sheets, keys and checking now (RoPE and grouped K/V heads included), so nothing is refused
here; a kind added to the engine before its working is refused here (exit 2) until it has one."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from symblock.engine.model_spec import Spec


def refuse(spec: Spec, what: str) -> None:
    """Nothing is left to refuse (kept as the one place a new, unworked kind would be refused)."""
    return None
