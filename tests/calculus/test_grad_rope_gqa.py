"""Exact gradients through RoPE (both styles) and grouped K/V heads against torch autograd on a
block written here in plain torch (rotate_half / rotate_every_two, repeat_kv, causal SDPA)."""
import pytest
import torch

from symblock.calculus import grad
from symblock.engine import spec

F = torch.nn.functional


def _spec(style, heads, kv_heads, bias):
    return spec.from_mapping({
        "dims": {"seq_len": 3, "d_model": 4, "d_ff": 3, "heads": heads, "kv_heads": kv_heads, "d_k": 2, "d_v": 2},
        "block": {"rope": {"theta": 100, "style": style}, "norm": "rmsnorm", "norm_position": "pre",
                  "activation": "swiglu", "causal": True, "bias": bias, "eps": "1/10"},
        "inputs": {"positions": [1, 2, 4]}, "random": {"seed": 9}}, "g.yaml")


def _t(m):
    return torch.tensor([[float(v) for v in r] for r in m.tolist()], dtype=torch.float64, requires_grad=True)


def _turn(x, cos, sin, style):
    if style == "half":
        h = x.shape[-1] // 2
        return x * cos + torch.cat([-x[:, h:], x[:, :h]], -1) * sin
    return x * cos + torch.stack([-x[:, 1::2], x[:, 0::2]], -1).flatten(-2) * sin


def torch_block(s, p, X):
    d, o = s.dims, s.options
    dk = d.d_k
    f = torch.outer(torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64),
                    1.0 / 100.0 ** (torch.arange(0, dk, 2, dtype=torch.float64) / dk))
    f = torch.cat([f, f], -1) if o.rope.style == "half" else f.repeat_interleave(2, -1)
    cos, sin = f.cos(), f.sin()

    def lin(x, w, b):
        return x @ p[w] + (p[b] if b in p else 0)
    n1 = F.rms_norm(X, (4,), p["ln1.gamma"].reshape(-1), 0.1)
    q, k, v = lin(n1, "W_Q", "b_Q"), lin(n1, "W_K", "b_K"), lin(n1, "W_V", "b_V")
    qs = [_turn(q[:, h * dk:(h + 1) * dk], cos, sin, o.rope.style) for h in range(d.heads)]
    ks = [_turn(k[:, g * dk:(g + 1) * dk], cos, sin, o.rope.style) for g in range(d.kv_heads)]
    vs = [v[:, g * d.d_v:(g + 1) * d.d_v] for g in range(d.kv_heads)]
    group = d.heads // d.kv_heads
    outs = [F.scaled_dot_product_attention(qs[h][None], ks[h // group][None], vs[h // group][None],
                                           is_causal=True)[0] for h in range(d.heads)]
    r1 = X + lin(torch.cat(outs, -1), "W_O", "b_O")
    n2 = F.rms_norm(r1, (4,), p["ln2.gamma"].reshape(-1), 0.1)
    return r1 + lin(F.silu(lin(n2, "W_1", "b_1")) * lin(n2, "W_3", "b_3"), "W_2", "b_2")


@pytest.mark.parametrize("style, heads, kv_heads, bias", [("half", 2, 1, False), ("interleaved", 4, 2, True)])
def test_gradients_through_rope_and_grouped_heads_match_torch_autograd(style, heads, kv_heads, bias):
    s = _spec(style, heads, kv_heads, bias)
    wrt = ["X", "W_Q", "W_K", "W_V"] + (["b_K"] if bias else [])
    b = grad.backward(s, "sum", wrt)
    p = {k: _t(m) for k, m in s.params.items()}
    X = _t(s.X)
    torch_block(s, p, X).sum().backward()
    ref = {"X": X.grad, **{k: p[k].grad for k in wrt if k != "X"}}
    for name in wrt:
        got = torch.tensor(b.wrt[name].value.floats(), dtype=torch.float64)
        assert got.shape == ref[name].shape, name
        assert torch.allclose(got, ref[name], atol=1e-10, rtol=1e-10), (name, got, ref[name])
    assert b.wrt["W_K"].value.shape == (4, kv_heads * 2)
    assert any(g.of == "attn.k_rot" for g in b.steps)
