"""Exact gradients through a decoder layer with cross-attention, against torch autograd on
`nn.TransformerDecoderLayer` (built here from a state dict), both norm orders, with a padded
memory row: d/d the decoder's weights, the cross-attention's, the norms', X and the memory."""
from __future__ import annotations

import json

import numpy as np
import pytest
import sympy
import torch

from symblock.calculus import grad
from symblock.cli import main
from symblock.engine import block, spec


# γ, β not 1, 0 (so a sum through the last norm is not a constant, and dγ, dβ are exercised)
NORMS = {f"ln{i}": {"gamma": [1, f"{i}/2", -1, 2], "beta": [0, "1/3", -i, 1]} for i in (1, 2, 3)}


def raw_spec(norm_position: str, seed: int, mem_pad=(False, True, False, False), heads: int = 2) -> dict:
    inputs = {"memory_padding_mask": list(mem_pad)} if mem_pad else {}
    return {"dims": {"seq_len": 3, "d_model": 4, "d_ff": 6, "heads": heads, "mem_len": 4},
            "block": {"cross_attention": True, "norm_position": norm_position, "eps": "1e-5", "bias": True,
                      "activation": "gelu"},
            "weights": NORMS, "inputs": inputs, "random": {"seed": seed, "low": -2, "high": 2}}


def decoder_spec(*args, **kw):
    return spec.from_mapping(raw_spec(*args, **kw), "dec.yaml")


def floats(m) -> np.ndarray:
    return np.array([[float(sympy.N(e, 30)) for e in r] for r in m.tolist()], dtype=float)


def torch_layer(s):
    d = s.dims.d_model
    layer = torch.nn.TransformerDecoderLayer(d, s.dims.heads, s.dims.d_ff, dropout=0.0, activation="gelu",
                                             layer_norm_eps=1e-5, batch_first=True,
                                             norm_first=s.options.norm_position == "pre",
                                             dtype=torch.float64).eval()
    t = {k: torch.tensor(floats(v)) for k, v in s.params.items()}
    state = {}
    for mod, pre in (("self_attn", ""), ("multihead_attn", "cross.")):
        state[f"{mod}.in_proj_weight"] = torch.cat([t[f"{pre}W_{p}"].T for p in "QKV"])
        state[f"{mod}.in_proj_bias"] = torch.cat([t[f"{pre}b_{p}"][0] for p in "QKV"])
        state[f"{mod}.out_proj.weight"] = t[f"{pre}W_O"].T
        state[f"{mod}.out_proj.bias"] = t[f"{pre}b_O"][0]
    for i in (1, 2):
        state[f"linear{i}.weight"], state[f"linear{i}.bias"] = t[f"W_{i}"].T, t[f"b_{i}"][0]
    for i in (1, 3, 2):
        state[f"norm{i}.weight"], state[f"norm{i}.bias"] = t[f"ln{i}.gamma"][0], t[f"ln{i}.beta"][0]
    layer.load_state_dict(state)
    return layer


def torch_gradients(s, target: np.ndarray) -> dict[str, np.ndarray]:
    """torch's dL/d every parameter, X and M, for L = mean((Y − T)²), under our names (math layout)."""
    layer = torch_layer(s)
    x = torch.tensor(floats(s.X))[None].requires_grad_()
    mem = torch.tensor(floats(s.memory))[None].requires_grad_()
    n, d = s.dims.seq_len, s.dims.d_model
    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    pad = torch.tensor([list(s.memory_padding_mask)]) if s.memory_padding_mask else None
    with torch.enable_grad():
        y = layer(x, mem, tgt_mask=causal, memory_key_padding_mask=pad)
        torch.nn.functional.mse_loss(y[0], torch.tensor(target)).backward()
    g = {n_: p.grad for n_, p in layer.named_parameters()}
    out = {"X": x.grad[0], "M": mem.grad[0]}
    for mod, pre in (("self_attn", ""), ("multihead_attn", "cross.")):
        w, b = g[f"{mod}.in_proj_weight"], g[f"{mod}.in_proj_bias"]
        for i, p in enumerate("QKV"):
            out[f"{pre}W_{p}"], out[f"{pre}b_{p}"] = w[i * d:(i + 1) * d].T, b[i * d:(i + 1) * d][None]
        out[f"{pre}W_O"], out[f"{pre}b_O"] = g[f"{mod}.out_proj.weight"].T, g[f"{mod}.out_proj.bias"][None]
    for i in (1, 2):
        out[f"W_{i}"], out[f"b_{i}"] = g[f"linear{i}.weight"].T, g[f"linear{i}.bias"][None]
    for i in (1, 2, 3):
        out[f"ln{i}.gamma"], out[f"ln{i}.beta"] = g[f"norm{i}.weight"][None], g[f"norm{i}.bias"][None]
    return {k: v.detach().numpy() for k, v in out.items()}


