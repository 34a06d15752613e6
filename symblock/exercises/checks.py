"""Constraint checks: on exact trace values, cheap ones in Fractions before any exact forward, and
static ones no draw can change. Each returns the name of the failing constraint, or None."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Mapping

from symblock.exercises.constraints import Constraints, err

def rat(e) -> Fraction | None:
    from symblock.engine import exact
    if isinstance(e, exact.Real) and e.is_rational:
        return Fraction(int(e.q.p), int(e.q.q))
    return None


def sign(e) -> int:
    from symblock.engine import exact
    try:
        return e.sign()
    except exact.UndecidableError:
        return 0  # indistinguishable from zero: treat as zero (the draw is rejected)


def equal(a, b) -> bool:
    ra, rb = rat(a), rat(b)
    if ra is not None and rb is not None:
        return ra == rb
    return sign(a - b) == 0



def norm_names_in(steps: Mapping) -> list[str]:
    return [n[:-4] for n in steps if n.endswith((".std", ".rms"))]


def check_norms(steps: Mapping, graph: Mapping, norm: str, c: Constraints) -> str | None:
    """exact_norm and no_degenerate_rows on the exact values of every computed norm."""
    for name in norm_names_in(steps):
        stat = f"{name}.mean" if norm == "layernorm" else f"{name}.ms"
        src = graph[stat][0]
        if src not in steps:
            continue
        x = steps[src].rows
        root = steps[f"{name}.std" if norm == "layernorm" else f"{name}.rms"].rows
        for i, row in enumerate(x):
            if c.no_degenerate_rows:
                if norm == "layernorm":
                    mu = steps[f"{name}.mean"].rows[i][0]
                    dev = [e - mu for e in row]
                else:
                    dev = list(row)
                sq = [e * e for e in dev]  # all equal: zero variance, or every value forced to ±1
                if all(equal(sq[0], s) for s in sq[1:]):
                    return "no_degenerate_rows"
            if name in c.exact_norm and all(rat(e) is not None for e in row) and rat(root[i][0]) is None:
                return "exact_norm"
    return None


def check_attention(steps: Mapping, graph: Mapping, c: Constraints) -> str | None:
    from symblock.engine import exact
    if c.integer_scores:
        for name, v in steps.items():
            if name in ("attn.q", "attn.k", "attn.v") or (name.startswith("attn.h") and name.endswith(".scores")):
                for row in v.rows:
                    for e in row:
                        r = rat(e)
                        if r is None or r.denominator != 1:
                            return "integer_scores"
    heads = sorted(n[:-len(".weights")] for n in steps if n.startswith("attn.h") and n.endswith(".weights"))
    if c.score_range is not None:
        lo, hi = c.score_range
        lo_r, hi_r = exact.from_sympy(sym(lo)), exact.from_sympy(sym(hi))
        for h in heads:
            if f"{h}.scores" not in steps:
                continue
            for row in steps[f"{h}.scores"].rows:
                for e in row:
                    r = rat(e)
                    if r is not None:
                        if not lo <= r <= hi:
                            return "score_range"
                    elif sign(e - lo_r) < 0 or sign(e - hi_r) > 0:
                        return "score_range"
    if c.softmax_distinct:
        for h in heads:
            src = graph[f"{h}.weights"][0]
            if src not in steps:
                continue
            for row in steps[src].rows:
                live = [e for e in row if e is not exact.NEG_INF]
                for a, b in itertools.combinations(live, 2):
                    if equal(a, b):
                        return "softmax_distinct"
    return None


def sym(q: Fraction):
    import sympy
    return sympy.Rational(q.numerator, q.denominator)


def check_activation(steps: Mapping, c: Constraints) -> str | None:
    if not c.relu_mixed or "ffn.hidden" not in steps or "ffn.act" not in steps:
        return None
    signs = [[sign(e) for e in row] for row in steps["ffn.hidden"].rows]
    lines = []
    if c.relu_mixed in ("rows", "both"):
        lines += signs
    if c.relu_mixed in ("columns", "both"):
        lines += [list(col) for col in zip(*signs)]
    if any(not (1 in line and -1 in line) for line in lines):
        return "relu_mixed"
    return None



def fractions(m) -> list | None:
    from flint import fmpq
    out = []
    for row in m.tolist():
        if not all(e.is_Rational for e in row):
            return None
        out.append([fmpq(int(e.p), int(e.q)) for e in row])
    return out


def mm(a: list, b: list) -> list:
    cols = list(zip(*b))
    return [[sum(x * y for x, y in zip(r, col)) for col in cols] for r in a]


def precheck_attention(tensors: dict, probe, c: Constraints) -> str | None:
    """integer_scores, score_range and softmax_distinct in Fractions before any exact forward,
    when the attention input is rational: X (Post-LN) or norm1(X) with rational σ (Pre-LN)."""
    if not (c.integer_scores or c.score_range or c.softmax_distinct):
        return None
    dims, opts = probe.dims, probe.options
    if any(s.startswith("attn.") or s in ("x", "norm1") for s in probe.given) or "X" not in tensors:
        return None
    from flint import fmpq
    X = [[fmpq(v) for v in row] for row in tensors["X"]]
    if opts.norm_position == "pre":
        gamma, beta = (fractions(probe.params[f"ln1.{p}"]) if f"ln1.{p}" in probe.params else None
                       for p in ("gamma", "beta"))
        if gamma is None or (opts.norm == "layernorm" and beta is None):
            return None
        eps, d, rows = fmpq(*Fraction(str(opts.eps)).as_integer_ratio()), dims.d_model, []
        for row in X:
            mu = sum(row) / d if opts.norm == "layernorm" else fmpq(0)
            dev = [v - mu for v in row]
            m = sum(v * v for v in dev) / d + eps
            p, q = int(m.p), int(m.q)
            if m == 0 or math.isqrt(p) ** 2 != p or math.isqrt(q) ** 2 != q:
                return None
            root = fmpq(math.isqrt(p), math.isqrt(q))
            rows.append([v / root * g + (beta[0][j] if beta else 0) for j, (v, g) in enumerate(zip(dev, gamma[0]))])
        X = rows

    def param(name):
        if name in tensors:
            t = tensors[name]
            return [[fmpq(v) for v in row] for row in t]
        return fractions(probe.params[name]) if name in probe.params else None
    proj = {}
    for p in "QKV" if c.integer_scores else "QK":
        W = param(f"W_{p}")
        if W is None:
            return None
        y = mm(X, W)
        b = param(f"b_{p}") if opts.bias or f"b_{p}" in probe.params else None
        if b is not None:
            y = [[v + bj for v, bj in zip(row, b[0])] for row in y]
        proj[p] = y
    if c.integer_scores and any(v.q != 1 for m in proj.values() for row in m for v in row):
        return "integer_scores"
    dh = dims.d_head
    lo, hi = (fmpq(*b.as_integer_ratio()) for b in c.score_range) if c.score_range else (None, None)
    for h in range(dims.heads):
        q = [row[h * dh:(h + 1) * dh] for row in proj["Q"]]
        k = [row[h * dh:(h + 1) * dh] for row in proj["K"]]
        S = mm(q, [list(col) for col in zip(*k)])
        for i, row in enumerate(S):
            if c.integer_scores and any(v.q != 1 for v in row):
                return "integer_scores"
            if c.score_range and any(not lo <= v <= hi for v in row):
                return "score_range"
            live = row[:i + 1] if opts.causal else row
            if c.softmax_distinct and len(set(live)) < len(live):
                return "softmax_distinct"
    return None


def static_checks(c: Constraints, dims, opts, source: str) -> None:
    """Constraints that no draw can change: fail before drawing."""
    if c.exact_scale and opts.attention_scale != "none":
        d = dims.d_head
        if math.isqrt(d) ** 2 != d:
            raise err(source, "random.exact_scale", f"d_head = {dims.d_model}/{dims.heads} = {d} is not a "
                       "perfect square, so 1/sqrt(d_k) is irrational; choose d_model/heads in 1, 4, 9, 16, … "
                       "or block.attention_scale: none")
    if c.no_degenerate_rows and opts.norm == "layernorm" and dims.d_model <= 2:
        raise err(source, "random.no_degenerate_rows", f"with d_model = {dims.d_model} every LayerNorm row "
                   "normalises to ±1 (or has zero variance); use d_model >= 3")
    if c.no_degenerate_rows and opts.norm == "rmsnorm" and dims.d_model <= 1:
        raise err(source, "random.no_degenerate_rows", "with d_model = 1 every RMSNorm row normalises to ±1")

