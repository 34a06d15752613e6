"""Issue 15's options (d_k, d_v, key padding masks, batches, fixed dropout masks) through the three
paths: exact = NumPy = torch on every step, and torch's own batched modules by hand."""
import itertools

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symblock.engine import block, spec
from symblock.engine.steps import DROPOUT_KINDS, step_kind, step_names, step_shape
from symblock.reference import numeric, torch_ref, verify

TOL = 1e-9


FEATURES = ("widths", "padding", "batch", "dropout", "torch", "no_out_proj")


@st.composite
def attention_specs(draw, features: frozenset | None = None):
    """A spec with issue 15's options; `features` fixes which are on (None: each drawn). Widths
    d_k, d_v stated (also not dividing d_model); padding anywhere but a causal row's key 0
    (left padding too); a batch of one to three, X given or (with a padding mask) drawn; dropout
    on up to three steps, masks given or `random`, p with a non-terminating 1/(1 − p)."""
    on = features if features is not None else {f for f in FEATURES if draw(st.booleans())}
    heads, out_proj = draw(st.integers(1, 3)), "no_out_proj" not in on
    if "widths" in on:
        d_v = draw(st.integers(1, 3))
        d_model = heads * d_v if not out_proj else draw(st.integers(1, 6))
        extra = {"d_k": draw(st.integers(1, 3)), "d_v": d_v}
    else:
        d_model, extra = heads * draw(st.integers(1, 3)), {}
    dims = {"seq_len": draw(st.integers(1, 4)), "d_model": d_model, "d_ff": draw(st.integers(1, 4)),
            "heads": heads, **extra}
    causal = draw(st.booleans())
    n, batch = dims["seq_len"], draw(st.integers(1, 3)) if "batch" in on else 0
    data = {
        "layout": "torch" if "torch" in on else "math",
        "dims": dims,
        "block": {"norm_position": draw(st.sampled_from(["pre", "post"])),
                  "norm": draw(st.sampled_from(["layernorm", "rmsnorm"])), "eps": "1/100",
                  "activation": draw(st.sampled_from(["relu", "gelu", "swiglu"])),
                  "attention_scale": draw(st.sampled_from(["sqrt_dk", "none"])),
                  "causal": causal, "bias": draw(st.booleans()), "out_proj": out_proj},
        "random": {"seed": draw(st.integers(0, 10**6)), "low": -2, "high": 2},
        "inputs": {},
    }

    k, v = heads * dims.get("d_k", d_model // heads), heads * dims.get("d_v", d_model // heads)
    shapes = {"W_Q": (d_model, k), **({"W_O": (v, d_model)} if out_proj else {})}  # math layout (in, out)
    for name, (r, c) in shapes.items():  # given in the layout's orientation: torch writes (out, in)
        m = [[draw(st.integers(-2, 2)) for _ in range(c)] for _ in range(r)]
        data.setdefault("weights", {})[name] = [list(col) for col in zip(*m)] if "torch" in on else m
        data.setdefault("_math", {})[name] = m

    def pad_row():  # every query keeps a key: a causal row keeps key 0, another row any one key
        row = [draw(st.booleans()) for _ in range(n)]
        row[0 if causal else draw(st.integers(0, n - 1))] = False
        return row
    if "padding" in on:
        rows = [pad_row() for _ in range(max(batch, 1))]
        data["inputs"]["key_padding_mask"] = rows if batch else rows[0]
    if batch and ("padding" not in on or draw(st.booleans())):  # else X drawn, the batch from the mask
        data["inputs"]["X"] = [[[draw(st.integers(-2, 2)) for _ in range(d_model)] for _ in range(n)]
                               for _ in range(batch)]
    if "dropout" in on:
        probe = spec.from_mapping({k: x for k, x in data.items() if k != "_math"})
        targets = [s for s in step_names(probe.dims, probe.options) if step_kind(s) in DROPOUT_KINDS]
        chosen = draw(st.lists(st.sampled_from(targets), unique=True, min_size=1, max_size=3))
        data["dropout"] = {"p": draw(st.sampled_from([0, "1/10", "1/2", "2/3"])), "masks": {
            name: "random" if draw(st.booleans()) else
            [[draw(st.integers(0, 1)) for _ in range(step_shape(name, probe.dims)[1])]
             for _ in range(step_shape(name, probe.dims)[0])] for name in chosen}}
    math_weights = data.pop("_math")
    s = spec.from_mapping(data, "<hypothesis>")
    for name, m in math_weights.items():
        assert s.params[name].tolist() == m, name   # the layout read as written
    return s


def agree_on_every_step(s):
    trace = block.forward(s)
    for backend in (numeric.forward(s), torch_ref.forward(s)):
        assert list(backend) == trace.names()
        for step in trace:
            want = np.array(step.value.floats())
            scale = max(1.0, np.abs(want[np.isfinite(want)]).max(initial=0))
            assert verify.max_abs_diff(want, backend[step.name]) <= TOL * scale, step.name


@given(attention_specs())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_exact_equals_numpy_and_torch_on_every_step(s):
    agree_on_every_step(s)


COMBINATIONS = [frozenset(f for f, bit in zip(FEATURES, bits) if bit)
                for bits in itertools.product((0, 1), repeat=len(FEATURES))]


@pytest.mark.parametrize("features", COMBINATIONS, ids=lambda f: "+".join(sorted(f)) or "none")
@given(data=st.data())
@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_combination_of_the_options_agrees(features, data):
    """Each of the 64 combinations of widths, padding, batch, dropout, layout torch and
    out_proj false at least once per run (hypothesis draws the rest)."""
    s = data.draw(attention_specs(features))
    assert bool(s.dims.batch) == ("batch" in features) and s.options.padding == ("padding" in features)
    assert bool(s.options.dropout) == ("dropout" in features)
    assert s.options.out_proj == ("no_out_proj" not in features)
    agree_on_every_step(s)


def two_lengths():
    """Two sequences of lengths 3 and 2 (the second padded with a row of 9s), two heads."""
    return spec.from_mapping({
        "dims": {"d_model": 4, "d_ff": 2, "heads": 2},
        "block": {"norm_position": "pre", "activation": "gelu", "eps": "1/100", "bias": True},
        "random": {"seed": 11},
        "inputs": {"X": [[[1, 0, 2, -1], [0, 1, 1, 1], [2, -1, 0, 1]],
                         [[1, 1, 0, 0], [-1, 2, 1, 0], [9, 9, 9, 9]]],
                   "key_padding_mask": [[False, False, False], [False, False, True]]}})


def test_a_batch_of_two_lengths_matches_torchs_batched_multihead_attention():
    """A batched nn.MultiheadAttention with key_padding_mask, built here from the spec's weights,
    gives every sequence's attn.out and per-head weights; the padded key gets weight 0."""
    s = two_lengths()
    t = block.forward(s)
    p = {k: torch.tensor(np.array(v.tolist(), dtype=float)) for k, v in s.params.items()}
    mha = torch.nn.MultiheadAttention(4, 2, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([p["W_Q"].T, p["W_K"].T, p["W_V"].T]))
        mha.in_proj_bias.copy_(torch.cat([p["b_Q"][0], p["b_K"][0], p["b_V"][0]]))
        mha.out_proj.weight.copy_(p["W_O"].T)
        mha.out_proj.bias.copy_(p["b_O"][0])
        n1 = torch.stack([torch.tensor(t[f"b{i}.norm1"].value.floats(), dtype=torch.float64) for i in range(2)])
        out, w = mha(n1, n1, n1, key_padding_mask=torch.tensor([[False, False, False], [False, False, True]]),
                     need_weights=True, average_attn_weights=False)
    for b in range(2):
        np.testing.assert_allclose(t[f"b{b}.attn.out"].value.floats(), out[b].numpy(), atol=1e-12)
        for h in range(2):
            np.testing.assert_allclose(t[f"b{b}.attn.h{h}.weights"].value.floats(), w[b, h].numpy(), atol=1e-12)
    assert all(t[f"b1.attn.h{h}.weights"].value[i, 2].q == 0 for h in range(2) for i in range(3))
    layer = torch_ref.encoder_layer_output(s)  # the whole batch through nn.TransformerEncoderLayer
    ours = np.stack([t[f"b{b}.output"].value.floats() for b in range(2)])
    np.testing.assert_allclose(layer, ours, atol=1e-12)


def test_other_widths_match_scaled_dot_product_attention():
    """d_k = 2, d_v = 3 from d_model = 3 with two heads: torch's SDPA per head, by hand."""
    s = spec.from_mapping({"dims": {"seq_len": 3, "d_model": 3, "d_ff": 2, "heads": 2, "d_k": 2, "d_v": 3},
                           "block": {"causal": True, "eps": "1/100"}, "random": {"seed": 5},
                           "inputs": {"key_padding_mask": [False, True, False]}})
    t = block.forward(s)
    q, k, v = (torch.tensor(t[f"attn.{n}"].value.floats(), dtype=torch.float64) for n in "qkv")
    allowed = torch.tensor([[True, False, False], [True, False, False], [True, False, True]])
    for h in range(2):
        o = torch.nn.functional.scaled_dot_product_attention(
            q[:, 2 * h:2 * h + 2], k[:, 2 * h:2 * h + 2], v[:, 3 * h:3 * h + 3], attn_mask=allowed)
        np.testing.assert_allclose(t[f"attn.h{h}.out"].value.floats(), o.numpy(), atol=1e-12)


def test_dropout_is_torchs_inverted_dropout():
    """torch's training-mode dropout keeps an entry as x / (1 − p): read its mask off one draw,
    give that mask to the spec, and the dropped step is torch's output."""
    data = {"dims": {"d_model": 4, "d_ff": 3, "heads": 2}, "block": {"activation": "gelu", "eps": "1/100"},
            "random": {"seed": 11}, "inputs": {"X": [[1, 0, 2, -1], [0, 1, 1, 1]]}}
    act = torch.tensor(block.forward(spec.from_mapping(data))["ffn.act"].value.floats(), dtype=torch.float64)
    torch.manual_seed(0)
    out = torch.nn.functional.dropout(act, p=0.5, training=True)
    keep = (out != 0).to(torch.int64).tolist()
    assert 0 in sum(keep, []) and 1 in sum(keep, [])
    t = block.forward(spec.from_mapping({**data, "dropout": {"p": "1/2", "masks": {"ffn.act": keep}}}))
    np.testing.assert_allclose(t["ffn.act.dropped"].value.floats(), out.numpy(), atol=1e-12)
    assert t["ffn.out"].inputs[0] == "ffn.act.dropped"


@pytest.mark.parametrize("name", ["padding", "widths"])
def test_verify_runs_the_module_and_reports(name):
    s = two_lengths() if name == "padding" else spec.from_mapping(
        {"dims": {"seq_len": 2, "d_model": 3, "d_ff": 1, "heads": 1, "d_k": 2, "d_v": 2}, "random": {"seed": 1},
         "block": {"eps": "1/100"}})
    r = verify.run(s)
    assert r.ok and r.backends["torch"].available
    assert ("nn.TransformerEncoderLayer" in r.backends["torch"].note) == (name == "padding")


def test_the_padding_batch_example_is_seed_002s_setting():
    """Seed 002: Pre-LN, nn.LayerNorm(eps=1e-5), biases, GELU, MultiheadAttention with
    key_padding_mask on a batch of two; here on small integers, the 2-token sequence padded."""
    s = spec.load("padding-batch")
    o = s.options
    assert (o.norm_position, o.norm, o.activation, o.bias, o.causal) == ("pre", "layernorm", "gelu", True, False)
    assert str(o.eps) == "1/100000" and s.dims.batch == 2 and s.key_padding_mask[1] == (False, False, True)
    assert all(e == int(e) for X in s.batch for e in X) and all(e == int(e) for m in s.params.values() for e in m)
    t = block.forward(s)
    assert all(t[f"b1.attn.h{h}.weights"].value[i, 2].q == 0 for h in range(2) for i in range(3))
    r = verify.run(s)
    assert r.ok and "nn.TransformerEncoderLayer" in r.backends["torch"].note
