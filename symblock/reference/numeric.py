"""The same block in NumPy float64: an independent path to cross-check the exact engine.

Written from the conventions (docs/reference/conventions.md), not translated from the SymPy objects, so that a slip in one
shows up as a disagreement. Produces the same step names as the exact trace (steps.py decides
which exist): every computed step, and every given step (as given).

    >>> from symblock.engine.spec import load
    >>> forward(load("seed-post-ln"))["output"]  # float64 array, [[1, -1], [-1, 1], [1, -1]]
"""
from __future__ import annotations

import contextlib
import contextvars
import math
from typing import TYPE_CHECKING, Callable

import numpy as np

from symblock.engine import steps
from symblock.reference import numeric_rope, numeric_tiles
from symblock.errors import UsageError, excerpt

if TYPE_CHECKING:
    from symblock.engine.spec import BlockSpec


def forward(spec: BlockSpec) -> dict[str, np.ndarray]:
    """Every computed or given step of `spec`, forward order: name -> float64 2-D array.
    A batch works each sequence in turn, its steps prefixed `b0.`, `b1.`, …"""
    dims, opts = spec.dims, spec.options
    t = _Trace(spec)
    for prefix, X, pad in spec.sequences():
        t.prefix, t.pad = prefix, None if pad is None else np.array(pad, dtype=bool)
        sequence(t, X)
    return {name: t.values[name] for name in steps.step_names(dims, opts) if name in t.values}


def sequence(t: "_Trace", X) -> None:
    opts = t.opts
    x = t("x", lambda: _floats(X))
    if opts.norm_position == "pre":
        attn = attention(t, norm(t, "norm1", x, "ln1"))
        r1 = t("resid1", lambda: x + attn)
        mlp = ffn(t, norm(t, "norm2", r1, "ln2"))
        r2 = t("resid2", lambda: r1 + mlp)
        last = norm(t, "norm_final", r2, "ln_final") if opts.final_norm else r2
    else:
        attn = attention(t, x)
        r1 = t("resid1", lambda: x + attn)
        h1 = norm(t, "norm1", r1, "ln1")
        mlp = ffn(t, h1)
        r2 = t("resid2", lambda: h1 + mlp)
        last = norm(t, "norm2", r2, "ln2")
    t("output", lambda: last.copy())


class _Trace:
    """Records steps by name. A given step keeps the spec's value; a step cut off by a given one
    is never computed (its inputs, and the weights they need, may be missing): it reads as None."""

    def __init__(self, spec: BlockSpec) -> None:
        self.opts, self.dims = spec.options, spec.dims
        self.eps = float(spec.options.eps)
        self.params = {name: _floats(m) for name, m in spec.params.items()}
        self.values = {name: _floats(m) for name, m in spec.given.items()}
        self.computed = set(steps.computed_steps(spec.dims, spec.options, set(spec.given)))
        self.masks = {name: _floats(m) for name, m in spec.dropout_masks.items()}
        self.keep = 1.0 / (1.0 - float(spec.dropout_p))
        self.prefix, self.pad = "", None
        self.positions = spec.position_list()

    def __call__(self, name: str, compute: Callable[[], np.ndarray]) -> np.ndarray | None:
        """Step `name` of the current sequence; with a dropout mask, what its readers get is
        `<name>.dropped`: mask ⊙ value / (1 − p) (torch's inverted dropout)."""
        name = self.prefix + name
        if name in self.computed:
            self.values[name] = np.asarray(compute(), dtype=np.float64)
        if name not in self.masks:
            return self.values.get(name)
        dropped = name + steps.DROPPED
        if dropped in self.computed:
            self.values[dropped] = self.masks[name] * self.values[name] * self.keep
        return self.values.get(dropped)

    def p(self, name: str) -> np.ndarray | None:
        return self.params.get(name)


_NUDGED = contextvars.ContextVar("nudged", default=False)
NUDGE = 2.0**-50   # four units in the last place of a double


@contextlib.contextmanager
def nudged():
    """Within it, every value the float paths read from a spec moves by ±4 units in its last place
    (a fixed pattern of signs): run again so, a path shows how far float64's own rounding can move
    each step (verify.float_noise)."""
    token = _NUDGED.set(True)
    try:
        yield
    finally:
        _NUDGED.reset(token)


