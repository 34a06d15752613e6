"""An encoder-decoder's source embedding (`model.embeddings: separate`, `weights.W_E_src`): the
source's tokens read their own table W_E_src, the target's and a tied head read W_E (as a
translation model with two vocabularies' embeddings; `shared`, the default, is one W_E for both,
as "Attention is all you need" shares it).
"""
from __future__ import annotations

from typing import Any, Mapping

from symblock.engine import spec as specmod
from symblock.errors import SpecError, excerpt


def parse(m: Mapping, weights: Mapping, kind: str, shape: tuple, rnd: tuple, source: str) -> Any:
    """An encoder-decoder's source embedding W_E_src (`model.embeddings: separate`, or the matrix
    given): the source's tokens read it, the target's and a tied head read W_E. None: W_E is shared."""
    how = m.get("embeddings", "shared")
    if how not in ("shared", "separate"):
        raise SpecError(source, "model.embeddings", f"expected one of shared, separate, got {excerpt(how)}")
    raw = weights.get("W_E_src")
    if kind != "encoder-decoder":
        if raw is not None or "embeddings" in m:
            where = "weights.W_E_src" if raw is not None else "model.embeddings"
            raise SpecError(source, where, "only an encoder-decoder has a source embedding of its own")
        return None
    if raw is not None and how == "shared" and "embeddings" in m:
        raise SpecError(source, "weights.W_E_src", "not used with model.embeddings: shared")
    if raw is not None:
        return specmod.parse_matrix(raw, shape, source, "weights.W_E_src")
    if how == "shared":
        return None
    seed, low, high = rnd
    if seed is None:
        raise SpecError(source, "weights.W_E_src", f"missing; expected a {shape[0]}×{shape[1]} matrix "
                        "(or a `random: {seed: 1}` section to draw it)")
    return specmod.draw(seed, "W_E_src", shape, low, high)
