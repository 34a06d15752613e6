"""What a spec's inputs add to one block: a batch of sequences, a key padding mask, fixed
dropout masks (the spec's `inputs.X` as a list, `inputs.key_padding_mask`, `dropout:`).

The spec loader (spec.py) calls these; they validate the raw sections and say how the step graph
changes (a `.masked` step per head with a padding mask, `<step>.dropped` after a dropped step).
Masks follow torch: a padding entry `true` is a key no query may attend to; a dropout mask keeps
(1) or drops (0) an entry, and what it keeps is scaled by 1/(1 − p) (inverted dropout).
"""
from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Mapping, TypeGuard

from symblock.engine.fields import bool_list, check_keys
from symblock.engine.matrix import ExactMatrix
from symblock.engine.numbers import SpecScalar
from symblock.errors import SpecError, did_you_mean

if TYPE_CHECKING:
    import random
from symblock.engine.steps import (DROPOUT_KINDS, Dims, Options, batch_prefixes, step_kind,
                                   step_names)

GIVEN = object()    # x_sources: this sequence's `x` step is given
MISSING = object()  # x_sources: no X written (drawn from `random`, or an error)


def _what(v: Any) -> str:
    if isinstance(v, bool):
        return f"a boolean ({str(v).lower()})"
    if isinstance(v, list):
        return f"a list of {len(v)}"
    if isinstance(v, dict):
        return "a mapping"
    return "nothing (null)" if v is None else repr(v)


def _is_matrix(v: Any) -> TypeGuard[list]:
    return isinstance(v, list) and bool(v) and isinstance(v[0], list)


def batch_size(inputs: Mapping) -> int:
    """The number of sequences when `inputs.X` is a list of matrices (or, X absent, the padding
    mask is a list of lists), else 0: one sequence, unprefixed steps."""
    X, mask = inputs.get("X"), inputs.get("key_padding_mask")
    if _is_matrix(X) and X[0] and _is_matrix(X[0]):
        return len(X)
    if X is None and _is_matrix(mask):
        return len(mask)
    return 0


def first_matrix(X: Any) -> Any:
    """The first sequence's rows of a batch (what dims are guessed from), or X itself."""
    return X[0] if _is_matrix(X) and X[0] and _is_matrix(X[0]) else X


def first_mask(mask: Any) -> Any:
    """The first sequence's padding row of a batch, or the mask itself."""
    return mask[0] if _is_matrix(mask) else mask


def structure(opts: Options, dims: Dims, inputs: Mapping, dropout: Any, source: str) -> Options:
    """The block options with what the inputs add to the step graph."""
    if not opts.out_proj and dims.heads * dims.d_v != dims.d_model:
        raise SpecError(source, "block.out_proj", f"without an output projection the heads' "
                        f"concatenation is attn.out, so heads·d_v = {dims.heads}·{dims.d_v} must "
                        f"equal d_model = {dims.d_model}; set out_proj: true or change dims.d_v")
    opts = replace(opts, padding=inputs.get("key_padding_mask") is not None)
    if dropout is None:
        return opts
    if not isinstance(dropout, dict):
        raise SpecError(source, "dropout", f"expected a mapping {{p, masks}}, got {_what(dropout)}")
    check_keys(dropout, ("p", "masks"), source, "dropout")
    masks = dropout.get("masks")
    if not isinstance(masks, dict) or not masks:
        raise SpecError(source, "dropout.masks", "expected a mapping of step names to 0/1 matrices "
                        "(the fixed masks, e.g. {attn.h0.weights: [[1, 0], [1, 1]]})")
    allowed = [n for n in step_names(dims, opts) if step_kind(n) in DROPOUT_KINDS]
    for name in masks:
        if name not in allowed:
            raise SpecError(source, f"dropout.masks.{name}", "no such step to drop out; "
                            + did_you_mean(name, allowed) + "expected one of " + ", ".join(allowed))
    return replace(opts, dropout=frozenset(masks))


def dropout_p(p: SpecScalar, source: str) -> SpecScalar:
    """The drop probability (exact, already parsed): 0 <= p < 1."""
    if not 0 <= p < 1:
        raise SpecError(source, "dropout.p", f"expected a probability 0 <= p < 1, got {p}")
    return p


def draw_mask(seed: int, name: str, shape: tuple[int, int], p: SpecScalar) -> ExactMatrix:
    """A fixed dropout mask drawn from the seed: each entry dropped with probability p, from the
    mask's own stream (spec.draw's scheme: sha256 of the seed and name, `random.random()`)."""
    import hashlib
    import random
    digest = hashlib.sha256(f"symblock:{seed}:dropout.{name}".encode()).digest()
    rng, q = random.Random(int.from_bytes(digest[:8], "big")), Fraction(str(p))
    return ExactMatrix([[Fraction(0 if Fraction(rng.random()) < q else 1) for _ in range(shape[1])]
                        for _ in range(shape[0])])


