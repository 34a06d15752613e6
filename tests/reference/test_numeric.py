"""The NumPy float64 path against numbers worked out by hand, and against torch primitives.

Expected values below come from the conventions in DESIGN.md worked on paper (softmax entries
as 1/(1+e^k), Φ(1) for GELU, ...), never from this code's own output."""
from __future__ import annotations

import math

import numpy as np
import pytest

from symblock.reference import numeric
from symblock.engine import spec, steps

E = math.e
I2 = [[1, 0], [0, 1]]
Z2 = [[0, 0], [0, 0]]
PHI1 = 0.8413447460685429  # standard normal CDF at 1 (table value 0.8413447461)


def run(data: dict) -> dict[str, np.ndarray]:
    return numeric.forward(spec.from_mapping(data))


def close(actual, expected, tol=1e-12):
    np.testing.assert_allclose(actual, np.array(expected, dtype=float), rtol=tol, atol=tol)


def col(values):
    return [[v] for v in values]


# ---------------------------------------------------------------- the seed example

SEED_STEPS = ["x", "attn.out", "resid1", "norm1.mean", "norm1.var", "norm1.std", "norm1",
              "ffn.hidden", "ffn.act", "ffn.out", "resid2",
              "norm2.mean", "norm2.var", "norm2.std", "norm2", "output"]


def check_seed(out):
    assert list(out) == SEED_STEPS  # attention cut off by the given attn.out; forward order
    close(out["attn.out"], [[1.401, 0.599], [1.504, 0.752], [1.576, 0.716]])
    close(out["resid1"], [[2.401, 0.599], [1.504, 1.752], [2.576, 1.716]])
    close(out["norm1.mean"], col([1.5, 1.628, 2.146]))
    close(out["norm1.var"], col([0.901 ** 2, 0.124 ** 2, 0.43 ** 2]))
    close(out["norm1.std"], col([0.901, 0.124, 0.43]))
    close(out["norm1"], [[1, -1], [-1, 1], [1, -1]])
    close(out["ffn.hidden"], [[1, -1, 2], [-1, 1, -2], [1, -1, 2]])
    close(out["ffn.act"], [[1, 0, 2], [0, 1, 0], [1, 0, 2]])
    close(out["ffn.out"], [[3, 2], [0, 1], [3, 2]])
    close(out["resid2"], [[4, 1], [-1, 2], [4, 1]])
    close(out["norm2.mean"], col([2.5, 0.5, 2.5]))
    close(out["norm2.var"], col([2.25, 2.25, 2.25]))
    close(out["norm2.std"], col([1.5, 1.5, 1.5]))
    close(out["norm2"], [[1, -1], [-1, 1], [1, -1]])
    close(out["output"], [[1, -1], [-1, 1], [1, -1]])


def test_seed_example_by_hand():
    out = numeric.forward(spec.load("seed-post-ln"))
    check_seed(out)
    for name, value in out.items():
        assert value.dtype == np.float64
        assert value.shape == steps.step_shape(name, spec.load("seed-post-ln").dims), name


SEED = {
    "dims": {"seq_len": 3, "d_model": 2, "d_ff": 3, "heads": 1},
    "inputs": {"X": [[1, 0], [0, 1], [1, 1]]},
    "given": {"attn.out": [[1.401, 0.599], [1.504, 0.752], [1.576, 0.716]]},
}


def test_torch_layout_weights_are_transposed_on_load():
    out = run({**SEED, "layout": "torch",
               "weights": {"W_1": [[1, 0], [0, 1], [1, -1]], "W_2": [[1, 0, 1], [0, 1, 1]]}})
    check_seed(out)


def test_given_step_not_needed_is_still_reported_and_cuts_nothing_else():
    # attn.h0.weights is given but only fed attn.out, which is given too: reported as given,
    # while attn.v (needed by nothing computed) stays absent.
    out = run({**SEED, "weights": {"W_1": [[1, 0, 1], [0, 1, -1]], "W_2": [[1, 0], [0, 1], [1, 1]]},
               "given": {**SEED["given"], "attn.h0.weights": [[1, 0, 0], [0.5, 0.5, 0], [0, 0, 1]]}})
    close(out["attn.h0.weights"], [[1, 0, 0], [0.5, 0.5, 0], [0, 0, 1]])
    assert "attn.v" not in out and "attn.h0.out" not in out
    close(out["output"], [[1, -1], [-1, 1], [1, -1]])


# ---------------------------------------------------------------- attention

