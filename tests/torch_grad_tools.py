"""The block written directly in torch with autograd: the independent reference every gradient
test compares with (tests/calculus/test_grad.py, tests/sheets/test_worksheet_backprop.py)."""
from __future__ import annotations

import math

import sympy
import torch

F = torch.nn.functional


def _t(m):
    return torch.tensor([[float(sympy.N(e, 30)) for e in row] for row in m.tolist()], dtype=torch.float64)


def torch_grads(s, loss: str, target=None):
    """The block written directly in torch (functional ops, torch's own LayerNorm/RMSNorm and
    scaled_dot_product_attention), autograd to every parameter, X and the module-level steps.
    A given step is a constant tensor, as in the exact engine. A batch runs each sequence with
    its step prefix (b0., b1.); a key padding mask and fixed dropout masks as torch applies them."""
    o, d = s.options, s.dims
    leaves = {k: _t(v).requires_grad_() for k, v in s.params.items()}
    given = {k: _t(v) for k, v in s.given.items()}
    for prefix, X, _ in s.sequences():
        if X is not None:
            leaves[f"{prefix}X"] = _t(X).requires_grad_()
    steps = {}
    keep = 1 / (1 - float(s.dropout_p))
    prefix = ""

    def put(name, fn):
        name = prefix + name
        v = given[name] if name in given else fn()
        if v.requires_grad:
            v.retain_grad()
        steps[name] = v
        if name in s.dropout_masks:  # <name>.dropped, what the readers get
            dropped = name + ".dropped"
            v = given[dropped] if dropped in given else v * _t(s.dropout_masks[name]) * keep
            if v.requires_grad:
                v.retain_grad()
            steps[dropped] = v
        return v

    def lin(x, w, b):
        y = x @ leaves[w]
        return y + leaves[b] if b in leaves else y

    def norm(name, x, ln):
        g = leaves[f"{ln}.gamma"].reshape(-1)
        if o.norm == "layernorm":
            fn = lambda: F.layer_norm(x, (d.d_model,), g, leaves[f"{ln}.beta"].reshape(-1), float(o.eps))
        else:
            fn = lambda: F.rms_norm(x, (d.d_model,), g, float(o.eps))
        return put(name, fn)

    def attention(x, pad):
        if prefix + "attn.out" in given:
            return put("attn.out", None)
        q, k, v = (put(f"attn.{p}", lambda p=p: lin(x, f"W_{p.upper()}", f"b_{p.upper()}")) for p in "qkv")
        split = lambda m, w: m.reshape(d.seq_len, d.heads, w).transpose(0, 1)
        scale = 1 / math.sqrt(d.d_k) if o.attention_scale == "sqrt_dk" else 1.0
        n = d.seq_len
        allowed = torch.ones(n, n, dtype=torch.bool)  # SDPA: True = may attend
        if o.causal:
            allowed &= torch.ones(n, n, dtype=torch.bool).tril()
        if pad is not None:
            allowed &= ~torch.tensor(pad)[None, :]
        qs, ks, vs = split(q, d.d_k), split(k, d.d_k), split(v, d.d_v)
        drops = [prefix + f"attn.h{h}.weights" in s.dropout_masks for h in range(d.heads)]
        if any(drops):  # the weights dropped by a fixed mask: written out per head
            outs = []
            for h in range(d.heads):
                sc = (qs[h] @ ks[h].T * scale).masked_fill(~allowed, float("-inf"))
                outs.append(put(f"attn.h{h}.weights", lambda sc=sc: torch.softmax(sc, -1)) @ vs[h])
            heads = torch.stack(outs)
        else:
            heads = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=allowed, scale=scale)
        cat = heads.transpose(0, 1).reshape(n, d.heads * d.d_v)
        return put("attn.out", lambda: lin(cat, "W_O", "b_O") if o.out_proj else cat)

    def ffn(x):
        z = put("ffn.hidden", lambda: lin(x, "W_1", "b_1"))
        act = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
               "silu": F.silu, "swiglu": F.silu, "geglu": F.gelu}[o.activation]
        if o.gated:
            gate = put("ffn.gate", lambda: lin(x, "W_3", "b_3"))
            u = put("ffn.act", lambda: act(z) * gate)
        else:
            u = put("ffn.act", lambda: act(z))
        return put("ffn.out", lambda: lin(u, "W_2", "b_2"))

    ys = []
    for prefix, _, pad in s.sequences():
        x = put("x", lambda: leaves[f"{prefix}X"] * 1)
        if o.norm_position == "pre":
            r1 = put("resid1", lambda: x + attention(norm("norm1", x, "ln1"), pad))
            r2 = put("resid2", lambda: r1 + ffn(norm("norm2", r1, "ln2")))
            y = norm("norm_final", r2, "ln_final") if o.final_norm else r2
        else:
            r1 = put("resid1", lambda: x + attention(x, pad))
            h1 = norm("norm1", r1, "ln1")
            r2 = put("resid2", lambda: h1 + ffn(h1))
            y = norm("norm2", r2, "ln2")
        ys.append(put("output", lambda: y * 1))
    y = torch.cat(ys)  # a batch: the outputs stacked
    if loss == "sum":
        L = y.sum()
    else:
        L = F.mse_loss(y, _t(target) if target is not None else torch.zeros_like(y))
    L.backward()
    out = {k: t.grad for k, t in leaves.items()}
    out.update({k: t.grad for k, t in steps.items() if t.grad is not None})
    return float(L.detach()), out