def dropout_masks(dropout: Any, shapes: Mapping[str, tuple[int, int]], source: str,
                  seed: int | None = None, p: SpecScalar = 0) -> dict[str, ExactMatrix]:
    """Each mask as an exact 0/1 matrix of its step's shape; `random` draws it from the seed."""
    if dropout is None:
        return {}
    out = {}
    for name, raw in dropout["masks"].items():
        where = f"dropout.masks.{name}"
        rows, cols = shapes[name]
        if raw == "random":
            if seed is None:
                raise SpecError(source, where, "`random` draws the mask from random.seed; add a "
                                "`random: {seed: 1}` section or give the 0/1 matrix")
            out[name] = draw_mask(seed, name, (rows, cols), p)
            continue
        if not _is_matrix(raw) or len(raw) != rows or any(not isinstance(r, list) or len(r) != cols
                                                          for r in raw):
            raise SpecError(source, where, f"expected a {rows}×{cols} matrix of 0 and 1, "
                            f"got {_what(raw)}")
        for i, r in enumerate(raw):
            for j, v in enumerate(r):
                if isinstance(v, bool) or v not in (0, 1):
                    raise SpecError(source, f"{where}[{i}][{j}]", f"expected 0 (dropped) or 1 (kept), "
                                    f"got {_what(v)}")
        out[name] = ExactMatrix([[Fraction(int(v)) for v in r] for r in raw])
    return out


def x_sources(inputs: Mapping, dims: Dims, given: Mapping, source: str) -> list[tuple[str, str, Any]]:
    """(step prefix, field, raw rows | GIVEN | MISSING) of each sequence's X."""
    raw = inputs.get("X")
    if dims.batch and raw is not None and not (isinstance(raw, list) and len(raw) == dims.batch):
        raise SpecError(source, "inputs.X", f"expected a batch of {dims.batch} matrices (one per row "
                        f"of key_padding_mask), got {_what(raw)}")
    out = []
    for i, prefix in enumerate(batch_prefixes(dims)):
        where = f"inputs.X[{i}]" if dims.batch else "inputs.X"
        value = MISSING if raw is None else raw[i] if dims.batch else raw
        if dims.batch and isinstance(value, list) and len(value) != dims.seq_len:
            raise SpecError(source, where, f"expected {dims.seq_len} rows like the batch's first "
                            f"sequence, got {len(value)}: pad the shorter sequences to the same "
                            "length and mark the padding keys with inputs.key_padding_mask")
        out.append((prefix, where, GIVEN if f"{prefix}x" in given else value))
    return out


def _stream(seed: int, name: str) -> random.Random:
    import hashlib
    import random
    digest = hashlib.sha256(f"symblock:{seed}:{name}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def draw_lengths(seed: int, dims: Dims) -> list[list[bool]] | list[bool]:
    """`key_padding_mask: random`: each sequence's length drawn from 1..seq_len (its own stream,
    spec.draw's scheme), the keys after it padding, as a padded batch has them."""
    rows = []
    for prefix in batch_prefixes(dims):
        n = dims.seq_len
        length = 1 + int(_stream(seed, f"{prefix}key_padding_mask").random() * n)
        rows.append([j >= length for j in range(n)])
    return rows if dims.batch else rows[0]


def padding(raw: Any, dims: Dims, opts: Options, source: str, seed: int | None = None) -> tuple:
    """One tuple of bools per sequence; a query left with no key to attend to is an error
    (its softmax has no terms: torch gives NaN). `random` draws each sequence's length."""
    if raw is None:
        return ()
    if raw == "random":
        if seed is None:
            raise SpecError(source, "inputs.key_padding_mask", "`random` draws the sequence lengths "
                            "from random.seed; add a `random: {seed: 1}` section or give the mask")
        raw = draw_lengths(seed, dims)
    if dims.batch and not (isinstance(raw, list) and len(raw) == dims.batch):
        raise SpecError(source, "inputs.key_padding_mask", f"expected {dims.batch} lists of "
                        f"{dims.seq_len} booleans, one per sequence of inputs.X, got {_what(raw)}")
    out = []
    for b, row in enumerate(raw if dims.batch else [raw]):
        where = f"inputs.key_padding_mask[{b}]" if dims.batch else "inputs.key_padding_mask"
        if not dims.batch and isinstance(row, list) and row and all(isinstance(r, list) for r in row):
            raise SpecError(source, where, "a list of lists is a batch's mask, one list per sequence: give "
                            "inputs.X as a batch (a list of matrices) too, or one list of booleans")
        row = bool_list(row, dims.seq_len, source, where, "key position", "a padding key")
        if all(row) or (opts.causal and row[0]):   # causal: query 0 reads key 0 only
            what = "every key is padding" if all(row) else \
                "query 0 may attend to no key (causal, it reads only key 0, and entry [0] is padding)"
            raise SpecError(source, where, f"{what}: its softmax would have no terms (torch "
                            "gives NaN); leave at least one (earlier) key unpadded")
        out.append(row)
    return tuple(out)
