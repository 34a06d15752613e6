"""The block's steps in float64 through real `torch.nn` modules: the semantic cross-check.

NumPy (`numeric.py`) proves our arithmetic; this module proves our *semantics*: that the block
the conventions describe is the block PyTorch users run. It is independent code (it never reads the
SymPy trace) and produces the same step names as the exact engine and `numeric.forward`:

    >>> from symblock import spec, torch_ref
    >>> steps = torch_ref.forward(spec.load("seed-post-ln"))   # {step name: float64 array}

How each step is obtained:

- norms: `nn.LayerNorm(d, eps=ε)` / `nn.RMSNorm(d, eps=ε)` loaded with γ (and β); ε is always
  passed explicitly (`nn.RMSNorm(eps=None)` would add the dtype's machine epsilon, not 0). The
  per-row statistics (`.mean .var .std`, `.ms .rms`) are not exposed by the modules and are
  computed with tensor ops: `std = sqrt(var + ε)`, `rms = sqrt(ms + ε)`. When a statistic is
  given, the norm is composed from the statistics instead (a module cannot take them).
- attention: one `nn.MultiheadAttention(d, heads, bias=…, batch_first=True)` holds the weights:
  `in_proj_weight` stacks W_Q, W_K, W_V in (out, in) layout, `in_proj_bias` stacks the biases,
  `out_proj` is W_O. `attn.q/k/v` are `F.linear` with the `in_proj` pieces; the per-head
  scores/scaled/masked/weights/out are explicit; `attn.out` is `out_proj`. Then the whole
  module is run (`need_weights=True, average_attn_weights=False`) and its output and per-head
  attention weights must agree with the captured steps (`ModuleMismatch` otherwise), so the
  module really is the reference. Mappings: `attention_scale: none` pre-scales the Q piece of
  `in_proj` by sqrt(d_head) (MHA always divides by sqrt(d_head)); `out_proj: false` loads an
  identity `out_proj` with zero bias; the causal mask is a boolean `attn_mask` with True =
  masked (j > i), the opposite of `scaled_dot_product_attention`'s boolean convention.
- FFN: `nn.Linear` (bias=False when the spec has no bias vector), `F.relu`,
  `F.gelu(approximate="none" | "tanh")`, `F.silu`; gated: `act(hidden) * gate`.

`encoder_layer_output` runs a real `nn.TransformerEncoderLayer` where the configuration maps onto
one. `import symblock` never imports torch: it is imported inside the functions here, and a
missing torch raises `TorchNotInstalled` (an `ImportError`).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from symblock.engine import parameters
from symblock.engine.steps import (DROPPED, attention_steps, batch_index, batch_prefixes, computed_steps,
                                   step_names)
from symblock.reference import torch_tiles
from symblock.reference.torch_attention import ModuleMismatch, check_attention  # noqa: F401

if TYPE_CHECKING:
    from symblock.engine.spec import BlockSpec


__all__ = ["forward", "encoder_layer_output", "encoder_layer_unsupported",
           "TorchNotInstalled", "ModuleMismatch", "ZeroVarianceError"]


class TorchNotInstalled(ImportError):
    """torch is an optional extra: `pip install symblock[torch]`."""


class ZeroVarianceError(ZeroDivisionError):
    """A norm divides by a zero standard deviation / RMS (a constant row with ε = 0)."""


def _torch():
    try:
        import torch
    except ImportError as e:
        raise TorchNotInstalled("torch is not installed; pip install symblock[torch]") from e
    return torch


def _float(v) -> float:
    """A spec entry (Fraction or exact.Real: correctly rounded) or a SymPy number as a float."""
    return float(v.evalf(30)) if hasattr(v, "evalf") else float(v)


def _to_float(matrix) -> np.ndarray:
    """An exact spec matrix (ExactMatrix or SymPy; entries may be -oo in a given masked step) as float64; a float
    array (a stack's hidden state, reference/numeric_model.py) as it is."""
    if isinstance(matrix, np.ndarray):
        return matrix.astype(np.float64)
    rows, cols = matrix.shape
    return np.array([[_float(matrix[i, j]) for j in range(cols)] for i in range(rows)],
                    dtype=np.float64).reshape(rows, cols)


# ---------------------------------------------------------------- forward

def forward(spec: BlockSpec) -> dict[str, np.ndarray]:
    """Every computed or given step of `spec`, in forward order, as float64 (rows × cols) arrays.

    Same contract as `numeric.forward`: given steps keep their given values (and cut off what
    only fed them), masked entries hold -inf. Raises `ModuleMismatch` if the real
    `nn.MultiheadAttention` disagrees with the captured attention steps, `ZeroVarianceError`
    for a zero standard deviation / RMS (ε = 0)."""
    torch = _torch()
    with torch.no_grad():
        return _Run(spec, torch).run()


class _Run:
    """One forward pass; `put` records a step unless it is given or not needed. A batch works
    each sequence in turn (`prefix` b0., b1., …); the attention module then runs on the whole
    batch at once, with torch's `key_padding_mask`."""

    def __init__(self, spec: BlockSpec, torch: Any) -> None:
        self.spec, self.torch = spec, torch
        self.nn, self.F = torch.nn, torch.nn.functional
        self.dims, self.opts = spec.dims, spec.options
        self.eps = float(self.opts.eps)
        self.given = {name: self.tensor(m) for name, m in spec.given.items()}
        self.todo = set(computed_steps(self.dims, self.opts, set(spec.given)))
        self.masks = {name: self.tensor(m) for name, m in spec.dropout_masks.items()}
        self.keep = 1.0 / (1.0 - float(spec.dropout_p))
        self.vals: dict[str, Any] = {}
        self._mha, self._q_scale = None, 1.0
        self.prefix, self.sources = "", []
        # nn.MultiheadAttention projects to d_model/heads per head; other widths: SDPA per head
        d, h = self.dims.d_model, self.dims.heads
        self.standard = (d % h == 0 and self.dims.d_k == self.dims.d_v == d // h
                         and self.dims.kv_heads == h and not self.opts.rope)  # MHA: no RoPE, no groups

    # -- helpers
    def tensor(self, matrix):
        return self.torch.from_numpy(_to_float(matrix))

    def __getitem__(self, name: str):
        return self.vals[self.prefix + name]

    def put(self, name: str, compute: Callable[[], Any]) -> str:
        """Record step `name` of the current sequence; returns the name its readers read
        (`<name>.dropped` when a dropout mask sits on it: mask ⊙ value / (1 − p))."""
        full = self.prefix + name
        if full in self.given:
            self.vals[full] = self.given[full]
        elif full in self.todo:
            value = compute()
            if value.dtype != self.torch.float64 or value.dim() != 2:
                raise TypeError(f"{full}: expected a 2-D float64 tensor, got {value.dtype} "
                                f"{tuple(value.shape)}")
            self.vals[full] = value
        if full not in self.masks:
            return name
        dropped = full + DROPPED
        if dropped in self.given:
            self.vals[dropped] = self.given[dropped]
        elif dropped in self.todo:
            self.vals[dropped] = self.masks[full] * self.vals[full] * self.keep
        return name + DROPPED

    def param(self, name: str):
        """A parameter in torch layout: weights (out, in), vectors 1-D; None when absent."""
        m = self.spec.params.get(name)
        if m is None:
            return None
        t = self.tensor(m)
        return t[0] if parameters.parse(name).vector else t.T.contiguous()

    def linear(self, w: str, b: str):
        weight, bias = self.param(w), self.param(b)
        out_f, in_f = weight.shape
        lin = self.nn.Linear(in_f, out_f, bias=bias is not None, dtype=self.torch.float64)
        lin.weight.copy_(weight)
        if bias is not None:
            lin.bias.copy_(bias)
        return lin

    # -- the block, as the conventions draw it
    def run(self) -> dict[str, np.ndarray]:
        for prefix, X, pad in self.spec.sequences():
            self.prefix = prefix
            self.sequence(X)
        self.prefix = ""
        if all(p + s in self.todo for p in batch_prefixes(self.dims)
               for s in attention_steps(self.dims, self.opts)):
            check_attention(self)
        return {name: self.vals[name].detach().numpy().astype(np.float64, copy=True)
                for name in step_names(self.dims, self.opts) if name in self.vals}

    def sequence(self, X) -> None:
        o = self.opts
        x = self.put("x", lambda: self.tensor(X))
        if o.norm_position == "pre":
            a = self.attention(self.norm("norm1", x, "ln1"))
            self.put("resid1", lambda: self[x] + self[a])
            f = self.ffn(self.norm("norm2", "resid1", "ln2"))
            self.put("resid2", lambda: self["resid1"] + self[f])
            last = self.norm("norm_final", "resid2", "ln_final") if o.final_norm else "resid2"
        else:
            a = self.attention(x)
            self.put("resid1", lambda: self[x] + self[a])
            h1 = self.norm("norm1", "resid1", "ln1")
            f = self.ffn(h1)
            self.put("resid2", lambda: self[h1] + self[f])
            last = self.norm("norm2", "resid2", "ln2")
        self.put("output", lambda: self[last])

    def norm(self, name: str, src: str, ln: str) -> str:
        torch, eps, d = self.torch, self.eps, self.dims.d_model
        if self.opts.norm == "layernorm":
            mean, var, std = f"{name}.mean", f"{name}.var", f"{name}.std"
            # Shifted by the row's first entry, a constant row gets its mean exactly, hence
            # variance exactly 0 (a clear error with ε = 0) rather than rounding noise.
            self.put(mean, lambda: self[src][:, :1]
                     + (self[src] - self[src][:, :1]).mean(dim=-1, keepdim=True))
            self.put(var, lambda: ((self[src] - self[mean]) ** 2).mean(dim=-1, keepdim=True))
            self.put(std, lambda: torch.sqrt(self[var] + eps))
            stats, denom = (mean, std), std

            def module():
                m = self.nn.LayerNorm(d, eps=eps, dtype=torch.float64)
                m.weight.copy_(self.param(f"{ln}.gamma"))
                m.bias.copy_(self.param(f"{ln}.beta"))
                return m(self[src])

            def composed():
                return ((self[src] - self[mean]) / self[std] * self.param(f"{ln}.gamma")
                        + self.param(f"{ln}.beta"))
        else:
            ms, rms = f"{name}.ms", f"{name}.rms"
            self.put(ms, lambda: (self[src] ** 2).mean(dim=-1, keepdim=True))
            self.put(rms, lambda: torch.sqrt(self[ms] + eps))
            stats, denom = (rms,), rms

            def module():
                m = self.nn.RMSNorm(d, eps=eps, dtype=torch.float64)  # eps=None would be 2.2e-16
                m.weight.copy_(self.param(f"{ln}.gamma"))
                return m(self[src])

            def composed():
                return self[src] / self[rms] * self.param(f"{ln}.gamma")

        def compute():
            zero = (self[denom] == 0).flatten().nonzero().flatten().tolist()
            if zero:
                what = "standard deviation" if self.opts.norm == "layernorm" else "RMS"
                raise ZeroVarianceError(f"{name}: row {zero[0] + 1} has {what} 0 in float64 (ε = {self.opts.eps}); "
                                        "the norm would divide by zero")
            return composed() if any(self.prefix + s in self.given for s in stats) else module()

        self.put(name, compute)
        return name

    def mha(self):
        """The `nn.MultiheadAttention` holding this block's attention weights (built once;
        standard widths d_k = d_v = d_model/heads only)."""
        if self._mha is not None:
            return self._mha
        torch, d, dh = self.torch, self.dims.d_model, self.dims.d_head
        p = {n: self.param(n) for n in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")}
        bias = any(p[b] is not None for b in ("b_Q", "b_K", "b_V", "b_O"))
        mha = self.nn.MultiheadAttention(d, self.dims.heads, bias=bias, batch_first=True,
                                         dtype=torch.float64).eval()
        # MHA always divides the scores by sqrt(d_head): without scaling, pre-scale the Q piece.
        c = 1.0 if self.opts.attention_scale == "sqrt_dk" else math.sqrt(dh)
        zeros_w, zeros_b = torch.zeros(d, d, dtype=torch.float64), torch.zeros(d, dtype=torch.float64)
        w = [p[n] if p[n] is not None else zeros_w for n in ("W_Q", "W_K", "W_V")]
        mha.in_proj_weight.copy_(torch.cat([w[0] * c, w[1], w[2]]))
        if bias:
            b = [p[n] if p[n] is not None else zeros_b for n in ("b_Q", "b_K", "b_V")]
            mha.in_proj_bias.copy_(torch.cat([b[0] * c, b[1], b[2]]))
        if self.opts.out_proj:
            mha.out_proj.weight.copy_(p["W_O"] if p["W_O"] is not None else zeros_w)
        else:  # no output projection: identity, zero bias
            mha.out_proj.weight.copy_(torch.eye(d, dtype=torch.float64))
        if bias:
            mha.out_proj.bias.copy_(p["b_O"] if p["b_O"] is not None and self.opts.out_proj
                                    else zeros_b)
        self._mha, self._q_scale = mha, c
        return mha

    def causal_mask(self):
        n = self.dims.seq_len
        # nn.MultiheadAttention's boolean attn_mask: True = masked (not allowed to attend).
        return self.torch.triu(self.torch.ones(n, n, dtype=self.torch.bool), diagonal=1)

    def padding_mask(self):
        """torch's key_padding_mask, (batch, seq_len): True = a padding key."""
        rows = self.spec.key_padding_mask
        return None if not rows else self.torch.tensor([list(r) for r in rows], dtype=self.torch.bool)

    def mask_scores(self, s):
        """−∞ where a causal or padding mask forbids attending (the same masks the module gets)."""
        if self.opts.causal:
            s = s.masked_fill(self.causal_mask(), float("-inf"))
        pad = self.padding_mask()
        if pad is not None:
            s = s.masked_fill(pad[batch_index(self.prefix + "x")].unsqueeze(0), float("-inf"))
        return s

    def projection(self, i: int, src: str):
        F, d = self.F, self.dims.d_model

        def compute():
            if not self.standard:
                return self.linear(f"W_{'QKV'[i]}", f"b_{'QKV'[i]}")(self[src])
            mha = self.mha()
            rows = slice(i * d, (i + 1) * d)
            b = None if mha.in_proj_bias is None else mha.in_proj_bias[rows]
            out = F.linear(self[src], mha.in_proj_weight[rows], b)
            return out / self._q_scale if i == 0 and self._q_scale != 1.0 else out
        return compute

    def attention(self, src: str) -> str:
        torch, o = self.torch, self.opts
        dk, dv, heads = self.dims.d_k, self.dims.d_v, self.dims.heads
        self.sources.append(self.prefix + src)
        for i, p in enumerate("qkv"):
            self.put(f"attn.{p}", self.projection(i, src))
        q, k = "attn.q", "attn.k"
        if o.rope:
            from symblock.reference import torch_rope
            pos, kv = self.spec.position_list(), self.dims.kv_heads
            q = self.put("attn.q_rot", lambda: torch_rope.rotate(torch, self["attn.q"], heads, dk, pos, o.rope))
            k = self.put("attn.k_rot", lambda: torch_rope.rotate(torch, self["attn.k"], kv, dk, pos, o.rope))
        outs = []
        for h in range(heads):
            g = h // self.dims.group
            cols, kcols, vcols = slice(h * dk, (h + 1) * dk), slice(g * dk, (g + 1) * dk), slice(g * dv, (g + 1) * dv)
            prev = self.put(f"attn.h{h}.scores",
                            lambda cols=cols, kcols=kcols: self[q][:, cols] @ self[k][:, kcols].T)
            if o.attention_scale != "none":
                prev = self.put(f"attn.h{h}.scaled", lambda prev=prev: self[prev] / math.sqrt(dk))
            if o.causal or o.padding:
                prev = self.put(f"attn.h{h}.masked", lambda prev=prev: self.mask_scores(self[prev]))
            wts = self.put(f"attn.h{h}.weights", lambda prev=prev: torch.softmax(self[prev], dim=-1))
            outs.append(self.put(f"attn.h{h}.out",
                                 lambda wts=wts, vcols=vcols: self[wts] @ self["attn.v"][:, vcols]))
            if o.attention_tiles:
                torch_tiles.tiles(self, h, prev, vcols)
        heads_out = outs[0]
        if heads > 1:
            heads_out = self.put("attn.concat", lambda: torch.cat([self[n] for n in outs], dim=-1))

        def out():
            if not o.out_proj:
                return self[heads_out]
            return self.mha().out_proj(self[heads_out]) if self.standard \
                else self.linear("W_O", "b_O")(self[heads_out])
        return self.put("attn.out", out)

    def ffn(self, src: str) -> str:
        F, act = self.F, self.opts.activation
        self.put("ffn.hidden", lambda: self.linear("W_1", "b_1")(self[src]))
        if self.opts.gated:
            self.put("ffn.gate", lambda: self.linear("W_3", "b_3")(self[src]))
        fn = {"relu": F.relu, "gelu": lambda t: F.gelu(t, approximate="none"),
              "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "silu": F.silu,
              "swiglu": F.silu, "geglu": lambda t: F.gelu(t, approximate="none")}[act]
        if self.opts.gated:
            a = self.put("ffn.act", lambda: fn(self["ffn.hidden"]) * self["ffn.gate"])
        else:
            a = self.put("ffn.act", lambda: fn(self["ffn.hidden"]))
        return self.put("ffn.out", lambda: self.linear("W_2", "b_2")(self[a]))


# ---------------------------------------------------------------- nn.TransformerEncoderLayer

def encoder_layer_unsupported(spec: BlockSpec) -> str | None:
    """Why `nn.TransformerEncoderLayer` cannot run this spec's block, or None when it can."""
    o = spec.options
    reasons = [
        (bool(spec.given), "some steps are given"),
        (any(X is None for _, X, _ in spec.sequences()), "the input x is given"),
        (o.norm != "layernorm", "the layer only has LayerNorm"),
        (o.activation not in ("relu", "gelu"), "the layer only has relu or (erf) gelu"),
        (o.attention_scale != "sqrt_dk", "the layer always scales scores by 1/sqrt(d_head)"),
        (not o.out_proj, "the layer always has an output projection"),
        (o.final_norm, "the layer has no final norm"),
        (spec.dims.d_k != spec.dims.d_model // spec.dims.heads or spec.dims.d_k != spec.dims.d_v
         or spec.dims.d_model % spec.dims.heads, "the layer projects to d_model/heads per head"),
        (bool(spec.dropout_masks), "the layer draws its own dropout masks"),
        (o.rope is not None, "the layer has no rotary positions"),
        (spec.dims.kv_heads != spec.dims.heads, "the layer has one K/V head per query head"),
    ]
    return next((why for bad, why in reasons if bad), None)


def encoder_layer_output(spec: BlockSpec, *, fast_path: bool = False) -> np.ndarray | None:
    """The block's output computed by a real `nn.TransformerEncoderLayer`, or None when the
    configuration does not map onto one (`encoder_layer_unsupported` says why).

    The layer is `TransformerEncoderLayer(d_model, heads, d_ff, dropout=0,
    activation="relu" | "gelu", layer_norm_eps=ε, batch_first=True, norm_first=pre,
    bias=…)` in eval mode with the spec's weights; `bias=False` (which also drops the
    LayerNorm β) is used when the spec has no bias vector and every β is zero, otherwise
    `bias=True` with absent biases loaded as zeros. A causal block passes a boolean
    `src_mask` (True = masked).

    `fast_path=False` runs with autograd enabled (the parameters require grad), which keeps
    torch on the module-by-module ("slow") path. `fast_path=True` runs under `torch.no_grad()`,
    where torch takes the fused kernel `torch._transformer_encoder_layer_fwd` when the layer
    has biases (`bias=True`) and an even number of heads; otherwise torch silently falls back
    to the slow path (with `bias=False` or odd heads the fast path cannot be triggered).
    A constant row with ε = 0 comes out as NaN here (torch's own behaviour); `forward` raises
    `ZeroVarianceError` for it instead."""
    if encoder_layer_unsupported(spec) is not None:
        return None
    torch = _torch()
    nn = torch.nn
    o, dims = spec.options, spec.dims
    d, f64 = dims.d_model, torch.float64

    def param(name: str, shape: tuple[int, ...]):
        m = spec.params.get(name)
        if m is None:
            return torch.zeros(shape, dtype=f64)
        t = torch.from_numpy(_to_float(m))
        return t[0] if parameters.parse(name).vector else t.T.contiguous()

    biases = ("b_Q", "b_K", "b_V", "b_O", "b_1", "b_2")
    betas = [spec.params.get(f"{ln}.beta") for ln in ("ln1", "ln2")]
    bias = (any(spec.params.get(b) is not None for b in biases)
            or any(b is not None and any(v != 0 for v in b) for b in betas))
    layer = nn.TransformerEncoderLayer(
        d, dims.heads, dims.d_ff, dropout=0.0, activation=o.activation,
        layer_norm_eps=float(o.eps), batch_first=True, norm_first=o.norm_position == "pre",
        bias=bias, dtype=f64).eval()
    with torch.no_grad():
        sa = layer.self_attn
        sa.in_proj_weight.copy_(torch.cat([param(w, (d, d)) for w in ("W_Q", "W_K", "W_V")]))
        sa.out_proj.weight.copy_(param("W_O", (d, d)))
        layer.linear1.weight.copy_(param("W_1", (dims.d_ff, d)))
        layer.linear2.weight.copy_(param("W_2", (d, dims.d_ff)))
        layer.norm1.weight.copy_(param("ln1.gamma", (d,)))
        layer.norm2.weight.copy_(param("ln2.gamma", (d,)))
        if bias:
            sa.in_proj_bias.copy_(torch.cat([param(b, (d,)) for b in ("b_Q", "b_K", "b_V")]))
            sa.out_proj.bias.copy_(param("b_O", (d,)))
            layer.linear1.bias.copy_(param("b_1", (dims.d_ff,)))
            layer.linear2.bias.copy_(param("b_2", (d,)))
            layer.norm1.bias.copy_(param("ln1.beta", (d,)))
            layer.norm2.bias.copy_(param("ln2.beta", (d,)))
    seqs = spec.sequences()
    x = torch.stack([torch.from_numpy(_to_float(X)) for _, X, _ in seqs])
    n = dims.seq_len
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1) if o.causal else None
    pad = torch.tensor([list(p) for _, _, p in seqs]) if spec.key_padding_mask else None
    if fast_path:  # (with a padding mask the fused kernel returns 0 at padded positions)
        with torch.no_grad():
            out = layer(x, src_mask=mask, src_key_padding_mask=pad)
    else:
        with torch.enable_grad():
            out = layer(x, src_mask=mask, src_key_padding_mask=pad)
    out = out.detach().numpy().astype(np.float64, copy=True)
    return out if dims.batch else out[0]
