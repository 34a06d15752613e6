"""torch_ref (real torch.nn modules) against numeric (NumPy), step by step, to 1e-9.

torch is imported at the top on purpose: CI installs it (`pip install torch==2.13.0`), and a
missing torch must fail this module loudly, never skip it.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from symblock.reference import numeric, torch_ref
from symblock.engine import spec as specs
from symblock.engine.steps import batch_prefixes, computed_steps, step_names
from strategies import matrix, numbers

TOL = 1e-9


def assert_same_steps(got: dict, want: dict, where: str = "") -> None:
    assert list(got) == list(want), f"{where}: step names differ"
    for name in want:
        g, w = got[name], want[name]
        assert g.dtype == np.float64, f"{where}: {name} is {g.dtype}"
        assert g.shape == w.shape, f"{where}: {name} shape {g.shape} != {w.shape}"
        np.testing.assert_allclose(g, w, rtol=TOL, atol=TOL, err_msg=f"{where}: step {name}")


def expected_names(s) -> list[str]:
    keep = set(computed_steps(s.dims, s.options, set(s.given))) | set(s.given)
    return [n for n in step_names(s.dims, s.options) if n in keep]


def check_encoder_layer(s, want_output: np.ndarray) -> bool:
    """Both paths of nn.TransformerEncoderLayer agree with `output` where the layer applies."""
    slow = torch_ref.encoder_layer_output(s)
    if slow is None:
        assert torch_ref.encoder_layer_unsupported(s) is not None
        assert torch_ref.encoder_layer_output(s, fast_path=True) is None
        return False
    fast = torch_ref.encoder_layer_output(s, fast_path=True)
    np.testing.assert_allclose(slow, want_output, rtol=TOL, atol=TOL, err_msg="encoder layer (slow)")
    np.testing.assert_allclose(fast, want_output, rtol=TOL, atol=TOL, err_msg="encoder layer (fast)")
    return True


# ---------------------------------------------------------------- built-in examples

# a decoder layer's torch path is nn.TransformerDecoderLayer (torch_cross), tested below
SELF_ATTENTION = [n for n in specs.block_example_names() if not specs.load(n).options.cross_attention]


@pytest.mark.parametrize("name", SELF_ATTENTION)
def test_example_matches_numpy_on_every_step(name):
    s = specs.load(name)
    got = torch_ref.forward(s)
    assert list(got) == expected_names(s)
    want = numeric.forward(s)
    assert_same_steps(got, want, name)
    outputs = [want[p + "output"] for p in batch_prefixes(s.dims)]  # a batch: b0.output, …
    check_encoder_layer(s, np.stack(outputs) if s.dims.batch else outputs[0])


def test_decoder_layer_example_matches_numpy_through_nn_transformer_decoder_layer():
    from symblock.reference import numeric_cross, torch_cross
    s = specs.load("decoder-layer")
    assert s.options.cross_attention and torch_cross.unsupported(s) is None
    got, want = torch_cross.forward(s), numeric_cross.forward(s)
    assert "output" in got and "cross.out" in want
    for name, value in got.items():
        np.testing.assert_allclose(value, want[name], rtol=TOL, atol=TOL, err_msg=name)


def test_seed_example_values():
    """The article's worked example: Post-LN turns every 2-wide row into ±1 (γ = 1, β = 0)."""
    got = torch_ref.forward(specs.load("seed-post-ln"))
    assert "attn.q" not in got  # cut off by the given attn.out
    np.testing.assert_allclose(got["attn.out"], [[1.401, 0.599], [1.504, 0.752], [1.576, 0.716]])
    np.testing.assert_allclose(got["norm1.std"], [[0.901], [0.124], [0.43]], rtol=TOL)
    np.testing.assert_allclose(got["output"], [[1, -1], [-1, 1], [1, -1]], rtol=TOL, atol=TOL)


# ---------------------------------------------------------------- property test

GAMMA = numbers(3)
BETA = numbers(3)


