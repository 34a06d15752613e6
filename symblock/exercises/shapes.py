"""What a variant's shape draws besides numbers: dims picked from choices
(`random.dims`, `batch` among them), padded keys per sequence (`random.padding`) and dropout
masks (`random.dropout`). Each is a function of `random.seed` alone, on its own stream (draws.ints),
so redrawing the numbers of a rejected candidate keeps the shape and a set walks through shapes as
its seeds change. The result is plain spec data (`dims`, `inputs.key_padding_mask`, `dropout.masks`):
the engine knows nothing of how it was drawn.

Guarantees kept by construction: every query keeps a key (at most seq_len − 1 padded keys, padding
at the end of a sequence, as a padded batch has it: key 0 never is, so a causal row keeps one too),
and every row of a dropout mask keeps an entry while the mask drops at least one (when it has more
than one column), so the dropout is visible and no row of the dropped step is all zero.
"""
from __future__ import annotations

import copy

from symblock.errors import did_you_mean
from symblock.exercises.constraints import Constraints, err
from symblock.exercises.draws import ints, sub_seed

MASK_DRAWS = 64   # streams tried for one dropout mask before giving up


def pick(seed: int, name: str, choices: tuple) -> int:
    """One of the choices on the stream `name` (the difficulties' way of picking dims)."""
    return choices[ints(seed, name, 1, 0, len(choices) - 1)[0]]


def with_dims(data: dict, c: Constraints, source: str) -> dict:
    """`random.dims`: each listed dims key picked from its choices (before a difficulty
    fills the rest); a key the spec's `dims:` states as well is an error. `batch` is kept for
    `batch_of` (the spec's `dims:` has no such key)."""
    if not c.dims:
        return data
    data = copy.deepcopy(data)
    dims = dict(data.get("dims") or {})
    for key, choices in c.dims.items():
        if key in dims:
            raise err(source, f"random.dims.{key}", f"dims.{key} is given as well; state it in one place")
        if key != "batch":
            dims[key] = pick(c.seed, f"dims.{key}", choices)
    data["dims"] = dims
    return data


def batch_of(c: Constraints) -> int:
    """The number of sequences `random.dims.batch` picks (0: one sequence, steps unprefixed)."""
    return pick(c.seed, "dims.batch", c.dims["batch"]) if "batch" in c.dims else 0


def placeholder_batch(data: dict, c: Constraints, source: str) -> dict:
    """A batch drawn by `random.dims.batch`: zero matrices stand in for its X (drawn later), so
    that the spec loader sees the batch; inputs.X given is an error."""
    b = batch_of(c)
    if not b:
        return data
    inputs = data.get("inputs") or {}
    if "X" in inputs:
        raise err(source, "random.dims.batch", "inputs.X is given: a drawn batch draws every sequence's X; "
                  "leave inputs.X out (or give the batch as a list of matrices and drop random.dims.batch)")
    dims = data.get("dims") or {}
    if "seq_len" not in dims or "d_model" not in dims:
        raise err(source, "random.dims.batch", "a drawn batch needs dims.seq_len and dims.d_model "
                  "(or random.dims choices for them)")
    n, d = int(dims["seq_len"]), int(dims["d_model"])
    return {**data, "inputs": {**inputs, "X": [[[0] * d for _ in range(n)] for _ in range(b)]}}


def with_masks(data: dict, c: Constraints, probe, source: str) -> dict:
    """`random.padding` and `random.dropout` written into the spec mapping, for the probe's dims
    (its batch prefixes): padded keys at the end of each sequence, and a mask per dropped step."""
    from symblock.engine.steps import batch_prefixes
    if c.padding is None and c.dropout is None:
        return data
    data = copy.deepcopy(data)
    dims, prefixes = probe.dims, batch_prefixes(probe.dims)
    if c.padding is not None:
        if "key_padding_mask" in (data.get("inputs") or {}):
            raise err(source, "random.padding", "inputs.key_padding_mask is given as well; state it in one place")
        data["inputs"] = {**(data.get("inputs") or {}), "key_padding_mask": padding_rows(c, dims, prefixes, source)}
    if c.dropout is not None:
        if "dropout" in data:
            raise err(source, "random.dropout", "the spec has a dropout: section as well; give the masks "
                      "there (a mask written `random` is drawn) or here, not both")
        data["dropout"] = dropout_section(c, probe, prefixes, source)
    return data


def padding_rows(c: Constraints, dims, prefixes: list[str], source: str):
    n = dims.seq_len
    choices = c.padding or tuple(range(n))
    if any(k >= n for k in choices):
        raise err(source, "random.padding", f"expected padded keys per sequence below seq_len = {n} "
                  f"(a query needs a key to attend to), got {list(choices)}")
    rows = []
    for prefix in prefixes:
        k = pick(c.seed, f"{prefix}padding", choices)
        rows.append([j >= n - k for j in range(n)])
    return rows if dims.batch else rows[0]


def dropout_section(c: Constraints, probe, prefixes: list[str], source: str) -> dict:
    from dataclasses import replace
    from symblock.engine.steps import DROPOUT_KINDS, step_kind, step_names, step_shape
    p, steps = c.dropout
    one = [n for n in step_names(replace(probe.dims, batch=0), probe.options) if step_kind(n) in DROPOUT_KINDS]
    masks = {}
    for step in steps:
        if step not in one:
            raise err(source, "random.dropout.steps", f"no step {step!r} to drop out; " + did_you_mean(step, one)
                      + "expected one of " + ", ".join(one) + (" (unprefixed: a batch draws a mask per sequence)" if probe.dims.batch else ""))
        for prefix in prefixes:
            masks[prefix + step] = draw_mask(c.seed, prefix + step, step_shape(step, probe.dims), p, source)
    return {"p": str(p), "masks": masks}


def draw_mask(seed: int, name: str, shape: tuple[int, int], p, source: str) -> list[list[int]]:
    """A 0/1 mask, each entry dropped with probability p (engine.inputs.draw_mask's stream for
    attempt 0), redrawn until every row keeps an entry and, with two or more columns, one entry
    is dropped."""
    from symblock.engine.inputs import draw_mask as engine_mask
    r, k = shape
    for attempt in range(MASK_DRAWS):
        m = [[int(v) for v in row] for row in engine_mask(sub_seed(seed, attempt), name, shape, p).tolist()]
        if all(any(row) for row in m) and (k == 1 or any(v == 0 for row in m for v in row)):
            return m
    raise err(source, "random.dropout.p", f"no mask of {name} ({r}×{k}) with p = {p} kept an entry in "
              f"every row and dropped one in {MASK_DRAWS} draws; choose p nearer 1/2")
