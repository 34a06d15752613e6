"""Constraint checks: on exact trace values, cheap ones in Fractions before any exact forward, and
static ones no draw can change. Each returns None, or "constraint: what failed, with the numbers"
(the generator counts rejections by the part before the colon and quotes the last detail)."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Mapping

from symblock.errors import did_you_mean
from symblock.exercises.constraints import Constraints, err

MARGIN = 1e-9  # the float pre-check of softmax weights keeps this far from a bound (exact check follows)


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
    if not (a.ball - b.ball).contains(0):  # the certified balls already part them: no node to build
        return False
    return sign(a - b) == 0


def at_least(e, bound: Fraction) -> bool:
    """e >= bound, exactly (certified for irrational e; indistinguishable counts as equal).
    The node's own ball decides first (an Arb comparison is true only for every point of the
    ball); only a ball that straddles the bound builds e − bound and refines its sign."""
    from flint import arb, fmpq
    from symblock.engine import exact
    r = rat(e)
    if r is not None:
        return r >= bound
    d = e.ball - arb(fmpq(bound.numerator, bound.denominator))
    if d > 0:
        return True
    if d < 0:
        return False
    return sign(e - exact.real(bound)) >= 0


def at_most(e, bound: Fraction) -> bool:
    """e <= bound, as at_least decides it (−e would build a node per entry checked)."""
    from flint import arb, fmpq
    from symblock.engine import exact
    r = rat(e)
    if r is not None:
        return r <= bound
    d = e.ball - arb(fmpq(bound.numerator, bound.denominator))
    if d < 0:
        return True
    if d > 0:
        return False
    return sign(exact.real(bound) - e) >= 0


def degenerate(row: list, mean=None) -> bool:
    """Whether every (x − mean)² of the row is the same (zero variance, or every normalised value
    forced to ±1). The certified balls part most rows at once; only a row whose balls all overlap
    is worked exactly."""
    balls = [(x.ball - mean.ball if mean is not None else x.ball) ** 2 for x in row]
    if any(not (balls[0] - b).contains(0) for b in balls[1:]):
        return False
    sq = [(x - mean if mean is not None else x) ** 2 for x in row]
    return all(equal(sq[0], s) for s in sq[1:])


def show(e) -> str:
    r = rat(e)
    return str(r) if r is not None else f"{float(e):.4g}"


def norm_names_in(steps: Mapping) -> list[str]:
    from symblock.engine import names
    roots = (s for s in map(names.parse, steps) if s.stat in ("std", "rms"))
    return [s.sibling(s.norm) for s in roots]


def check_norms(steps: Mapping, graph: Mapping, norm: str, c: Constraints) -> str | None:
    """exact_norm, no_degenerate_rows and norm_min on the exact values of every computed norm."""
    for name in norm_names_in(steps):
        stat = f"{name}.mean" if norm == "layernorm" else f"{name}.ms"
        root_name = f"{name}.std" if norm == "layernorm" else f"{name}.rms"
        src = graph[stat][0]
        if src not in steps:
            continue
        x, root = steps[src].rows, steps[root_name].rows
        for i, row in enumerate(x):
            if c.no_degenerate_rows:
                if degenerate(row, steps[stat].rows[i][0] if norm == "layernorm" else None):
                    return f"no_degenerate_rows: {src} row {i + 1} normalises to ±1 (or is constant)"
            if name in c.exact_norm and all(rat(e) is not None for e in row) and rat(root[i][0]) is None:
                return f"exact_norm: {root_name} row {i + 1} = {show(root[i][0])} is irrational"
            if c.norm_min and not at_least(root[i][0], c.norm_min):
                return f"norm_min: {root_name} row {i + 1} = {show(root[i][0])} < {c.norm_min}"
    return None


def heads_of(steps: Mapping, prefix: str = "") -> list[str]:
    """The heads of one sequence (`prefix`: a batch's `b1.`), as step-name stems: a decoder
    layer's cross-attention heads (`cross.h0`) too, so their softmax rows are as hand-workable."""
    from symblock.engine import names
    return sorted(s.head_prefix for s in map(names.parse, steps)
                  if s.prefix == prefix and s.kind in ("weights", "cross_weights") and not s.dropped)


def check_attention(steps: Mapping, graph: Mapping, c: Constraints, prefix: str = "") -> str | None:
    """integer_scores, score_range, scaled_range, softmax_distinct and softmax_weights, exactly,
    on one sequence's steps (`prefix`: a batch's `b1.`; the messages name its steps)."""
    from symblock.engine import exact, names
    if c.integer_scores:
        # with RoPE the integers are q, k and v: the rotated q and k (so the scores) are irrational
        rope = any(names.parse(n).kind == "q_rot" for n in steps)
        kinds = ("q", "k", "v") if rope else ("q", "k", "v", "scores")
        for name, v in steps.items():
            s = names.parse(name)
            if s.prefix == prefix and s.kind in kinds and not (s.dropped or s.grad):
                for i, row in enumerate(v.rows):
                    if any(rat(e) is None or rat(e).denominator != 1 for e in row):
                        return f"integer_scores: {name} row {i + 1} has a non-integer entry"
    for h in heads_of(steps, prefix):
        bounded = [(f"{h}.scores", "score_range", c.score_range),
                   (graph[f"{h}.weights"][0], "scaled_range", c.scaled_range)]
        for name, key, bounds in bounded:
            if bounds is None or name not in steps:
                continue
            for i, row in enumerate(steps[name].rows):
                for e in row:
                    if e is not exact.NEG_INF and not (at_least(e, bounds[0]) and at_most(e, bounds[1])):
                        return f"{key}: {name} row {i + 1} has {show(e)} outside [{bounds[0]}, {bounds[1]}]"
        src = graph[f"{h}.weights"][0]
        if c.softmax_distinct and src in steps:
            for i, row in enumerate(steps[src].rows):
                live = [e for e in row if e is not exact.NEG_INF]
                if any(equal(a, b) for a, b in itertools.combinations(live, 2)):
                    return (f"softmax_distinct: {src} row {i + 1} has two equal live entries "
                            f"[{', '.join(show(e) for e in live)}]")
        if c.softmax_weights and f"{h}.weights" in steps:
            lo, hi = c.softmax_weights
            for i, (row, inp) in enumerate(zip(steps[f"{h}.weights"].rows, steps[src].rows)):
                live = [w for w, s in zip(row, inp) if s is not exact.NEG_INF]
                for w in live if len(live) > 1 else ():
                    if not (at_least(w, lo) and at_most(w, hi)):
                        return f"softmax_weights: {h}.weights row {i + 1} has {show(w)} outside [{lo}, {hi}]"
    return None


def check_activation(steps: Mapping, c: Constraints, prefix: str = "") -> str | None:
    hidden = prefix + "ffn.hidden"
    if not c.relu_mixed or hidden not in steps:
        return None
    signs = [[sign(e) for e in row] for row in steps[hidden].rows]
    lines = []
    if c.relu_mixed in ("rows", "both"):
        lines += [(f"row {i + 1}", s) for i, s in enumerate(signs)]
    if c.relu_mixed in ("columns", "both"):
        lines += [(f"column {j + 1}", list(col)) for j, col in enumerate(zip(*signs))]
    for where, line in lines:
        if not (1 in line and -1 in line):
            return f"relu_mixed: {hidden} {where} has signs {line}, not both + and −"
    return None


# ---------------------------------------------------------------- Fractions, before the forward

def fractions(m) -> list | None:
    from flint import fmpq
    out = []
    for row in m.tolist():  # a spec's ExactMatrix: Fraction entries, exact.Real where irrational
        if not all(isinstance(e, Fraction) for e in row):
            return None
        out.append([fmpq(e.numerator, e.denominator) for e in row])
    return out


def mm(a: list, b: list) -> list:
    cols = list(zip(*b))
    return [[sum(x * y for x, y in zip(r, col)) for col in cols] for r in a]


def wants_attention(c: Constraints) -> bool:
    return bool(c.integer_scores or c.score_range or c.softmax_distinct or c.scaled_range or c.softmax_weights)


def attention_input(tensors: dict, probe) -> list | None:
    """The attention's input in Fractions when it is rational: X (Post-LN), or norm1(X) with a
    rational σ (Pre-LN); None otherwise (the exact checks decide)."""
    from flint import fmpq
    dims, opts = probe.dims, probe.options
    from symblock.engine import names
    given = [names.parse(s) for s in probe.given]  # a batch's b1.attn.q counts as attn.q
    if any(s.section == "attn" or (s.base in ("x", "norm1") and not s.dropped) for s in given) \
            or "X" not in tensors:
        return None
    X = [[fmpq(*Fraction(v).as_integer_ratio()) for v in row] for row in tensors["X"]]
    if opts.norm_position != "pre":
        return X
    gamma, beta = (param(tensors, probe, f"ln1.{p}") for p in ("gamma", "beta"))
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
    return rows


def param(tensors: dict, probe, name: str) -> list | None:
    from flint import fmpq
    if name in tensors:
        t = tensors[name]
        t = t if isinstance(t[0], (list, tuple)) else [t]
        return [[fmpq(*Fraction(v).as_integer_ratio()) for v in row] for row in t]
    return fractions(probe.params[name]) if name in probe.params else None


def scaled_cmp(s, t: Fraction, dk: int) -> int:
    """The sign of s − t·√dk for rational s, t (exact: squares compared when the signs agree)."""
    if dk == 1 or math.isqrt(dk) ** 2 == dk:
        v = s - t * math.isqrt(dk)
        return (v > 0) - (v < 0)
    sv = (s > 0) - (s < 0)
    tv = (t > 0) - (t < 0)
    if sv != tv or sv == 0:
        return (sv > tv) - (sv < tv)
    return sv * ((s * s > t * t * dk) - (s * s < t * t * dk))


def live_keys(i: int, n: int, causal: bool, pad) -> list[int]:
    """The keys query i attends to: not later ones under a causal mask, no padding key."""
    return [j for j in range(n) if not (causal and j > i) and not (pad and pad[j])]


def check_scores(A: list, tensors: dict, probe, c: Constraints, pad=None, prefix: str = "") -> str | None:
    """integer_scores, score_range, scaled_range, softmax_distinct and softmax_weights on the
    scores computed in Fractions from one sequence's attention input A (the weights in floats,
    with MARGIN); `pad` its key padding row, `prefix` its step prefix in a batch."""
    from flint import fmpq
    dims, opts = probe.dims, probe.options
    proj = {}
    for p in "QKV" if c.integer_scores else "QK":
        W = param(tensors, probe, f"W_{p}")
        if W is None:
            return None
        y = mm(A, W)
        b = param(tensors, probe, f"b_{p}") if opts.bias or f"b_{p}" in probe.params else None
        proj[p] = [[v + bj for v, bj in zip(row, b[0])] for row in y] if b is not None else y
    if c.integer_scores and any(v.q != 1 for m in proj.values() for row in m for v in row):
        return f"integer_scores: {prefix}attn.q, attn.k or attn.v has a non-integer entry"
    if opts.rope is not None:   # RoPE's cos and sin make the scores irrational: the exact checks decide
        return None
    dh = dims.d_head
    dk = dh if opts.attention_scale == "sqrt_dk" else 1
    for h in range(dims.heads):
        q = [row[h * dh:(h + 1) * dh] for row in proj["Q"]]
        g = h // dims.group   # grouped K/V heads: the K head query head h reads
        k = [row[g * dh:(g + 1) * dh] for row in proj["K"]]
        for i, row in enumerate(mm(q, [list(col) for col in zip(*k)])):
            live = [row[j] for j in live_keys(i, len(row), opts.causal, pad)]
            where = f"{prefix}attn.h{h}.scores row {i + 1}"
            if c.integer_scores and any(v.q != 1 for v in row):
                return f"integer_scores: {where} has a non-integer entry"
            if c.score_range and any(not fmpq(*c.score_range[0].as_integer_ratio()) <= v
                                     <= fmpq(*c.score_range[1].as_integer_ratio()) for v in row):
                return f"score_range: {where} = {[str(v) for v in row]} leaves [{c.score_range[0]}, {c.score_range[1]}]"
            if c.scaled_range:
                lo, hi = c.scaled_range
                bad = [v for v in live if scaled_cmp(Fraction(int(v.p), int(v.q)), lo, dk) < 0
                       or scaled_cmp(Fraction(int(v.p), int(v.q)), hi, dk) > 0]
                if bad:
                    x = Fraction(int(bad[0].p), int(bad[0].q))
                    shown = f"{x}/{math.isqrt(dk)} = {x / math.isqrt(dk)}" if math.isqrt(dk) ** 2 == dk \
                        else f"{x}/√{dk} ≈ {float(x) / math.sqrt(dk):.4g}"
                    return f"scaled_range: {where} has the softmax input {shown} outside [{lo}, {hi}]"
            if c.softmax_distinct and len(set(live)) < len(live):
                return f"softmax_distinct: {where} has two equal live scores {[str(v) for v in live]}"
            if c.softmax_weights and len(live) > 1:
                s = [float(v) / math.sqrt(dk) for v in live]
                top = max(s)
                e = [math.exp(x - top) for x in s]
                w = [x / sum(e) for x in e]
                lo, hi = (float(b) for b in c.softmax_weights)
                if min(w) < lo + MARGIN or max(w) > hi - MARGIN:
                    return (f"softmax_weights: {prefix}attn.h{h}.weights row {i + 1} ≈ {[round(x, 3) for x in w]} "
                            f"leaves [{c.softmax_weights[0]}, {c.softmax_weights[1]}]")
    return None


def static_checks(c: Constraints, dims, opts, source: str) -> None:
    """Constraints that no draw can change: fail before drawing."""
    from symblock.engine.steps import step_names
    if c.staged and c.staged[0] not in (known := step_names(dims, opts)):
        raise err(source, "random.staged.step", f"no step {c.staged[0]!r} in this block; "
                  + did_you_mean(c.staged[0], known) + "expected one of " + ", ".join(known))
    if c.exact_scale and opts.attention_scale != "none":
        d = dims.d_head
        if math.isqrt(d) ** 2 != d:
            what = f"d_k = {d}" if d * dims.heads != dims.d_model else f"d_k = d_model/heads = {dims.d_model}/{dims.heads} = {d}"
            raise err(source, "random.exact_scale", f"{what} is not a perfect square, so 1/sqrt(d_k) is "
                      "irrational; choose d_k (dims.d_k, or d_model/heads) in 1, 4, 9, 16, … "
                      "or block.attention_scale: none")
    if c.no_degenerate_rows and opts.norm == "layernorm" and dims.d_model <= 2:
        raise err(source, "random.no_degenerate_rows", f"with d_model = {dims.d_model} every LayerNorm row "
                  "normalises to ±1 (or has zero variance); use d_model >= 3")
    if c.no_degenerate_rows and opts.norm == "rmsnorm" and dims.d_model <= 1:
        raise err(source, "random.no_degenerate_rows", "with d_model = 1 every RMSNorm row normalises to ±1")
    if c.softmax_weights and c.softmax_weights[0] * 2 > 1 and dims.seq_len > 1:
        raise err(source, "random.softmax_weights", f"a row of two or more live weights sums to 1, so its "
                  f"smallest weight is at most 1/2, below the bound {c.softmax_weights[0]}")