def test_causal_two_heads_by_hand():
    # Q = K = V = X; head h uses column h; d_head = 1 so `scaled` equals `scores`.
    out = run({"dims": {"d_ff": 1, "heads": 2}, "block": {"causal": True},
               "weights": {"W_Q": I2, "W_K": I2, "W_V": I2, "W_O": I2, "W_1": [[0], [0]], "W_2": [[0, 0]]},
               "inputs": {"X": [[1, 2], [3, 1]]}})
    w = 1 / (1 + E ** 6)        # row 1 of head 0: softmax([3, 9])[0]
    s = 1 / (1 + E ** -1)       # row 1 of head 1: softmax([2, 1])[0]
    close(out["attn.h0.scores"], [[1, 3], [3, 9]])
    close(out["attn.h0.scaled"], [[1, 3], [3, 9]])  # 1/sqrt(d_head) = 1, not 1/sqrt(d_model)
    assert out["attn.h0.masked"][0, 1] == -np.inf
    close(out["attn.h0.masked"][1], [3, 9])
    close(out["attn.h0.weights"], [[1, 0], [w, 1 - w]])
    assert out["attn.h0.weights"][0, 1] == 0.0  # masked entries get exactly 0 weight
    close(out["attn.h1.scores"], [[4, 2], [2, 1]])
    close(out["attn.h1.weights"], [[1, 0], [s, 1 - s]])
    close(out["attn.h0.out"], [[1], [w * 1 + (1 - w) * 3]])
    close(out["attn.h1.out"], [[2], [s * 2 + (1 - s) * 1]])
    close(out["attn.concat"], [[1, 2], [3 - 2 * w, 1 + s]])
    close(out["attn.out"], [[1, 2], [3 - 2 * w, 1 + s]])
    close(out["resid1"], [[2, 4], [6 - 2 * w, 2 + s]])
    close(out["norm1"], [[-1, 1], [1, -1]])


SCALE = {"dims": {"d_ff": 1}, "inputs": {"X": [[1, 1], [0, 1]]},
         "weights": {"W_Q": I2, "W_K": I2, "W_V": I2, "W_O": [[0, 1], [1, 0]],
                     "W_1": [[0], [0]], "W_2": [[0, 0]]}}


def test_scale_by_sqrt_d_head():
    out = run(SCALE)
    r = 1 / math.sqrt(2)
    w = 1 / (1 + E ** -r)  # softmax([sqrt2, 1/sqrt2])[0]
    close(out["attn.h0.scores"], [[2, 1], [1, 1]])
    close(out["attn.h0.scaled"], [[2 * r, r], [r, r]])
    close(out["attn.h0.weights"], [[w, 1 - w], [0.5, 0.5]])
    close(out["attn.h0.out"], [[w, 1], [0.5, 1]])
    close(out["attn.out"], [[1, w], [1, 0.5]])  # W_O swaps the columns
    assert "attn.concat" not in out and "attn.h0.masked" not in out


def test_no_attention_scale():
    out = run({**SCALE, "block": {"attention_scale": "none"}})
    s = 1 / (1 + E ** -1)
    assert "attn.h0.scaled" not in out
    close(out["attn.h0.weights"], [[s, 1 - s], [0.5, 0.5]])
    close(out["attn.h0.out"], [[s, 1], [0.5, 1]])


def test_no_output_projection():
    weights = {k: v for k, v in SCALE["weights"].items() if k != "W_O"}
    out = run({**SCALE, "weights": weights, "block": {"out_proj": False}})
    w = 1 / (1 + E ** -(1 / math.sqrt(2)))
    close(out["attn.out"], [[w, 1], [0.5, 1]])  # the head output itself
    close(out["resid1"], [[1 + w, 2], [0.5, 2]])


def test_given_mask_with_minus_infinity():
    # W_Q, W_K feed only the given mask, so they may be left out.
    out = run({"dims": {"d_ff": 1}, "block": {"causal": True}, "inputs": {"X": [[1, 0], [0, 1]]},
               "weights": {"W_V": I2, "W_O": I2, "W_1": [[0], [0]], "W_2": [[0, 0]]},
               "given": {"attn.h0.masked": [[0, "-oo"], [1, 2]]}})
    assert "attn.q" not in out and "attn.h0.scores" not in out
    assert out["attn.h0.masked"][0, 1] == -np.inf
    s = 1 / (1 + E)
    close(out["attn.h0.weights"], [[1, 0], [s, 1 - s]])
    close(out["attn.out"], [[1, 0], [s, 1 - s]])


