"""The attention weights drawn to fit: many candidates for W_Q, W_K (W_V, biases) at once, the
scores of all of them computed in exact integers (the attention input scaled by the common
denominator L of its entries), and the first candidate that meets every score constraint kept.

integer_scores, score_range, scaled_range and softmax_distinct are decided exactly on those
integers; softmax_weights in float64 with a margin (checks.MARGIN), then again exactly by the
caller (checks.check_scores) and on the trace. Candidates come from `draws.ints` streams, so the
choice is the same on every machine.
"""
from __future__ import annotations

import math
from fractions import Fraction

from symblock.exercises.checks import MARGIN
from symblock.exercises.constraints import Constraints
from symblock.exercises.draws import draw_tensor, ints_array, sub_seed

BATCH = 256  # candidates scored at once


def common_denominator(A: list) -> int:
    return math.lcm(*(int(v.q) for row in A for v in row))


def fit_attention(seqs: list, tensors: dict, redraw: list[str], probe, c: Constraints, seed: int,
                  batches: int) -> int | None:
    """Replace the `redraw` tensors by the first candidate (of `batches` × BATCH) whose scores meet
    the constraints in every sequence of `seqs` ((attention input A, key padding row or None)
    each: one, or a batch's); the index of that candidate, or None (tensors unchanged)."""
    import numpy as np
    from symblock.engine.steps import param_shape
    dims, opts = probe.dims, probe.options
    L = common_denominator([row for A, _ in seqs for row in A])
    big = L > 200  # int64 would overflow in the squared comparisons: Python ints (object arrays)
    dtype = object if big else np.int64
    ALs = [(np.array([[int(v * L) for v in row] for row in A], dtype=dtype), pad) for A, pad in seqs]
    fixed = {}
    for name in ("W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V"):
        if name not in redraw and (name in tensors or name in probe.params):
            m = [[Fraction(str(v)) for v in row] for row in (tensors[name] if name in tensors
                                                              else probe.params[name].tolist())]
            if any(v.denominator != 1 for row in m for v in row):
                return None  # a given non-integer weight: no integer scoring (the draw is checked as usual)
            fixed[name] = np.array([[int(v) for v in row] for row in m], dtype=dtype)
    for b in range(batches):
        cand = {n: _batch(sub_seed(seed, 10**6 + b), n, param_shape(n, dims), c, dtype) for n in redraw}
        ok = None
        for AL, pad in ALs:
            one = _passing(AL, L, {**fixed, **cand}, dims, opts, c, pad)
            ok = None if one is None else one if ok is None else ok & one
            if ok is None or not ok.any():
                break
        if ok is not None and ok.any():
            j = int(np.argmax(ok))
            for n in redraw:
                t = cand[n][j].tolist()
                tensors[n] = [[int(v) for v in row] for row in t]
            return b * BATCH + j
    return None


def _batch(seed: int, name: str, shape: tuple[int, int], c: Constraints, dtype):
    """BATCH candidates for one tensor: one stream (draws.ints), or one draw each with sparsity."""
    import numpy as np
    r, k = shape
    if c.sparsity:
        return np.array([draw_tensor(sub_seed(seed, j), name, shape, *c.range_of(name), c.sparsity)
                         for j in range(BATCH)], dtype=dtype)
    return ints_array(seed, f"{name}#stage", BATCH * r * k, *c.range_of(name)).astype(dtype).reshape(BATCH, r, k)


def _passing(AL, L: int, t: dict, dims, opts, c: Constraints, pad=None):
    """A boolean per candidate: every score constraint met on one sequence (None: a projection
    is missing); `pad` its key padding row (padding keys are not live)."""
    import numpy as np
    proj = {}
    for p in "QKV" if c.integer_scores else "QK":
        W, b = t.get(f"W_{p}"), t.get(f"b_{p}")
        if W is None:
            return None
        y = np.einsum("nd,...de->...ne", AL, W)   # = L·(A W)
        proj[p] = y + L * b if b is not None else y   # b broadcasts over rows: (1, e) or (N, 1, e)
    n, dh = dims.seq_len, dims.d_head
    N = max(v.shape[0] if v.ndim == 3 else 1 for v in proj.values())
    ok = np.ones(N, dtype=bool)
    if c.integer_scores and L > 1:
        for y in proj.values():
            ok &= (np.asarray(y % L == 0).reshape(y.shape[0] if y.ndim == 3 else 1, -1)).all(axis=1)
    dk = dh if opts.attention_scale == "sqrt_dk" else 1
    live = np.tril(np.ones((n, n), dtype=bool)) if opts.causal else np.ones((n, n), dtype=bool)
    if pad:
        live &= ~np.array(pad, dtype=bool)[None, :]
    L2 = L * L
    for h in range(dims.heads):
        q, k = (np.broadcast_to(proj[p], (N, *proj[p].shape[-2:]))[..., h * dh:(h + 1) * dh] for p in "QK")
        S = np.einsum("...ie,...je->...ij", q, k)   # = L²·(Q_h K_hᵀ), exact integers
        if c.integer_scores:
            ok &= (S % L2 == 0).reshape(N, -1).all(axis=1)
        if c.score_range:
            lo, hi = c.score_range
            ok &= ((S * lo.denominator >= lo.numerator * L2) & (S * hi.denominator <= hi.numerator * L2)
                   ).reshape(N, -1).all(axis=1)
        if c.scaled_range:
            ok &= _within_scaled(S, L2, dk, c.scaled_range, live, N)
        if c.softmax_distinct:
            for i in range(n):
                row = np.sort(S[:, i, live[i]], axis=1)
                ok &= (row[:, 1:] != row[:, :-1]).all(axis=1)
        if c.softmax_weights:
            ok &= _weights_within(S, L2, dk, c.softmax_weights, live, n, N)
    return ok


