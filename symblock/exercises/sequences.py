"""A batch under generation constraints: every sequence must meet the guarantees.

The generator draws X of a batch stacked (batch·seq_len rows, so the rows of X are picked from the
norm's row family as one walk) and splits it into the sequences here; the cheap score checks and
the attention fit run on each sequence with its key padding row, and a failure names the sequence
(`b1.attn.h0.scores row 2 …`). One sequence is the batch of one with the prefix "".
"""
from __future__ import annotations

from symblock.exercises.checks import attention_input, check_scores
from symblock.exercises.constraints import Constraints
from symblock.exercises.stage import fit_attention


def x_shape(dims) -> tuple[int, int]:
    """The stacked X the generator draws: every sequence's rows, one after the other."""
    return (max(dims.batch, 1) * dims.seq_len, dims.d_model)


def split(X: list, dims) -> list[list]:
    """The stacked X as one matrix per sequence."""
    n = dims.seq_len
    return [X[b * n:(b + 1) * n] for b in range(max(dims.batch, 1))]


def attention_inputs(tensors: dict, probe) -> list | None:
    """(prefix, attention input A, padding row) of each sequence, or None when one is not
    rational (the exact checks decide)."""
    out = []
    for (prefix, _, pad), X in zip(probe.sequences(), split(tensors["X"], probe.dims) if "X" in tensors else [None]):
        A = attention_input({**tensors, "X": X} if X is not None else tensors, probe)
        if A is None:
            return None
        out.append((prefix, A, pad))
    return out


def check_all(seqs: list, tensors: dict, probe, c: Constraints) -> str | None:
    """The first score constraint some sequence fails (its message names the sequence)."""
    for prefix, A, pad in seqs:
        failed = check_scores(A, tensors, probe, c, pad, prefix)
        if failed:
            return failed
    return None


def fit_all(seqs: list, tensors: dict, redraw: list[str], probe, c: Constraints, seed: int, batches: int):
    return fit_attention([(A, pad) for _, A, pad in seqs], tensors, redraw, probe, c, seed, batches)
