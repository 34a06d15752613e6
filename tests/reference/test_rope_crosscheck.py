"""RoPE (both styles) and grouped K/V heads through the three paths: exact = NumPy = torch on
every step, torch's rotation as Hugging Face applies it, and torch's own grouped attention."""
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symblock.engine import block, spec
from symblock.reference import numeric, numeric_rope, torch_rope, verify


def _spec(style="half", heads=2, kv_heads=1, layout="math", positions=None, bias=False, seed=3):
    data = {"layout": layout,
            "dims": {"seq_len": 3, "d_model": 8, "d_ff": 4, "heads": heads, "kv_heads": kv_heads},
            "block": {"rope": {"theta": 500, "style": style}, "norm": "rmsnorm", "norm_position": "pre",
                      "activation": "swiglu", "causal": True, "bias": bias},
            "random": {"seed": seed}}
    if positions:
        data["inputs"] = {"positions": positions}
    return spec.from_mapping(data, "t.yaml")


@pytest.mark.parametrize("style", ["half", "interleaved"])
@pytest.mark.parametrize("heads, kv_heads", [(2, 1), (4, 2), (2, 2)])
def test_every_step_agrees_with_numpy_and_torch(style, heads, kv_heads):
    s = _spec(style, heads, kv_heads, positions=[3, 5, 6], bias=True)
    res = verify.run(s, tol=1e-9, require_torch=True)
    assert res.ok, res.problems
    assert res.backends["torch"].available and "attn.k_rot" in res.backends["torch"].steps
    assert "attn.q_rot" in res.backends["numpy"].steps
    assert res.backends["torch"].note == "RoPE rotated by transformers"   # Hugging Face's own functions


def test_torch_layout_stores_grouped_kv_weights_as_nn_linear():
    """layout: torch: W_K is (kv_heads·d_k, d_model) as nn.Linear(d_model, kv_heads·d_k) holds it."""
    s = _spec(layout="torch", heads=4, kv_heads=2)
    assert s.params["W_K"].shape == (8, 4)
    bad = {"layout": "torch", "dims": {"seq_len": 1, "d_model": 4, "d_ff": 2, "heads": 2, "kv_heads": 1},
           "weights": {"W_K": [[1, 0, 0, 0]] * 4}, "random": {"seed": 1}}
    with pytest.raises(spec.SpecError) as e:
        spec.from_mapping(bad, "t.yaml")
    assert e.value.where == "weights.W_K" and "2×4" in e.value.message


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_rotation_matches_the_hugging_face_formulas_written_out(style):
    """Llama: q·cos + rotate_half(q)·sin with cos = cat(f, f); GPT-J: rotate_every_two with each
    frequency repeated in place. Written here in plain torch on (seq, d_k) rows."""
    s = _spec(style, heads=2, kv_heads=1, positions=[0, 2, 9])
    t = block.forward(s)
    q = torch.tensor(t["attn.q"].value.floats(), dtype=torch.float64)
    pos = torch.tensor([0.0, 2.0, 9.0], dtype=torch.float64)
    d = 4
    f = torch.outer(pos, 1.0 / 500.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    out = []
    for h in range(2):
        x = q[:, h * d:(h + 1) * d]
        if style == "half":
            cos, sin = torch.cat([f, f], -1).cos(), torch.cat([f, f], -1).sin()
            out.append(x * cos + torch.cat([-x[:, d // 2:], x[:, :d // 2]], -1) * sin)
        else:
            cos, sin = f.cos().repeat_interleave(2, -1), f.sin().repeat_interleave(2, -1)
            turned = torch.stack([-x[:, 1::2], x[:, 0::2]], -1).flatten(-2)
            out.append(x * cos + turned * sin)
    want = torch.cat(out, -1).numpy()
    assert np.allclose(t["attn.q_rot"].value.floats(), want, atol=1e-13)
    got = torch_rope.rotate(torch, q, 2, d, [0, 2, 9], s.options.rope).numpy()
    assert np.allclose(got, want, atol=1e-13)
    assert np.allclose(numeric_rope.rotate(q.numpy(), 2, d, [0, 2, 9], s.options.rope), want, atol=1e-13)


def test_grouped_heads_agree_with_torch_sdpa_enable_gqa():
    s = _spec("half", heads=4, kv_heads=2)
    t = block.forward(s)

    def heads(name, n):
        return torch.tensor(t[name].value.floats(), dtype=torch.float64).view(3, n, 2).transpose(0, 1)[None]
    out = torch.nn.functional.scaled_dot_product_attention(
        heads("attn.q_rot", 4), heads("attn.k_rot", 2), heads("attn.v", 2), is_causal=True, enable_gqa=True)
    for h in range(4):
        assert np.allclose(out[0, h].numpy(), t[f"attn.h{h}.out"].value.floats(), atol=1e-12), h
    assert numeric.forward(s)["attn.k"].shape == (3, 4)


@st.composite
def rope_specs(draw):
    """RoPE of either style, any θ > 1 (an integer or a fraction), any positions, grouped heads
    of any divisor, odd or even widths d_v, causal or padded, biases, math or torch layout."""
    heads = draw(st.integers(1, 4))
    kv = draw(st.sampled_from([g for g in range(1, heads + 1) if heads % g == 0]))
    n, d_k = draw(st.integers(1, 4)), draw(st.sampled_from([2, 4]))
    theta = draw(st.sampled_from([10000, 2, "7/2", 500000]))
    data = {"layout": draw(st.sampled_from(["math", "torch"])),
            "dims": {"seq_len": n, "d_model": draw(st.integers(2, 5)), "d_ff": 2, "heads": heads,
                     "kv_heads": kv, "d_k": d_k, "d_v": draw(st.integers(1, 3))},
            "block": {"rope": {"theta": theta, "style": draw(st.sampled_from(["half", "interleaved"]))},
                      "causal": draw(st.booleans()), "bias": draw(st.booleans()), "eps": "1/10",
                      "norm_position": draw(st.sampled_from(["pre", "post"]))},
            "inputs": {"positions": draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))},
            "random": {"seed": draw(st.integers(0, 10**6))}}
    if draw(st.booleans()) and n > 1:
        data["inputs"]["key_padding_mask"] = [False] + [draw(st.booleans()) for _ in range(n - 1)]
    return data


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rope_specs())
def test_random_rope_and_grouped_blocks_agree_on_every_step(data):
    s = spec.from_mapping(data, "h.yaml")
    res = verify.run(s, tol=1e-9, require_torch=True)
    assert res.ok, res.problems


def test_tiles_over_rotated_scores_of_grouped_heads_are_proved_and_cross_checked():
    """The online softmax's tiles work a grouped head's rotated scores and its K/V head's values:
    proved equal to the head's out exactly, and every step agrees with NumPy and torch."""
    s = spec.from_mapping({"dims": {"seq_len": 4, "d_model": 4, "d_ff": 3, "heads": 2, "kv_heads": 1},
                           "block": {"rope": {"style": "interleaved"}, "attention_tiles": 2, "causal": True},
                           "random": {"seed": 5}}, "t.yaml")
    res = verify.run(s, tol=1e-9, require_torch=True)
    assert res.ok, res.problems
    assert len(res.tiles) == 2 and all(v == "exact" for _, v in res.tiles)