def test_biases_gamma_and_beta_by_hand():
    out = run({"block": {"bias": True}, "inputs": {"X": [[1, 2]]},
               "weights": {"W_Q": Z2, "b_Q": [1, 2], "W_K": Z2, "b_K": [3, -1],
                           "W_V": I2, "b_V": [1, 1], "W_O": I2, "b_O": [0, 1],
                           "W_1": I2, "b_1": [2, -3], "W_2": [[1, 2], [3, 4]], "b_2": [1, 0],
                           "ln1": {"gamma": [2, 3], "beta": [1, -1]}}})
    close(out["attn.q"], [[1, 2]])
    close(out["attn.k"], [[3, -1]])
    close(out["attn.h0.scores"], [[1]])  # 1*3 + 2*(-1)
    close(out["attn.h0.scaled"], [[1 / math.sqrt(2)]])
    close(out["attn.v"], [[2, 3]])
    close(out["attn.out"], [[2, 4]])
    close(out["resid1"], [[3, 6]])
    close(out["norm1.mean"], [[4.5]])
    close(out["norm1.std"], [[1.5]])
    close(out["norm1"], [[-1 * 2 + 1, 1 * 3 - 1]])
    close(out["ffn.hidden"], [[1, -1]])
    close(out["ffn.act"], [[1, 0]])
    close(out["ffn.out"], [[2, 2]])
    close(out["resid2"], [[1, 4]])
    close(out["norm2.mean"], [[2.5]])
    close(out["output"], [[-1, 1]])


# ---------------------------------------------------------------- norms

def quiet(X, **block):
    """A post-LN block whose attention and FFN add nothing: resid1 = X, resid2 = norm1."""
    return {"block": block, "inputs": {"X": X}, "dims": {"d_ff": 1},
            "weights": {"W_Q": Z2, "W_K": Z2, "W_V": Z2, "W_O": Z2, "W_1": [[0], [0]], "W_2": [[0, 0]]}}


def test_layernorm_eps_inside_the_sqrt():
    data = quiet([[1, 3]], eps=3)
    data["weights"]["ln1"] = {"gamma": [2, 1], "beta": [1, 0]}
    out = run(data)
    close(out["norm1.var"], [[1]])  # population variance: ((−1)² + 1²)/2
    close(out["norm1.std"], [[2]])  # sqrt(1 + 3), not sqrt(1) + 3
    close(out["norm1"], [[-0.5 * 2 + 1, 0.5 * 1 + 0]])


def test_rmsnorm_by_hand():
    data = quiet([[3, 4], [-4, 3]], norm="rmsnorm", eps=3.5)
    data["weights"]["ln1"] = {"gamma": [2, 1]}
    out = run(data)
    assert [n for n in out if n.startswith("norm1")] == ["norm1.ms", "norm1.rms", "norm1"]
    close(out["norm1.ms"], col([12.5, 12.5]))
    close(out["norm1.rms"], col([4, 4]))  # sqrt(12.5 + 3.5)
    close(out["norm1"], [[1.5, 1], [-2, 0.75]])
    close(out["norm2.ms"], col([1.625, 2.28125]))
    close(out["norm2"], [[1.5 / math.sqrt(5.125), 1 / math.sqrt(5.125)],
                         [-2 / math.sqrt(5.78125), 0.75 / math.sqrt(5.78125)]])


@pytest.mark.parametrize("X, norm, row", [
    ([[1, 2], [2, 2]], "layernorm", 2),
    ([[0, 0], [1, 2]], "rmsnorm", 1),
])
def test_zero_variance_row_with_eps_0_raises(X, norm, row):
    with pytest.raises(ZeroDivisionError, match=rf"^norm1: row {row}\b"):  # counted from 1
        run(quiet(X, norm=norm))
    out = run(quiet(X, norm=norm, eps="1/100000"))  # eps > 0: a zero row normalises to 0
    close(out["norm1"][row - 1], [0, 0])


def test_constant_row_that_does_not_average_exactly_still_raises():
    # 0.1 + 0.1 + 0.1 != 0.3 in binary: the variance must still come out exactly 0
    data = quiet([[0.1, 0.1, 0.1]])
    data["weights"] = {"W_Q": [[0] * 3] * 3, "W_K": [[0] * 3] * 3, "W_V": [[0] * 3] * 3,
                       "W_O": [[0] * 3] * 3, "W_1": [[0]] * 3, "W_2": [[0, 0, 0]]}
    with pytest.raises(ZeroDivisionError, match=r"^norm1: row 1\b"):
        run(data)


# ---------------------------------------------------------------- Pre-LN wiring

PRE = {"dims": {"d_ff": 2}, "block": {"norm_position": "pre", "causal": True},
       "inputs": {"X": [[1, 2], [4, 3]]},
       "weights": {"W_Q": Z2, "W_K": Z2, "W_V": I2, "W_O": I2, "W_1": I2, "W_2": [[2, 1], [3, 5]]}}


