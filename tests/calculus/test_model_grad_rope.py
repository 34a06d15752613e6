"""Exact gradients through a tiny Llama (RoPE in every layer, 2 query heads over 1 K/V head,
RMSNorm, SwiGLU, untied head) against torch autograd on a Llama decoder written in plain torch."""
import numpy as np
import pytest
import torch
import yaml

from symblock.calculus import model_grad
from symblock.engine import model_spec

SPEC = """\
dims: {d_model: 4, d_ff: 3, heads: 2, kv_heads: 1}
block: {norm: rmsnorm, norm_position: pre, activation: swiglu, eps: "1/10", rope: {theta: 100, style: STYLE}}
model: {vocab: [a, b, c, d], positions: rope, layers: 2, head: untied, final_norm: true, prompt: [a, c, b]}
random: {seed: 21}
"""


def _leaf(m):
    return torch.tensor(np.array([[float(v) for v in r] for r in m.tolist()]), dtype=torch.float64,
                        requires_grad=True)


def _rms(x, g):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 0.1) * g


def _turn(x, cos, sin, style):
    if style == "half":
        h = x.shape[-1] // 2
        return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin
    return x * cos + torch.stack([-x[..., 1::2], x[..., 0::2]], -1).flatten(-2) * sin


def torch_llama(spec, style):
    d, n = spec.dims, len(spec.prompt)
    leaves = {"W_E": _leaf(spec.W_E), "W_U": _leaf(spec.W_U), "ln_final.gamma": _leaf(spec.final_norm["gamma"])}
    f = torch.outer(torch.arange(n, dtype=torch.float64),
                    1.0 / 100.0 ** (torch.arange(0, d.d_k, 2, dtype=torch.float64) / d.d_k))
    f = torch.cat([f, f], -1) if style == "half" else f.repeat_interleave(2, -1)
    cos, sin = f.cos(), f.sin()
    x = leaves["W_E"][list(spec.prompt)]
    for i, layer in enumerate(spec.layers):
        P = {k: _leaf(v) for k, v in layer.params.items()}
        leaves.update({f"layer{i}.{k}": v for k, v in P.items()})
        h = _rms(x, P["ln1.gamma"])
        q = (h @ P["W_Q"]).view(n, d.heads, d.d_k).transpose(0, 1)
        k = (h @ P["W_K"]).view(n, d.kv_heads, d.d_k).transpose(0, 1)
        v = (h @ P["W_V"]).view(n, d.kv_heads, d.d_v).transpose(0, 1)
        q, k = _turn(q, cos, sin, style), _turn(k, cos, sin, style)
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + o.transpose(0, 1).reshape(n, d.heads * d.d_v) @ P["W_O"]
        h = _rms(x, P["ln2.gamma"])
        x = x + (torch.nn.functional.silu(h @ P["W_1"]) * (h @ P["W_3"])) @ P["W_2"]
    return _rms(x, leaves["ln_final.gamma"]) @ leaves["W_U"], leaves


@pytest.mark.parametrize("style", ["half", "interleaved"])
@pytest.mark.parametrize("loss", ["sum", "mse"])
def test_tiny_llama_gradients_match_torch_autograd(style, loss):
    spec = model_spec.from_mapping(yaml.safe_load(SPEC.replace("STYLE", style)), "m.yaml")
    g = model_grad.backward(spec, loss=loss)
    logits, leaves = torch_llama(spec, style)
    assert np.allclose(g.logits.floats(), logits.detach().numpy(), atol=1e-12)
    (logits.sum() if loss == "sum" else (logits ** 2).mean()).backward()
    for name in ("W_E", "W_U", "layer0.W_Q", "layer0.W_K", "layer1.W_V", "layer1.ln1.gamma"):
        got = np.array(g.grads[name].floats())
        assert got.shape == tuple(leaves[name].grad.shape), name
        assert np.allclose(got, leaves[name].grad.numpy(), atol=1e-10, rtol=1e-10), name
    assert g.grads["layer0.W_K"].shape == (4, 2)
