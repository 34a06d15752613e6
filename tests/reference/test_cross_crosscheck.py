"""A decoder layer with cross-attention against torch's own `nn.TransformerDecoderLayer` (built
here from a state dict, both norm orders, with memory and target padding) and against the NumPy
path, to 1e-9; what torch cannot run is said, not hidden."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from symblock.engine import block, spec
from symblock.reference import numeric_cross, verify


def decoder_spec(norm_position: str, seed: int, heads: int = 2, d: int = 4, n: int = 3, m: int = 4,
                 mem_pad=(False, True, False, False), tgt_pad=None):
    inputs = {"memory_padding_mask": list(mem_pad)} if mem_pad else {}
    if tgt_pad:
        inputs["key_padding_mask"] = list(tgt_pad)
    return spec.from_mapping({
        "dims": {"seq_len": n, "d_model": d, "d_ff": 2 * d, "heads": heads, "mem_len": m},
        "block": {"cross_attention": True, "norm_position": norm_position, "eps": "1e-5", "bias": True,
                  "activation": "gelu"},
        "inputs": inputs, "random": {"seed": seed, "low": -2, "high": 2}}, "dec.yaml")


def torch_layer(s):
    """nn.TransformerDecoderLayer with the spec's weights, mapped by state-dict key."""
    d, o = s.dims.d_model, s.options
    layer = torch.nn.TransformerDecoderLayer(d, s.dims.heads, s.dims.d_ff, dropout=0.0, activation="gelu",
                                             layer_norm_eps=1e-5, batch_first=True,
                                             norm_first=o.norm_position == "pre", dtype=torch.float64).eval()

    def t(name):
        return torch.tensor(np.array(s.params[name].tolist(), dtype=float))

    state = {}
    for mod, pre in (("self_attn", ""), ("multihead_attn", "cross.")):
        state[f"{mod}.in_proj_weight"] = torch.cat([t(f"{pre}W_{p}").T for p in "QKV"])
        state[f"{mod}.in_proj_bias"] = torch.cat([t(f"{pre}b_{p}")[0] for p in "QKV"])
        state[f"{mod}.out_proj.weight"] = t(f"{pre}W_O").T
        state[f"{mod}.out_proj.bias"] = t(f"{pre}b_O")[0]
    for i, w in ((1, "W_1"), (2, "W_2")):
        state[f"linear{i}.weight"], state[f"linear{i}.bias"] = t(w).T, t(f"b_{i}")[0]
    for i in (1, 2, 3):
        state[f"norm{i}.weight"], state[f"norm{i}.bias"] = t(f"ln{i}.gamma")[0], t(f"ln{i}.beta")[0]
    layer.load_state_dict(state)
    return layer


@pytest.mark.parametrize("norm_position", ["post", "pre"])
@pytest.mark.parametrize("seed", [1, 2])
def test_matches_nn_transformer_decoder_layer_with_memory_padding(norm_position, seed):
    s = decoder_spec(norm_position, seed, tgt_pad=(False, False, True) if seed == 2 else None)
    ours = block.forward(s)["output"].value.floats()
    layer = torch_layer(s)
    x = torch.tensor(np.array(s.X.tolist(), dtype=float))[None]
    mem = torch.tensor(np.array(s.memory.tolist(), dtype=float))[None]
    causal = torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1)  # True = masked (j > i)
    kw = {"memory_key_padding_mask": torch.tensor([[False, True, False, False]])}
    if seed == 2:
        kw["tgt_key_padding_mask"] = torch.tensor([[False, False, True]])
    with torch.enable_grad():
        want = layer(x, mem, tgt_mask=causal, **kw).detach()[0].numpy()
    assert np.abs(np.array(ours) - want).max() < 1e-9
    r = verify.run(s, require_torch=True)
    assert r.ok, r.problems
    assert r.backends["torch"].available and "cross.h1.weights" in r.backends["torch"].steps


def test_padded_memory_changes_nothing_it_should_not():
    """The padded memory row gets weight 0, so rewriting it leaves every step unchanged."""
    s = decoder_spec("post", 3)
    mem = [list(r) for r in s.memory.tolist()]
    mem[1] = [9, -9, 9, -9]
    from dataclasses import replace
    from symblock.engine.matrix import ExactMatrix
    t1, t2 = block.forward(s), block.forward(replace(s, memory=ExactMatrix(mem)))
    assert t1["output"].value.floats() == t2["output"].value.floats()
    assert t1["cross.v"].value.floats() != t2["cross.v"].value.floats()
    w = np.array(t1["cross.h0.weights"].value.floats())
    assert (w[:, 1] == 0).all() and (w[:, [0, 2, 3]] > 0).all()  # row 0 sees later memory rows


@pytest.mark.parametrize("opts", [{"norm": "rmsnorm"}, {"attention_scale": "none"}, {"activation": "silu"}])
def test_numpy_checks_what_torch_cannot_run(opts):
    s = spec.from_mapping({"dims": {"seq_len": 2, "d_model": 2, "d_ff": 3, "mem_len": 3},
                           "block": {"cross_attention": True, "eps": "1/10", **opts},
                           "random": {"seed": 8}}, "dec.yaml")
    r = verify.run(s, require_torch=True)
    assert r.ok and not r.backends["torch"].available
    assert "nn.TransformerDecoderLayer" in r.backends["torch"].reason
    got = numeric_cross.forward(s)
    assert set(got) == set(block.forward(s).names())