TARGET = np.array([[1, 0, -1, 0.5], [0, 2, 0, -1], [-0.5, 0, 1, 1]])
EXACT_TARGET = sympy.Matrix([[sympy.Rational(str(v)) for v in r] for r in TARGET.tolist()])


@pytest.mark.parametrize("norm_position", ["post", "pre"])
@pytest.mark.parametrize("seed", [1, 2])
def test_every_gradient_matches_autograd_on_nn_transformer_decoder_layer(norm_position, seed):
    s = decoder_spec(norm_position, seed, heads=2 if seed == 1 else 1)
    want = torch_gradients(s, TARGET)
    wrt = ["X", "M", *s.params]
    b = grad.backward(s, "mse", wrt, target=EXACT_TARGET)
    scale = max(np.abs(v).max() for v in want.values())
    assert scale > 1e-3
    for name in wrt:
        got = np.array(b.wrt[name].value.floats())
        assert got.shape == want[name].shape, name
        assert np.abs(got - want[name]).max() <= 1e-9 * scale, name
    # the padded memory row is read by no query: its gradient is exactly 0, the others are not
    m = b.wrt["M"].value.floats()
    assert m[1] == [0.0] * 4 and any(m[0])


def test_memory_without_padding_gets_gradient_on_every_row():
    s = decoder_spec("post", 3, mem_pad=None)
    want = torch_gradients(s, TARGET)
    b = grad.backward(s, "mse", ["M", "cross.W_V"], target=EXACT_TARGET)
    for name in ("M", "cross.W_V"):
        assert np.abs(np.array(b.wrt[name].value.floats()) - want[name]).max() < 1e-9
    assert all(any(r) for r in b.wrt["M"].value.floats())


def test_grad_cli_works_a_decoder_layer(tmp_path, capsys):
    s = decoder_spec("pre", 1)
    path = tmp_path / "dec.yaml"
    path.write_text(json.dumps(raw_spec("pre", 1)))
    target = json.dumps(TARGET.tolist())
    assert main(["grad", str(path), "--loss", "mse", "--target", target, "--wrt", "M,cross.W_Q", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = torch_gradients(s, TARGET)
    got = {g["name"]: np.array(g["float"]) for g in out["wrt"]}
    assert set(got) == {"grad.M", "grad.cross.W_Q"}
    latex = {g["name"]: g["latex"] for g in out["wrt"]}   # named as the layer's formulas write them
    assert latex == {"grad.M": r"\partial L / \partial H^{\mathrm{enc}}", "grad.cross.W_Q": r"\partial L / \partial W^{Q}_{c}"}
    assert np.abs(got["grad.M"] - want["M"]).max() < 1e-9
    assert np.abs(got["grad.cross.W_Q"] - want["cross.W_Q"]).max() < 1e-9
    steps = [g["name"] for g in out["steps"]]
    assert "grad.cross.h0.masked" in steps and "grad.memory" in steps
    assert main(["grad", str(path), "--wrt", "cross.W_Z"]) == 2
    assert "cross.W_Z" in capsys.readouterr().err