def _within_scaled(S, L2: int, dk: int, bounds: tuple[Fraction, Fraction], live, N: int):
    """lo <= S/(L²√dk) <= hi on the live entries, exactly: S·den vs num·L²·√dk by signs and squares."""
    import numpy as np
    good = np.ones(S.shape, dtype=bool)
    for t, side in ((bounds[0], 1), (bounds[1], -1)):  # side 1: S >= t·L²√dk, side -1: S <= t·L²√dk
        a = S * t.denominator
        b_sign, b2 = (t > 0) - (t < 0), (t.numerator * L2) ** 2 * dk
        a_sign = np.sign(a)
        a2 = a * a
        if side == 1:   # a >= B where B has sign b_sign and square b2
            good &= np.where(a_sign > b_sign, True, np.where(a_sign < b_sign, False,
                             np.where(a_sign > 0, a2 >= b2, a2 <= b2))).astype(bool)
        else:           # a <= B
            good &= np.where(a_sign < b_sign, True, np.where(a_sign > b_sign, False,
                             np.where(a_sign > 0, a2 <= b2, a2 >= b2))).astype(bool)
    good |= ~live
    return good.reshape(N, -1).all(axis=1)


def _weights_within(S, L2: int, dk: int, bounds: tuple[Fraction, Fraction], live, n: int, N: int):
    import numpy as np
    x = S.astype(np.float64) / (L2 * math.sqrt(dk))
    x = np.where(live, x, -np.inf)
    x = x - x.max(axis=2, keepdims=True)
    e = np.exp(x)
    w = e / e.sum(axis=2, keepdims=True)
    lo, hi = float(bounds[0]) + MARGIN, float(bounds[1]) - MARGIN
    rows = live.sum(axis=1) > 1   # a row with one live entry has weight 1: no bound applies
    bad = ((w < lo) | (w > hi)) & live & rows[:, None]
    return ~bad.reshape(N, -1).any(axis=1)


def fit_ffn(u: list, tensors: dict, redraw: list[str], probe, c: Constraints, seed: int,
            batches: int) -> int | None:
    """relu_mixed by construction: W_1 (and b_1) replaced by the first candidate whose ffn.hidden =
    u W_1 + b_1, from the FFN input u of the exact trace (floats, MARGIN from zero), has both
    signs in every row / column (of every sequence: u holds one matrix per sequence); the exact
    trace decides again."""
    import numpy as np
    from symblock.engine.steps import param_shape
    U = np.array(u, dtype=np.float64)
    b_fixed = None
    if "b_1" not in redraw and ("b_1" in tensors or "b_1" in probe.params):
        b_fixed = np.array([[float(Fraction(str(v))) for v in row] for row in
                            (tensors["b_1"] if "b_1" in tensors else probe.params["b_1"].tolist())])
    W_fixed = None if "W_1" in redraw else np.array(probe.params["W_1"].tolist(), dtype=np.float64)
    for b in range(batches):
        cand = {n: _batch(sub_seed(seed, 2 * 10**6 + b), n, param_shape(n, probe.dims), c, np.float64)
                for n in redraw}
        W = cand.get("W_1", W_fixed)
        H = np.einsum("snd,...df->...snf", U, W)   # (BATCH,) sequences, rows, d_ff
        bias = cand.get("b_1", b_fixed)
        if bias is not None:
            H = H + (bias[:, None] if bias.ndim == 3 else bias)
        H = np.broadcast_to(H, (BATCH, *H.shape[-3:]))
        pos, neg = H > MARGIN, H < -MARGIN
        ok = np.ones(BATCH, dtype=bool)
        if c.relu_mixed in ("rows", "both"):
            ok &= (pos.any(axis=3) & neg.any(axis=3)).all(axis=(1, 2))
        if c.relu_mixed in ("columns", "both"):
            ok &= (pos.any(axis=2) & neg.any(axis=2)).all(axis=(1, 2))
        if ok.any():
            j = int(np.argmax(ok))
            for n in redraw:
                tensors[n] = [[int(v) for v in row] for row in cand[n][j].tolist()]
            return b * BATCH + j
    return None