def nudge(a: np.ndarray) -> np.ndarray:
    """`a` as read from a spec: itself, or within `nudged` moved by ±NUDGE relatively."""
    if not _NUDGED.get():
        return a
    signs = np.random.default_rng(a.size).choice((-1.0, 1.0), size=a.shape)
    return a * (1.0 + NUDGE * signs)


Trace = _Trace  # public: numeric_cross.py records a decoder layer's steps with it


def _floats(m) -> np.ndarray:
    """An exact SymPy matrix as float64 (-oo, allowed in a given mask, becomes -inf). An entry
    beyond float64's range is a refusal (exit 2): the exact engine holds it, this check cannot."""
    try:
        return nudge(np.array([[float(v) for v in row] for row in m.tolist()], dtype=np.float64))
    except OverflowError:
        big = next(v for row in m.tolist() for v in row if not _fits(v))
        raise UsageError(f"an entry ({excerpt(big)}) is beyond float64's range (about ±1.8e308), so the "
                         "NumPy cross-check cannot hold it; the exact commands (forward, worksheet) "
                         "work it exactly") from None


def _fits(v) -> bool:
    try:
        float(v)
        return True
    except OverflowError:
        return False


def linear(x: np.ndarray, W: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """Row vectors, math layout: x W + b (an absent bias means no bias)."""
    return x @ W if b is None else x @ W + b


# ---------------------------------------------------------------- norms

def norm(t: _Trace, name: str, x: np.ndarray, ln: str) -> np.ndarray:
    """LayerNorm (population variance, eps inside the sqrt) or RMSNorm, with its row statistics."""
    if t.opts.norm == "layernorm":
        # Shift by the first entry: a constant row then has its mean exactly, so its variance is
        # exactly 0 (as in the exact engine) instead of rounding noise.
        mean = t(f"{name}.mean", lambda: x[:, :1] + np.mean(x - x[:, :1], axis=1, keepdims=True))
        var = t(f"{name}.var", lambda: np.mean((x - mean) ** 2, axis=1, keepdims=True))
        std = t(f"{name}.std", lambda: np.sqrt(var + t.eps))
        return t(name, lambda: _affine(_divide(name, x - mean, std, "std", "variance"),
                                       t.p(f"{ln}.gamma"), t.p(f"{ln}.beta")))
    ms = t(f"{name}.ms", lambda: np.mean(x ** 2, axis=1, keepdims=True))
    rms = t(f"{name}.rms", lambda: np.sqrt(ms + t.eps))
    return t(name, lambda: _affine(_divide(name, x, rms, "rms", "mean square"),
                                   t.p(f"{ln}.gamma"), None))


def _affine(x: np.ndarray, gamma: np.ndarray | None, beta: np.ndarray | None) -> np.ndarray:
    """Elementwise x · γ + β (γ defaults to 1, β to 0)."""
    y = x if gamma is None else x * gamma
    return y if beta is None else y + beta


def _divide(name: str, num: np.ndarray, den: np.ndarray, stat: str, what: str) -> np.ndarray:
    """num / den per row, refusing a zero denominator with the step and row named (the exact
    engine reports the same row as a spec error; a NaN here would only hide it)."""
    rows = np.flatnonzero(den[:, 0] == 0) + 1  # counted from 1, as the engine's labels
    if rows.size:
        which = f"row {rows[0]} has" if rows.size == 1 else f"rows {', '.join(map(str, rows))} have"
        raise ZeroDivisionError(f"{name}: {which} zero {what} in float64 and eps = 0 "
                                f"({stat} = 0): cannot normalise")
    return num / den


# ---------------------------------------------------------------- attention

def attention(t: _Trace, x: np.ndarray) -> np.ndarray:
    """Multi-head self-attention: heads read contiguous column blocks, concatenated in order."""
    q = t("attn.q", lambda: linear(x, t.p("W_Q"), t.p("b_Q")))
    k = t("attn.k", lambda: linear(x, t.p("W_K"), t.p("b_K")))
    v = t("attn.v", lambda: linear(x, t.p("W_V"), t.p("b_V")))
    if t.opts.rope:
        d, pos = t.dims, t.positions
        q = t("attn.q_rot", lambda: numeric_rope.rotate(q, d.heads, d.d_k, pos, t.opts.rope))
        k = t("attn.k_rot", lambda: numeric_rope.rotate(k, d.kv_heads, d.d_k, pos, t.opts.rope))
    outs = [head(t, h, q, k, v) for h in range(t.dims.heads)]
    heads = t("attn.concat", lambda: np.concatenate(outs, axis=1)) if t.dims.heads > 1 else outs[0]
    if t.opts.out_proj:
        return t("attn.out", lambda: linear(heads, t.p("W_O"), t.p("b_O")))
    return t("attn.out", lambda: heads.copy())


def head(t: _Trace, h: int, q, k, v) -> np.ndarray:
    """One head: softmax(mask(Q_h K_h^T / sqrt(d_k))) V_h, each stage its own step. Q_h, K_h
    are d_k columns wide, V_h d_v."""
    dk, dv = t.dims.d_k, t.dims.d_v
    g = numeric_rope.kv_head(h, t.dims.heads, t.dims.kv_heads)
    cols, p = slice(h * dk, (h + 1) * dk), f"attn.h{h}"
    kcols, vcols = slice(g * dk, (g + 1) * dk), slice(g * dv, (g + 1) * dv)
    scores = t(f"{p}.scores", lambda: q[:, cols] @ k[:, kcols].T)
    scaled = scores
    if t.opts.attention_scale == "sqrt_dk":
        scaled = t(f"{p}.scaled", lambda: scores / math.sqrt(dk))
    masked = scaled
    if t.opts.causal or t.opts.padding:
        masked = t(f"{p}.masked", lambda: mask(scaled, t.opts.causal, t.pad))
    weights = t(f"{p}.weights", lambda: softmax(masked))
    out = t(f"{p}.out", lambda: weights @ v[:, vcols])
    if t.opts.attention_tiles:
        numeric_tiles.tiles(t, h, masked, None if v is None else v[:, vcols])
    return out


def causal_mask(s: np.ndarray) -> np.ndarray:
    """-inf where j > i: position i attends only to itself and earlier positions."""
    return np.where(np.triu(np.ones(s.shape, dtype=bool), k=1), -np.inf, s)


def mask(s: np.ndarray, causal: bool, pad: np.ndarray | None) -> np.ndarray:
    """-inf where j > i (causal) and in every column of a padding key (pad[j] true)."""
    out = causal_mask(s) if causal else s.copy()
    if pad is not None:
        out[:, pad] = -np.inf
    return out


def softmax(s: np.ndarray) -> np.ndarray:
    """Row softmax, stable: subtracting the row max changes nothing exactly but keeps exp finite;
    a -inf entry gets weight exactly 0."""
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------- feed-forward

_erf = np.vectorize(math.erf, otypes=[np.float64])


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x Φ(x) = x/2 (1 + erf(x/√2)) (torch's default)."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """The tanh approximation of GELU (GPT-2's, torch's approximate='tanh')."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1/(1+e^-x), written with e^-|x| so neither branch overflows."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def silu(x: np.ndarray) -> np.ndarray:
    return x * sigmoid(x)


# A gated activation applies its base activation to the hidden layer, then multiplies by the gate.
ACTIVATIONS = {"relu": relu, "gelu": gelu, "gelu_tanh": gelu_tanh, "silu": silu,
               "swiglu": silu, "geglu": gelu}


def ffn(t: _Trace, x: np.ndarray) -> np.ndarray:
    """act(x W_1 + b_1) W_2 + b_2; gated: (act(x W_1 + b_1) ⊙ (x W_3 + b_3)) W_2 + b_2."""
    act = ACTIVATIONS[t.opts.activation]
    hidden = t("ffn.hidden", lambda: linear(x, t.p("W_1"), t.p("b_1")))
    if t.opts.gated:
        gate = t("ffn.gate", lambda: linear(x, t.p("W_3"), t.p("b_3")))
        a = t("ffn.act", lambda: act(hidden) * gate)
    else:
        a = t("ffn.act", lambda: act(hidden))
    return t("ffn.out", lambda: linear(a, t.p("W_2"), t.p("b_2")))