@st.composite
def spec_dicts(draw, encoder_layer: bool = False) -> dict:
    """Random spec dicts over every option; `encoder_layer=True` keeps to the configurations
    nn.TransformerEncoderLayer can run."""
    d = draw(st.integers(1, 8))
    heads = draw(st.sampled_from([h for h in range(1, d + 1) if d % h == 0]))
    n, f = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    block = {
        "norm_position": draw(st.sampled_from(["post", "pre"])),
        "norm": draw(st.sampled_from(["layernorm", "rmsnorm"])),
        "eps": draw(st.sampled_from([0, "1e-5"])),
        "activation": draw(st.sampled_from(["relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu"])),
        "attention_scale": draw(st.sampled_from(["sqrt_dk", "none"])),
        "causal": draw(st.booleans()),
        "bias": draw(st.booleans()),
        "out_proj": draw(st.booleans()),
    }
    if block["norm_position"] == "pre":
        block["final_norm"] = draw(st.booleans())
    if encoder_layer:
        block.update(norm="layernorm", activation=draw(st.sampled_from(["relu", "gelu"])),
                     attention_scale="sqrt_dk", out_proj=True, final_norm=False)
    if block["norm"] == "layernorm" and d == 1:
        block["eps"] = "1e-5"  # a one-wide row always has variance 0
    layout = draw(st.sampled_from(["math", "torch"]))
    bound = draw(st.sampled_from([2, 5, 9]))
    weights: dict = {}
    for name, shape in (("W_Q", (d, d)), ("W_1", (d, f))):  # some weights given, in the layout
        if name == "W_1" and d == 1 and layout == "torch":
            continue  # spec.py reads a 1-row weight as a vector and never transposes it
        if draw(st.booleans()):
            m = draw(matrix(*shape, bound))
            weights[name] = m if layout == "math" else [list(c) for c in zip(*m)]
    lns = ["ln1", "ln2"] + (["ln_final"] if block.get("final_norm") else [])
    for ln in lns:
        if draw(st.booleans()):
            weights[ln] = {"gamma": draw(st.lists(GAMMA, min_size=d, max_size=d))}
            if block["norm"] == "layernorm":
                weights[ln]["beta"] = draw(st.lists(BETA, min_size=d, max_size=d))
    inputs = {"X": draw(matrix(n, d, bound))} if draw(st.booleans()) else {}
    return {"layout": layout, "dims": {"seq_len": n, "d_model": d, "d_ff": f, "heads": heads},
            "block": block, "weights": weights, "inputs": inputs,
            "random": {"seed": draw(st.integers(0, 10**6)), "low": -bound, "high": bound}}


def well_conditioned(s, steps: dict) -> bool:
    """With ε = 0 a tiny spread is amplified without bound: keep std / rms away from 0."""
    if s.options.eps != 0:
        return True
    stat = "std" if s.options.norm == "layernorm" else "rms"
    return all(np.all(v > 1e-2) for k, v in steps.items() if k.endswith(f".{stat}"))


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(spec_dicts())
def test_random_specs_match_numpy_on_every_step(data):
    s = specs.from_mapping(data, "<hypothesis>")
    try:
        want = numeric.forward(s)
    except ZeroDivisionError:  # zero variance with ε = 0: the spec is refused, not compared
        assume(False)
    assume(well_conditioned(s, want))
    got = torch_ref.forward(s)
    assert_same_steps(got, want, repr(data))
    check_encoder_layer(s, want["output"])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(spec_dicts(encoder_layer=True))
def test_random_encoder_layers_match_numpy(data):
    s = specs.from_mapping(data, "<hypothesis>")
    try:
        want = numeric.forward(s)
    except ZeroDivisionError:
        assume(False)
    assume(well_conditioned(s, want))
    assert check_encoder_layer(s, want["output"])


# ---------------------------------------------------------------- the traps, one by one

def block(d: int = 4, heads: int = 2, n: int = 3, seed: int = 11, **opts) -> dict:
    """A spec dict with random weights; `opts` is the `block:` section."""
    return {"dims": {"seq_len": n, "d_model": d, "d_ff": 5, "heads": heads},
            "block": opts, "random": {"seed": seed}}


def test_rmsnorm_eps_is_passed_explicitly():
    """nn.RMSNorm(eps=None) adds machine epsilon: with tiny inputs that is visible."""
    s = specs.from_mapping({"dims": {"seq_len": 1, "d_model": 2, "d_ff": 1, "heads": 1},
                            "block": {"norm_position": "pre", "norm": "rmsnorm", "eps": 0},
                            "weights": {"W_Q": [[0, 0], [0, 0]], "W_K": [[0, 0], [0, 0]],
                                        "W_V": [[0, 0], [0, 0]], "W_O": [[0, 0], [0, 0]],
                                        "W_1": [[0], [0]], "W_2": [[0, 0]]},
                            "inputs": {"X": [["1e-8", "-1e-8"]]}})
    got = torch_ref.forward(s)
    np.testing.assert_allclose(got["norm1"], [[1, -1]], rtol=1e-12)
    assert_same_steps(got, numeric.forward(s))


def test_zero_variance_with_eps_zero_is_a_clear_error():
    s = specs.from_mapping({"dims": {"seq_len": 1, "d_model": 3, "d_ff": 1, "heads": 1},
                            "block": {"norm_position": "pre", "eps": 0},
                            "inputs": {"X": [["1/10", "1/10", "1/10"]]}, "random": {"seed": 1}})
    with pytest.raises(torch_ref.ZeroVarianceError, match="norm1: row 1 "):
        torch_ref.forward(s)


