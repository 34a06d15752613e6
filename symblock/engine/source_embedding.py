"""An encoder-decoder's source: its embedding and its padding.

`model.embeddings: separate`: the source's tokens read their own table `weights.W_E_src`, the
target's and a tied head read the target's table `weights.W_E_tgt` (`weights.W_E` is the same
field under its shared name; the trace calls the target's table W_E either way), as a translation
model with two vocabularies' embeddings; `shared`, the default, is one W_E for both, as
"Attention is all you need" shares it. `model.source_padding_mask` marks padded source positions
(torch semantics): the encoder's self-attention and the decoder's cross-attention skip them as
keys (`nn.Transformer`'s src_key_padding_mask and memory_key_padding_mask).
"""
from __future__ import annotations

from typing import Any, Mapping

from symblock.engine import spec as specmod
from symblock.engine.fields import bool_list
from symblock.errors import SpecError, excerpt


def target(m: Mapping, weights: Mapping, kind: str, shape: tuple, source: str) -> Any:
    """The target's table given as `weights.W_E_tgt` (separate embeddings only), or None: then
    `weights.W_E` (given or drawn) is the target's table."""
    raw = weights.get("W_E_tgt")
    if raw is None:
        return None
    if kind != "encoder-decoder":
        raise SpecError(source, "weights.W_E_tgt", "only an encoder-decoder has a target embedding; "
                        "the token embedding is weights.W_E")
    if m.get("embeddings", "shared") != "separate":
        raise SpecError(source, "weights.W_E_tgt", "the target's own table is for model.embeddings: "
                        "separate; with shared embeddings give weights.W_E")
    if weights.get("W_E") is not None:
        raise SpecError(source, "weights.W_E_tgt", "weights.W_E is given as well; both name the target's "
                        "embedding: give one of them")
    return specmod.parse_matrix(raw, shape, source, "weights.W_E_tgt")


def padding(raw: Any, n: int, source: str) -> tuple:
    """`model.source_padding_mask`: a bool per source token (true = padding), or () without one."""
    if raw is None:
        return ()
    where = "model.source_padding_mask"
    raw = bool_list(raw, n, source, where, "model.source token", "a padded position")
    if all(raw):
        raise SpecError(source, where, "every source position is padding: the attention's softmax would "
                        "have no terms (torch gives NaN); leave at least one position unpadded")
    return raw


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