def test_pre_ln_by_hand():
    s = spec.from_mapping({**PRE, "block": {**PRE["block"], "final_norm": True}})
    out = numeric.forward(s)
    assert list(out) == steps.step_names(s.dims, s.options)
    close(out["norm1.mean"], col([1.5, 3.5]))  # norm1 normalises x
    close(out["norm1"], [[-1, 1], [1, -1]])
    close(out["attn.h0.weights"], [[1, 0], [0.5, 0.5]])  # zero scores, causal
    close(out["attn.out"], [[-1, 1], [0, 0]])
    close(out["resid1"], [[0, 3], [4, 3]])  # x + attn(norm1(x))
    close(out["norm2.mean"], col([1.5, 3.5]))
    close(out["norm2.std"], col([1.5, 0.5]))
    close(out["norm2"], [[-1, 1], [1, -1]])
    close(out["ffn.act"], [[0, 1], [1, 0]])
    close(out["ffn.out"], [[3, 5], [2, 1]])
    close(out["resid2"], [[3, 8], [6, 4]])  # resid1 + ffn(norm2(resid1))
    close(out["norm_final.mean"], col([5.5, 5]))
    close(out["norm_final.std"], col([2.5, 1]))
    close(out["output"], [[-1, 1], [1, -1]])


def test_pre_ln_without_final_norm_outputs_resid2():
    out = run(PRE)
    assert not any(n.startswith("norm_final") for n in out)
    close(out["output"], [[3, 8], [6, 4]])


def test_pre_ln_final_norm_zero_variance_names_the_step():
    data = {**PRE, "block": {**PRE["block"], "final_norm": True},
            "weights": {**PRE["weights"], "W_2": [[1, 2], [3, 4]]}}  # resid2 row 1 = [5, 5]
    with pytest.raises(ZeroDivisionError, match=r"^norm_final: row 2\b"):
        run(data)


def test_given_x_without_inputs():
    out = run({**PRE, "inputs": {}, "dims": {"seq_len": 2, "d_model": 2, "d_ff": 2},
               "given": {"x": [[1, 2], [4, 3]]}})
    close(out["x"], [[1, 2], [4, 3]])
    close(out["output"], [[3, 8], [6, 4]])


# ---------------------------------------------------------------- activations

def test_activations_at_known_points():
    x = np.array([[-1.0, 0.0, 1.0, 2.0]])
    close(numeric.relu(x), [[0, 0, 1, 2]])
    close(numeric.gelu(x), [[-(1 - PHI1), 0, PHI1, 2 * 0.9772498680518208]])  # x Φ(x)
    t1 = 0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * (1 + 0.044715)))
    close(numeric.gelu_tanh(x), [[-(1 - t1), 0, t1,
                                  2 * 0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * (2 + 0.044715 * 8)))]])
    assert abs(t1 - 0.841192) < 1e-6 and abs(t1 - PHI1) > 1e-4  # the approximation is not exact
    close(numeric.silu(x), [[-1 / (1 + E), 0, 1 / (1 + E ** -1), 2 / (1 + E ** -2)]])


def test_silu_does_not_overflow():
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        close(numeric.silu(np.array([[-1000.0, 1000.0]])), [[0, 1000]])


@pytest.mark.parametrize("activation, expected", [
    ("relu", [1, 0]),
    ("gelu", [PHI1, -(1 - PHI1)]),
    ("gelu_tanh", [0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * 1.044715)),
                   -0.5 * (1 + math.tanh(-math.sqrt(2 / math.pi) * 1.044715))]),
    ("silu", [1 / (1 + E ** -1), -1 / (1 + E)]),
    ("swiglu", [2 / (1 + E ** -1), 3 / (1 + E)]),        # silu([1, -1]) ⊙ gate [2, -3]
    ("geglu", [2 * PHI1, 3 * (1 - PHI1)]),               # gelu([1, -1]) ⊙ gate [2, -3]
])
def test_each_activation_in_the_block(activation, expected):
    # resid1 = X = [1, -1] → norm1 = [1, -1] → hidden = [1, -1] (W_1 = I), gate = [2, -3]
    weights = {"W_Q": Z2, "W_K": Z2, "W_V": Z2, "W_O": Z2, "W_1": I2, "W_2": I2}
    if activation in ("swiglu", "geglu"):
        weights["W_3"] = [[2, 0], [0, 3]]
    out = run({"block": {"activation": activation}, "inputs": {"X": [[1, -1]]}, "weights": weights})
    close(out["ffn.hidden"], [[1, -1]])
    assert ("ffn.gate" in out) == (activation in ("swiglu", "geglu"))
    close(out["ffn.act"], [expected])
    close(out["ffn.out"], [expected])
    close(out["resid2"], [[1 + expected[0], -1 + expected[1]]])


