"""How much exact work a forward takes, known from the dims and options alone, so that a block
too large for exact arithmetic is refused before any matrix is parsed or drawn.

The unit is one exact multiply-add; every entry a step makes costs NODE more (a new graph node
with its certified ball: an exp, a division, a square root), so the n² softmax entries of
seq_len 512 count, not only the multiply-adds of the projections. Measured (bench/README_scaling.md,
bench/README_cost.md): about 1.4–1.8 µs of CPU a unit at d_model 32–64 on this 2-core machine, the
forward with every entry certified to 30 digits, since balls carry 192 bits (3–4 µs before, 5 µs
before matrix products were made in bulk), within a factor of 4 across shapes, so the default
limit of 6,000,000 is about 10 s of work (bench/README_cost.md: 1.6 µs a unit at the median shape). Only the steps the engine computes count
(a given step cuts off what fed it).
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
import os
from typing import Iterable, Iterator

from symblock.engine import kinds
from symblock.engine.kinds import NODE  # noqa: F401  (the unit's definition, read by model.py)
from symblock.engine.steps import Dims, Options, computed_steps
from symblock.errors import SpecError, UsageError

MAX_COST = 6_000_000     # default limit (--max-cost N or SYMBLOCK_MAX_COST=N raise it)
MAX_SYMBOLIC_ENTRIES = 8  # seq_len·d_model and d_ff of a symbolic forward
_limit: contextvars.ContextVar[int | float | None] = contextvars.ContextVar("max_cost", default=None)
_kept: contextvars.ContextVar[bool] = contextvars.ContextVar("kept", default=False)


def step_cost(name: str, dims: Dims, opts: Options) -> int:
    """Units of one step (the table of kinds says; a batch's steps cost as one sequence's)."""
    return kinds.cost(name, dims, opts)


def cost(dims: Dims, opts: Options, given: Iterable[str] = ()) -> int:
    """Units of the whole forward (the steps it computes)."""
    return _cost(dims, opts, frozenset(given))


@functools.lru_cache(maxsize=256)  # every forward checks its size; a generator works hundreds alike
def _cost(dims: Dims, opts: Options, given: frozenset) -> int:
    return sum(step_cost(s, dims, opts) for s in computed_steps(dims, opts, set(given)))


def current_limit() -> int | float:
    """The limit in force: `limit(...)`'s, else SYMBLOCK_MAX_COST, else MAX_COST."""
    if (set_here := _limit.get()) is not None:
        return set_here
    text = os.environ.get("SYMBLOCK_MAX_COST")
    if text is None or not text.strip():
        return MAX_COST
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise UsageError(f"SYMBLOCK_MAX_COST: expected a whole number >= 0, got {text!r}")
    return value


@contextlib.contextmanager
def limit(n: int | float | None) -> Iterator[None]:
    """Within this block, loads and forwards use the limit `n` (None: no change; math.inf: none).
    The one way to set the limit: the CLI wraps a command in it, so that --max-cost also reaches
    the check made while a spec is loaded; a library caller or a test does the same."""
    token = _limit.set(n if n is not None else _limit.get())
    try:
        yield
    finally:
        _limit.reset(token)


def limit_text(lim: int | float) -> str:
    """The limit as a message states it: the default says how long it is."""
    return f"{lim:,}" + (" (about 10 s of work)" if lim == MAX_COST else "")


def check(dims: Dims, opts: Options, source: str, given: Iterable[str] = ()) -> None:
    """Refuse a block over the limit, naming its cost and how to raise the limit."""
    lim, c = current_limit(), cost(dims, opts, given)
    if c > lim:
        raise SpecError(source, "dims", f"this block needs about {c:,} exact operations "
                        f"(seq_len {dims.seq_len}, d_model {dims.d_model}, d_ff {dims.d_ff}, heads "
                        f"{dims.heads}), over the exact engine's limit of {limit_text(lim)}; use smaller dims, "
                        "or raise the limit with --max-cost N (or SYMBLOCK_MAX_COST=N)")


def check_symbolic(dims: Dims, source: str, limit: int | None = None) -> None:
    """Refuse a symbolic forward over `limit` entries (default MAX_SYMBOLIC_ENTRIES, read when called)."""
    n, d, f = dims.seq_len, dims.d_model, dims.d_ff
    limit = MAX_SYMBOLIC_ENTRIES if limit is None else limit
    if n * d > limit or f > limit:
        raise SpecError(source, "dims", f"a symbolic forward is limited to seq_len·d_model <= "
                        f"{limit} and d_ff <= {limit} (got {n}·{d}, {f}): "
                        "general formulas grow exponentially with size")


@contextlib.contextmanager
def acyclic() -> Iterator[None]:
    """Pause the cyclic garbage collector while a forward builds its graph: a node points only to
    older nodes, so reference counting frees whatever is dropped, and each collection would only
    walk the growing graph again (a third of a 16 × 32 decoder layer's time). Within `kept()` the
    built graph is then moved out of the collector's sight (`gc.freeze`)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _kept.get():
            gc.freeze()
        if was:
            gc.enable()


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """Within this block, every forward's graph is taken to live until the block ends, as in one
    command of the CLI: `grade` keeps 300 variants' traces, and each full collection walked them all
    again (1.3 s of an 8.5 s grade, bench/README_classroom.md). Reference counting still frees what
    is dropped; on leaving, the frozen objects return to the collector (`gc.unfreeze`), so a caller
    that runs commands in one process (a test, a notebook) keeps no uncollectable cycle."""
    token = _kept.set(True)
    try:
        yield
    finally:
        _kept.reset(token)
        gc.unfreeze()