@pytest.mark.parametrize("scale", ["sqrt_dk", "none"])
@pytest.mark.parametrize("out_proj", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_attention_mappings_onto_multihead_attention(scale, out_proj, bias):
    """Pre-scaled W_Q, identity W_O and the boolean causal mask: the module check inside
    forward passes, and the captured steps agree with NumPy."""
    s = specs.from_mapping(block(attention_scale=scale, out_proj=out_proj, bias=bias, causal=True,
                                 d=6, heads=3, n=4))
    got = torch_ref.forward(s)
    assert np.all(np.isneginf(got["attn.h2.masked"][np.triu_indices(4, 1)]))
    assert np.all(got["attn.h2.weights"][np.triu_indices(4, 1)] == 0)
    assert_same_steps(got, numeric.forward(s))


def test_the_module_really_is_checked(monkeypatch):
    """A MultiheadAttention that disagrees with the captured steps makes forward fail."""
    real = torch.nn.MultiheadAttention.forward
    calls = []

    def shifted(self, *args, **kwargs):
        out, weights = real(self, *args, **kwargs)
        calls.append(kwargs)
        return out + 1e-6, weights

    monkeypatch.setattr(torch.nn.MultiheadAttention, "forward", shifted)
    with pytest.raises(torch_ref.ModuleMismatch, match="attn.out"):
        torch_ref.forward(specs.from_mapping(block(causal=True)))
    assert calls and calls[0]["need_weights"] and calls[0]["average_attn_weights"] is False
    assert calls[0]["attn_mask"].dtype == torch.bool


def test_given_steps_inside_attention_and_norm():
    """Given steps cut the graph; the norm is then composed from the given statistics."""
    data = block(norm_position="pre", causal=True, d=2, heads=1, n=2, eps="1e-5")
    data["given"] = {"attn.h0.weights": [[1, 0], ["1/4", "3/4"]], "norm2.std": [[2], ["1/2"]]}
    s = specs.from_mapping(data)
    got = torch_ref.forward(s)
    assert "attn.h0.masked" not in got and "norm2.var" not in got
    np.testing.assert_array_equal(got["attn.h0.weights"], [[1, 0], [0.25, 0.75]])
    assert list(got) == expected_names(s)
    assert_same_steps(got, numeric.forward(s))
    assert torch_ref.encoder_layer_output(s) is None


# ---------------------------------------------------------------- nn.TransformerEncoderLayer

@pytest.mark.parametrize("position", ["post", "pre"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("causal", [False, True])
def test_encoder_layer_fast_and_slow_paths(monkeypatch, position, activation, causal):
    """With biases and an even number of heads, eval + no_grad takes the fused kernel;
    autograd keeps the module-by-module path. Both match NumPy."""
    s = specs.from_mapping(block(norm_position=position, activation=activation, causal=causal,
                                 bias=True, eps="1e-5"))
    want = numeric.forward(s)["output"]
    fused = torch._transformer_encoder_layer_fwd
    calls = []

    def counting(*args, **kwargs):
        calls.append(1)
        return fused(*args, **kwargs)

    monkeypatch.setattr(torch, "_transformer_encoder_layer_fwd", counting)
    slow = torch_ref.encoder_layer_output(s)
    assert calls == []
    fast = torch_ref.encoder_layer_output(s, fast_path=True)
    assert calls == [1]
    np.testing.assert_allclose(slow, want, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(fast, want, rtol=TOL, atol=TOL)


def test_encoder_layer_without_bias_drops_layernorm_beta(monkeypatch):
    """No bias vectors and β = 0: the layer is built with bias=False (no β either); a nonzero β
    forces bias=True with zero linear biases."""
    built = []
    real_init = torch.nn.TransformerEncoderLayer.__init__

    def init(self, *args, **kwargs):
        built.append(kwargs["bias"])
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(torch.nn.TransformerEncoderLayer, "__init__", init)
    plain = specs.from_mapping(block(bias=False, eps="1e-5"))
    np.testing.assert_allclose(torch_ref.encoder_layer_output(plain),
                               numeric.forward(plain)["output"], rtol=TOL, atol=TOL)
    data = block(bias=False, eps="1e-5")
    data["weights"] = {"ln1": {"beta": [1, 0, -1, "1/2"]}}
    with_beta = specs.from_mapping(data)
    np.testing.assert_allclose(torch_ref.encoder_layer_output(with_beta),
                               numeric.forward(with_beta)["output"], rtol=TOL, atol=TOL)
    assert built == [False, True]


@pytest.mark.parametrize("opts", [{"norm": "rmsnorm"}, {"activation": "gelu_tanh"},
                                  {"activation": "swiglu"}, {"attention_scale": "none"},
                                  {"out_proj": False},
                                  {"norm_position": "pre", "final_norm": True}])
def test_encoder_layer_only_where_it_maps(opts):
    s = specs.from_mapping(block(**opts))
    assert torch_ref.encoder_layer_unsupported(s)
    assert torch_ref.encoder_layer_output(s) is None


# ---------------------------------------------------------------- torch stays optional

def test_import_symblock_never_imports_torch():
    code = ("import sys, symblock, symblock.engine.spec, symblock.reference.numeric, symblock.reference.torch_ref; "
            "symblock.engine.spec.load('seed-post-ln'); assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_torch_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    s = specs.load("seed-post-ln")
    with pytest.raises(ImportError, match=r"torch is not installed; pip install symblock\[torch\]"):
        torch_ref.forward(s)
    with pytest.raises(torch_ref.TorchNotInstalled):
        torch_ref.encoder_layer_output(specs.from_mapping(block()))