# ---------------------------------------------------------------- torch cross-check

CONFIGS = [
    {"norm_position": "post", "activation": "gelu", "bias": True, "eps": "1e-5"},
    {"norm_position": "pre", "norm": "rmsnorm", "activation": "swiglu", "causal": True,
     "final_norm": True, "eps": "1/1000"},
    {"norm_position": "pre", "activation": "gelu_tanh", "causal": True, "attention_scale": "none",
     "out_proj": False, "bias": True, "eps": "1e-5"},
    {"norm_position": "post", "norm": "rmsnorm", "activation": "geglu", "eps": 0},
    {"norm_position": "pre", "activation": "silu", "final_norm": True, "eps": "1e-5"},
]


@pytest.mark.parametrize("heads", [1, 2, 4])
@pytest.mark.parametrize("block", CONFIGS)
def test_random_block_against_torch(block, heads):
    import torch
    F = torch.nn.functional
    s = spec.from_mapping({"dims": {"seq_len": 4, "d_model": 8, "d_ff": 16, "heads": heads},
                           "block": block, "random": {"seed": 3 + heads, "low": -2, "high": 2}})
    o, n, d, dh = s.options, s.dims.seq_len, s.dims.d_model, s.dims.d_head

    def T(m):
        return torch.tensor([[float(v) for v in row] for row in m.tolist()], dtype=torch.float64)

    P = {k: T(v) for k, v in s.params.items()}
    eps = float(o.eps)
    ref: dict[str, torch.Tensor] = {}

    def lin(x, W, b):  # nn.Linear stores (out, in): the transpose of the math layout
        return F.linear(x, P[W].T, P[b][0] if b in P else None)

    def nrm(name, x, ln):
        if o.norm == "layernorm":
            y = F.layer_norm(x, (d,), P[f"{ln}.gamma"][0], P[f"{ln}.beta"][0], eps)
        else:
            y = F.rms_norm(x, (d,), P[f"{ln}.gamma"][0], eps)
        ref[name] = y
        return y

    def attn(x):
        q, k, v = (lin(x, f"W_{c}", f"b_{c}") for c in "QKV")
        ref["attn.q"], ref["attn.k"], ref["attn.v"] = q, k, v
        qh, kh, vh = (t.view(n, heads, dh).transpose(0, 1) for t in (q, k, v))
        scale = 1 / math.sqrt(dh) if o.attention_scale == "sqrt_dk" else 1.0
        scores = qh @ kh.transpose(-1, -2) * scale
        if o.causal:
            scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        weights = F.softmax(scores, dim=-1)
        heads_out = F.scaled_dot_product_attention(qh, kh, vh, is_causal=o.causal, scale=scale)
        for h in range(heads):
            ref[f"attn.h{h}.weights"], ref[f"attn.h{h}.out"] = weights[h], heads_out[h]
        cat = heads_out.transpose(0, 1).reshape(n, d)
        ref["attn.out"] = lin(cat, "W_O", "b_O") if o.out_proj else cat
        return ref["attn.out"]

    def mlp(x):
        act = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu, "swiglu": F.silu, "geglu": F.gelu,
               "gelu_tanh": lambda z: F.gelu(z, approximate="tanh")}[o.activation]
        a = act(lin(x, "W_1", "b_1"))
        if o.gated:
            a = a * lin(x, "W_3", "b_3")
        ref["ffn.act"], ref["ffn.out"] = a, lin(a, "W_2", "b_2")
        return ref["ffn.out"]

    x = T(s.X)
    if o.norm_position == "pre":
        ref["resid1"] = r1 = x + attn(nrm("norm1", x, "ln1"))
        ref["resid2"] = r2 = r1 + mlp(nrm("norm2", r1, "ln2"))
        ref["output"] = nrm("norm_final", r2, "ln_final") if o.final_norm else r2
    else:
        ref["resid1"] = r1 = x + attn(x)
        h1 = nrm("norm1", r1, "ln1")
        ref["resid2"] = r2 = h1 + mlp(h1)
        ref["output"] = nrm("norm2", r2, "ln2")

    out = numeric.forward(s)
    assert list(out) == steps.step_names(s.dims, o)  # nothing given: every step is present
    for name, value in ref.items():
        close(out[name], value.numpy(), tol=1e-10)
