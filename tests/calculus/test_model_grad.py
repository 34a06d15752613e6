"""Exact gradients through the tiny GPT's stack against torch autograd on an independent torch
forward written here from DESIGN.md's conventions (not the engine's code)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symblock
from symblock.calculus import model_grad
from symblock.engine.model_spec import from_mapping
from symblock.errors import SpecError

F64 = torch.float64


def t(m):
    return torch.tensor(np.array(m.tolist(), dtype=float), dtype=F64, requires_grad=True)


def torch_logits(spec):
    """The prompt pass in plain torch ops; returns (logits, {param name: leaf tensor})."""
    leaves = {"W_E": t(spec.W_E)}
    x = leaves["W_E"][list(spec.prompt)]
    if spec.positions == "learned":
        leaves["W_P"] = t(spec.W_P)
        x = x + leaves["W_P"][:len(spec.prompt)]
    elif spec.positions == "sinusoidal":
        n, d = len(spec.prompt), spec.dims.d_model
        pe = [[(math.sin if j % 2 == 0 else math.cos)(p / 10000 ** ((j - j % 2) / d)) for j in range(d)]
              for p in range(n)]
        x = x + torch.tensor(pe, dtype=F64)
    for i, layer in enumerate(spec.layers):
        P = {k: t(v) for k, v in layer.params.items()}
        leaves.update({f"layer{i}.{k}": v for k, v in P.items()})
        x = _block(x, P, layer)
    if spec.final_norm:
        P = {f"ln_final.{k}": t(v) for k, v in spec.final_norm.items()}
        leaves.update(P)
        x = _norm(x, P, "ln_final", spec.options)
    if spec.head == "tied":
        return x @ leaves["W_E"].T, leaves
    leaves["W_U"] = t(spec.W_U)
    return x @ leaves["W_U"], leaves


def _norm(x, P, ln, o):
    eps = float(o.eps)
    if o.norm == "layernorm":
        mu = x.mean(dim=1, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=1, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * P[f"{ln}.gamma"][0] + P[f"{ln}.beta"][0]
    return x / torch.sqrt((x * x).mean(dim=1, keepdim=True) + eps) * P[f"{ln}.gamma"][0]


def _lin(x, P, w, b):
    y = x @ P[w]
    return y + P[b][0] if b in P else y


ACT = {"relu": torch.relu, "gelu": lambda z: 0.5 * z * (1 + torch.erf(z / math.sqrt(2))),
       "gelu_tanh": lambda z: 0.5 * z * (1 + torch.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3))),
       "silu": lambda z: z * torch.sigmoid(z)}


def _block(x, P, spec):
    o, dims = spec.options, spec.dims
    n, dh = x.shape[0], dims.d_head

    def attn(h):
        q, k, v = (_lin(h, P, f"W_{p}", f"b_{p}") for p in "QKV")
        outs = []
        for j in range(dims.heads):
            s = q[:, j * dh:(j + 1) * dh] @ k[:, j * dh:(j + 1) * dh].T
            if o.attention_scale == "sqrt_dk":
                s = s / math.sqrt(dh)
            s = s.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), float("-inf"))
            outs.append(torch.softmax(s, dim=1) @ v[:, j * dh:(j + 1) * dh])
        cat = torch.cat(outs, dim=1)
        return _lin(cat, P, "W_O", "b_O") if o.out_proj else cat

    def ffn(h):
        z = _lin(h, P, "W_1", "b_1")
        act = ACT[{"swiglu": "silu", "geglu": "gelu"}.get(o.activation, o.activation)](z)
        if o.gated:
            act = act * _lin(h, P, "W_3", "b_3")
        return _lin(act, P, "W_2", "b_2")
    if o.norm_position == "pre":
        r1 = x + attn(_norm(x, P, "ln1", o))
        return r1 + ffn(_norm(r1, P, "ln2", o))
    h1 = _norm(x + attn(x), P, "ln1", o)
    return _norm(h1 + ffn(h1), P, "ln2", o)


def check_against_torch(spec, loss="sum"):
    g = model_grad.backward(spec, loss=loss)
    logits, leaves = torch_logits(spec)
    assert np.allclose(logits.detach().numpy(), g.logits.floats(), rtol=0, atol=1e-10)
    L = logits.sum() if loss == "sum" else (logits ** 2).mean()
    L.backward()
    assert set(g.grads) == set(leaves)
    scale = max(1.0, max(float(leaf.grad.abs().max()) for leaf in leaves.values()))
    for name, leaf in leaves.items():
        got = np.array(g.grads[name].floats())
        assert got.shape == tuple(leaf.shape), name
        assert np.allclose(got, leaf.grad.numpy(), rtol=0, atol=1e-9 * scale), name


@pytest.mark.parametrize("loss", ["sum", "mse"])
def test_tiny_gpt_gradients_match_torch_autograd(loss):
    check_against_torch(symblock.load("tiny-gpt"), loss)


def test_untied_post_ln_without_final_norm():
    from symblock.engine.spec import read_spec
    data, _ = read_spec("tiny-gpt")
    data = {**data, "model": {**data["model"], "head": "untied", "final_norm": False, "positions": "sinusoidal"},
            "block": {**data["block"], "norm_position": "post"}}
    check_against_torch(from_mapping(data, "t"), "mse")


def test_a_final_norm_after_post_ln():
    from symblock.engine.spec import read_spec
    data, _ = read_spec("tiny-gpt")
    data = {**data, "block": {**data["block"], "norm_position": "post"}}
    spec = from_mapping(data, "t")
    assert spec.final_norm and spec.layers[-1].options.norm_position == "post"
    for loss in ("sum", "mse"):
        check_against_torch(spec, loss)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layers=st.integers(1, 2), act=st.sampled_from(["relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu"]),
       norm=st.sampled_from(["layernorm", "rmsnorm"]), bias=st.booleans(), out_proj=st.booleans(),
       scale=st.sampled_from(["sqrt_dk", "none"]), heads=st.sampled_from([1, 2]), seed=st.integers(0, 999),
       loss=st.sampled_from(["sum", "mse"]))
def test_random_stacks_match_torch_autograd(layers, act, norm, bias, out_proj, scale, heads, seed, loss):
    data = {"model": {"vocab": ["a", "b", "c", "d"], "layers": layers, "prompt": ["a", "c", "b"],
                      "final_norm": True},
            "dims": {"d_model": 4, "d_ff": 3, "heads": heads},
            "block": {"norm_position": "pre", "norm": norm, "eps": "1/10", "activation": act,
                      "bias": bias, "out_proj": out_proj, "attention_scale": scale},
            "random": {"seed": seed, "low": -2, "high": 2}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = from_mapping(data, "h")
    check_against_torch(spec, loss)


def test_grad_command_on_a_model(capsys):
    from symblock import cli
    assert cli.main(["grad", "tiny-gpt", "--wrt", "W_E,layer0.W_Q"]) == 0
    out = capsys.readouterr().out
    assert "■ grad.W_E" in out and "■ grad.layer0.W_Q" in out and "prompt pass's logits" in out
    assert cli.main(["grad", "tiny-gpt", "--wrt", "W_Q"]) == 2
    assert "layer0.W_Q" in capsys.readouterr().err


def test_a_tie_between_the_largest_logits_does_not_stop_the_gradients():
    """Seed 456's last row ties between two tokens (greedy decoding has no next token, forward
    says so); the gradients of the prompt pass do not need one."""
    data = {"model": {"vocab": ["a", "b", "c", "d"], "layers": 1, "prompt": ["a", "c", "b"], "final_norm": True},
            "dims": {"d_model": 4, "d_ff": 3, "heads": 1},
            "block": {"norm_position": "pre", "norm": "layernorm", "eps": "1/10", "activation": "relu",
                      "bias": False, "out_proj": False, "attention_scale": "sqrt_dk"},
            "random": {"seed": 456, "low": -2, "high": 2}}
    spec = from_mapping(data, "h")
    with pytest.raises(SpecError) as e:
        symblock.forward(spec)
    assert e.value.field == "next_token"
    check_against_torch(spec, "sum")
