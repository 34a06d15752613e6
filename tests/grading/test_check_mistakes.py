"""Mistake diagnosis: every catalogue entry planted in an answers file and named by `symblock
check`. The planted numbers come from an independent path: the NumPy float64 forward
(symblock.reference.numeric) for the truth, and the mistake written out here in NumPy, rounded to 8
places. Nothing here calls the mutation code under test."""
import json
import math
import textwrap

import numpy as np
import pytest

from symblock.reference import numeric, numeric_cross
from symblock.engine import spec as spec_mod
from symblock.cli import main
from symblock.grading.mistakes import CATALOGUE, EXPLANATIONS

# Post-LN, LayerNorm with ε = 1/10 and an affine γ/β, two causal heads (d_k = 3, d_model = 6,
# so sqrt(d_k), d_k and sqrt(d_model) all differ), biases, ReLU, square W_1.
SPEC_A = """\
    dims: {seq_len: 3, d_model: 6, d_ff: 6, heads: 2}
    block: {norm_position: post, norm: layernorm, eps: "1/10", activation: relu, causal: true,
            bias: true, attention_scale: sqrt_dk}
    weights:
      ln1: {gamma: [2, 1, 1, 1, 1, 3], beta: [0, 1, 0, 0, -1, 0]}
    inputs:
      X: [[1, 0, 2, -1, 0, 1], [0, 1, -1, 2, 1, 0], [2, -1, 0, 1, 1, -2]]
    random: {seed: 11, low: -1, high: 1}
    """
# Pre-LN, RMSNorm with ε = 1/10, one head, exact GELU, no final norm.
SPEC_B = """\
    dims: {seq_len: 2, d_model: 4, d_ff: 3, heads: 1}
    block: {norm_position: pre, norm: rmsnorm, eps: "1/10", activation: gelu, bias: true}
    inputs:
      X: [[2, 0, 1, -1], [1, 1, 0, 2]]
    random: {seed: 5, low: -1, high: 1}
    """
# A batch of two padded sequences, d_model = 3 projected to d_k = d_v = 2, a fixed dropout mask.
SPEC_C = """\
    dims: {seq_len: 3, d_model: 3, d_ff: 2, heads: 1, d_k: 2, d_v: 2}
    block: {norm_position: post, norm: layernorm, eps: "1/10", activation: relu}
    inputs:
      X: [[[1, 0, 2], [0, 1, -1], [2, -1, 0]], [[1, 1, 0], [-1, 2, 1], [0, 1, 1]]]
      key_padding_mask: [[false, false, true], [false, true, false]]
    dropout: {p: "1/2", masks: {b0.ffn.act: [[1, 0], [1, 1], [0, 1]]}}
    random: {seed: 3, low: -1, high: 1}
    """
# RoPE (half pairs, θ 100) over grouped heads: 4 query heads read 2 K/V heads (h -> h // 2, so
# head 1 reads K/V head 0 where h mod 2 would read 1); d_k = 4 so the two pair styles differ,
# d_v = 2 so V can be (wrongly) rotated; positions as given, not 0 … n − 1.
SPEC_R = """\
    dims: {seq_len: 3, d_model: 4, d_ff: 2, heads: 4, kv_heads: 2, d_k: 4, d_v: 2}
    block: {norm_position: pre, norm: rmsnorm, eps: "1/10", causal: true, rope: {theta: 100, style: half}}
    inputs:
      X: [[1, 0, 2, -1], [0, 1, -1, 2], [2, -1, 0, 1]]
      positions: [1, 2, 4]
    random: {seed: 7, low: -1, high: 1}
    """
# Two causal heads (d_k = 2, scaled) worked as an online softmax over key tiles of 2: in head 0
# row 4's maximum moves from tile 0 (s_41 = 1/√2) to tile 1 (s_43 = 3/√2), so the rescaling counts.
SPEC_D = """\
    dims: {seq_len: 4, d_model: 4, d_ff: 2, heads: 2}
    block: {norm_position: post, norm: layernorm, eps: "1/10", activation: relu, causal: true,
            attention_scale: sqrt_dk, attention_tiles: 2}
    inputs:
      X: [[1, 0, 2, -1], [0, 1, -1, 2], [2, -1, 0, 1], [1, 2, 1, 0]]
    random: {seed: 8, low: -1, high: 1}
    """
# A Post-LN decoder layer with cross-attention: as many decoder rows as memory rows (so K and V
# taken from the decoder have the memory's shape), two heads of d_k 2, ln1/ln2 with their own γ, β,
# the last memory row padding.
SPEC_E = """\
    dims: {seq_len: 3, d_model: 4, d_ff: 4, heads: 2}
    block: {cross_attention: true, norm_position: post, norm: layernorm, eps: "1/10", activation: relu,
            bias: true, attention_scale: sqrt_dk}
    weights:
      ln1: {gamma: [2, 1, 1, 3], beta: [0, 1, 0, -1]}
      ln2: {gamma: [1, 2, 3, 1], beta: [1, 0, -1, 0]}
    inputs:
      X: [[1, 0, 2, -1], [0, 1, -1, 2], [2, -1, 0, 1]]
      memory: [[1, -1, 0, 2], [0, 2, 1, -1], [1, 1, -1, 0]]
      memory_padding_mask: [false, false, true]
    random: {seed: 11, low: -1, high: 1}
    """
# E with two decoder rows over the three memory rows: K and V taken from the decoder are 2 × 4,
# not the memory's 3 × 4, so the slip is written as a matrix of another shape.
SPEC_F = SPEC_E.replace("seq_len: 3", "seq_len: 2").replace(", [2, -1, 0, 1]]\n      memory", "]\n      memory")
SPECS = {"A": SPEC_A, "B": SPEC_B, "C": SPEC_C, "D": SPEC_D, "E": SPEC_E, "F": SPEC_F, "R": SPEC_R}


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    """spec letter -> (spec path, truth floats by step, params floats)."""
    d = tmp_path_factory.mktemp("specs")
    out = {}
    for key, text in SPECS.items():
        path = d / f"spec_{key}.yaml"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        s = spec_mod.load(path)
        P = {k: np.array(v.tolist(), dtype=float) for k, v in s.params.items()}
        fwd = numeric_cross.forward if s.options.cross_attention else numeric.forward
        out[key] = (str(path), fwd(s), P, s)
    return out


# ---------------------------------------------------------------- NumPy building blocks

def softmax_rows(s):
    e = np.where(np.isneginf(s), 0.0, np.exp(np.where(np.isneginf(s), 0.0, s) - 0))
    return e / e.sum(axis=1, keepdims=True)


def causal(s, fill):
    s = s.copy()
    s[np.triu_indices(s.shape[0], 1)] = fill
    return s


def ln(x, g, b, eps, ddof=0):
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).sum(axis=1, keepdims=True) / (x.shape[1] - ddof)
    return (x - mu) / np.sqrt(var + eps) * g + b


def rms(x, g, eps):
    return x / np.sqrt((x ** 2).mean(axis=1, keepdims=True) + eps) * g


gelu = np.vectorize(lambda z: z / 2 * (1 + math.erf(z / math.sqrt(2))))
EPS = 0.1


def head(T, h, dk=3):
    return T["attn.q"][:, h * dk:(h + 1) * dk], T["attn.k"][:, h * dk:(h + 1) * dk]


def query_padded(s, pad):
    s = s.copy()
    s[np.array(pad), :] = -np.inf
    return s


def softmax_dead_rows_zero(s):
    """Row softmax; a row with every entry −∞ (a padded query masked) written as zeros."""
    with np.errstate(invalid="ignore"):
        w = softmax_rows(s)
    return np.where(np.isnan(w), 0.0, w)


def turn(x, width, positions, theta=100.0, style="half", sign=1.0):
    """RoPE in NumPy: each head of `width` columns, pair i turned by sign·m·θ^(−2i/width)."""
    out = x.copy()
    half = width // 2
    for r, m in enumerate(positions):
        for o in range(0, x.shape[1], width):
            for i in range(half):
                a, b = (o + i, o + i + half) if style == "half" else (o + 2 * i, o + 2 * i + 1)
                phi = sign * m * theta ** (-2 * i / width)
                out[r, a] = x[r, a] * math.cos(phi) - x[r, b] * math.sin(phi)
                out[r, b] = x[r, b] * math.cos(phi) + x[r, a] * math.sin(phi)
    return out


POS_R = [1, 2, 4]


def tiles_unrescaled(T, part, h=0):
    """Head h's tile 1 (keys 3, 4) with the tile-0 sum or accumulator carried over unscaled: NumPy
    from the masked scores and V, e^(s − m) with the running maxima taken here."""
    s, v = T[f"attn.h{h}.masked"], T["attn.v"][:, 2 * h:2 * h + 2]
    m0 = s[:, :2].max(axis=1, keepdims=True)
    m1 = np.maximum(m0, s[:, 2:].max(axis=1, keepdims=True))
    e0, e1 = np.exp(s[:, :2] - m0), np.exp(s[:, 2:] - m1)   # e^(−∞) = 0: a masked key adds nothing
    if part == "sum":
        return e0.sum(axis=1, keepdims=True) + e1.sum(axis=1, keepdims=True)
    return e0 @ v[:2] + e1 @ v[2:]


PAD_C = [[False, False, True], [False, True, False]]


def cross_proj(T, P, which, src):
    return src @ P[f"cross.W_{which}"] + P[f"cross.b_{which}"]


def cross_causal(s):
    """Decoder row i may not read memory column j > i, and the padded third memory row is masked."""
    s = causal(s, -np.inf)
    s[:, 2] = -np.inf
    return s
DROP_C = np.array([[1, 0], [1, 1], [0, 1]], dtype=float)

# (id, spec, step, expected code, planted value from truth T and params P)
PLANTED = [
    ("tile-sum-not-rescaled", "D", "attn.h0.tile1.sum", "tile_sum_not_rescaled",
     lambda T, P: tiles_unrescaled(T, "sum")),
    ("tile-acc-not-rescaled", "D", "attn.h0.tile1.acc", "tile_acc_not_rescaled",
     lambda T, P: tiles_unrescaled(T, "acc")),
    ("scale-approx", "A", "attn.h0.scaled", "scale_approximated", lambda T, P: T["attn.h0.scores"] / 1.73),
    ("scale-approx-weights", "A", "attn.h1.weights", "scale_approximated",
     lambda T, P: softmax_rows(causal(T["attn.h1.scores"] * 0.577, -np.inf))),
    ("padding-missing", "C", "b0.attn.h0.weights", "padding_mask_missing",
     lambda T, P: softmax_rows(T["b0.attn.h0.scaled"])),
    ("padding-missing-masked", "C", "b1.attn.h0.masked", "padding_mask_missing",
     lambda T, P: T["b1.attn.h0.scaled"]),
    ("padding-on-queries", "C", "b0.attn.h0.masked", "padding_on_queries",
     lambda T, P: query_padded(T["b0.attn.h0.scaled"], PAD_C[0])),
    ("padding-on-queries-weights", "C", "b1.attn.h0.weights", "padding_on_queries",
     lambda T, P: softmax_dead_rows_zero(query_padded(T["b1.attn.h0.scaled"], PAD_C[1]))),
    ("dropout-no-rescale", "C", "b0.ffn.act.dropped", "dropout_no_rescale",
     lambda T, P: T["b0.ffn.act"] * DROP_C),
    ("no-activation-out-dropped", "C", "b0.ffn.out", "activation_missing",
     lambda T, P: (T["b0.ffn.hidden"] * DROP_C * 2) @ P["W_2"]),
    ("sample-var", "A", "norm1.var", "ln_sample_variance",
     lambda T, P: ((T["resid1"] - T["resid1"].mean(1, keepdims=True)) ** 2).sum(1, keepdims=True) / 5),
    ("sample-var-norm", "A", "norm1", "ln_sample_variance",
     lambda T, P: ln(T["resid1"], P["ln1.gamma"], P["ln1.beta"], EPS, ddof=1)),
    ("eps-outside", "A", "norm1.std", "ln_eps_outside_sqrt", lambda T, P: np.sqrt(T["norm1.var"]) + EPS),
    ("eps-outside-rms", "B", "norm2.rms", "ln_eps_outside_sqrt", lambda T, P: np.sqrt(T["norm2.ms"]) + EPS),
    ("no-sqrt", "A", "norm2.std", "norm_no_sqrt", lambda T, P: T["norm2.var"] + EPS),
    ("affine-missing", "A", "norm1", "norm_affine_missing",
     lambda T, P: (T["resid1"] - T["norm1.mean"]) / T["norm1.std"]),
    ("ln-as-rms", "A", "norm1.var", "layernorm_as_rms", lambda T, P: (T["resid1"] ** 2).mean(1, keepdims=True)),
    ("rms-as-ln-ms", "B", "norm1.ms", "rms_as_layernorm",
     lambda T, P: T["x"].var(axis=1, keepdims=True)),
    ("rms-as-ln", "B", "norm1", "rms_as_layernorm",
     lambda T, P: ln(T["x"], P["ln1.gamma"], 0, EPS)),
    ("no-scale", "A", "attn.h0.scaled", "attn_no_scale", lambda T, P: T["attn.h0.scores"]),
    ("no-scale-weights", "A", "attn.h1.weights", "attn_no_scale",
     lambda T, P: softmax_rows(causal(T["attn.h1.scores"], -np.inf))),
    ("scale-d-model", "A", "attn.h1.scaled", "attn_scale_d_model", lambda T, P: T["attn.h1.scores"] / math.sqrt(6)),
    ("scale-no-sqrt", "A", "attn.h0.scaled", "attn_scale_no_sqrt", lambda T, P: T["attn.h0.scores"] / 3),
    # d_k = 2 from d_model = 3 (spec C): √d_model, d_k and √d_k all differ from d_model/heads's
    ("scale-d-model-dk", "C", "b1.attn.h0.scaled", "attn_scale_d_model",
     lambda T, P: T["b1.attn.h0.scores"] / math.sqrt(3)),
    ("scale-no-sqrt-dk", "C", "b0.attn.h0.scaled", "attn_scale_no_sqrt", lambda T, P: T["b0.attn.h0.scores"] / 2),
    ("no-scale-dk", "C", "b0.attn.h0.scaled", "attn_no_scale", lambda T, P: T["b0.attn.h0.scores"]),
    ("scores-KQ", "A", "attn.h1.scores", "scores_transposed",
     lambda T, P: head(T, 1)[1] @ head(T, 1)[0].T),
    ("softmax-columns", "A", "attn.h0.weights", "softmax_wrong_axis",
     lambda T, P: softmax_rows(T["attn.h0.masked"].T).T),
    ("softmax-columns-nomask", "B", "attn.h0.weights", "softmax_wrong_axis",
     lambda T, P: softmax_rows(T["attn.h0.scaled"].T).T),
    ("mask-after", "A", "attn.h0.weights", "mask_after_softmax",
     lambda T, P: causal(softmax_rows(T["attn.h0.scaled"]), 0.0)),
    ("mask-zero", "A", "attn.h1.masked", "mask_zero_not_inf", lambda T, P: causal(T["attn.h1.scaled"], 0.0)),
    ("mask-zero-weights", "A", "attn.h1.weights", "mask_zero_not_inf",
     lambda T, P: softmax_rows(causal(T["attn.h1.scaled"], 0.0))),
    ("mask-missing", "A", "attn.h0.weights", "mask_missing", lambda T, P: softmax_rows(T["attn.h0.scaled"])),
    ("WQ-transposed", "A", "attn.q", "weight_transposed", lambda T, P: T["x"] @ P["W_Q"].T + P["b_Q"]),
    ("WO-transposed", "A", "attn.out", "weight_transposed", lambda T, P: T["attn.concat"] @ P["W_O"].T + P["b_O"]),
    ("W1-transposed", "A", "ffn.hidden", "weight_transposed", lambda T, P: T["norm1"] @ P["W_1"].T + P["b_1"]),
    ("bias-missing", "A", "attn.k", "bias_missing", lambda T, P: T["x"] @ P["W_K"]),
    ("bias-missing-ffn", "B", "ffn.out", "bias_missing", lambda T, P: T["ffn.act"] @ P["W_2"]),
    ("no-residual-1", "A", "resid1", "missing_residual", lambda T, P: T["attn.out"]),
    ("no-residual-2", "A", "resid2", "missing_residual", lambda T, P: T["ffn.out"]),
    ("post-as-pre-q", "A", "attn.q", "norm_order_swapped",
     lambda T, P: ln(T["x"], P["ln1.gamma"], P["ln1.beta"], EPS) @ P["W_Q"] + P["b_Q"]),
    ("post-as-pre-norm1", "A", "norm1.mean", "norm_order_swapped", lambda T, P: T["x"].mean(1, keepdims=True)),
    ("post-as-pre-resid2", "A", "resid2", "norm_order_swapped", lambda T, P: T["resid1"] + T["ffn.out"]),
    ("post-as-pre-output", "A", "output", "norm_order_swapped", lambda T, P: T["resid2"]),
    ("pre-as-post-q", "B", "attn.q", "norm_order_swapped", lambda T, P: T["x"] @ P["W_Q"] + P["b_Q"]),
    ("pre-as-post-output", "B", "output", "norm_order_swapped",
     lambda T, P: rms(T["resid2"], P["ln2.gamma"], EPS)),
    ("no-activation", "A", "ffn.act", "activation_missing", lambda T, P: T["ffn.hidden"]),
    ("no-activation-out", "A", "ffn.out", "activation_missing", lambda T, P: T["ffn.hidden"] @ P["W_2"] + P["b_2"]),
    ("gelu-for-relu", "A", "ffn.act", "gelu_instead_of_relu", lambda T, P: gelu(T["ffn.hidden"])),
    ("relu-for-gelu", "B", "ffn.act", "relu_instead_of_gelu", lambda T, P: np.maximum(T["ffn.hidden"], 0)),
    # a decoder layer's cross-attention (Post-LN: its queries read H1 = norm1)
    ("cross-k-from-decoder", "E", "cross.k", "cross_kv_from_decoder", lambda T, P: cross_proj(T, P, "K", T["norm1"])),
    ("cross-v-from-decoder", "E", "cross.v", "cross_kv_from_decoder", lambda T, P: cross_proj(T, P, "V", T["norm1"])),
    ("cross-scores-k-from-decoder", "E", "cross.h1.scores", "cross_kv_from_decoder",
     lambda T, P: T["cross.q"][:, 2:] @ cross_proj(T, P, "K", T["norm1"])[:, 2:].T),
    ("cross-causal-masked", "E", "cross.h0.masked", "cross_causal_mask",
     lambda T, P: cross_causal(T["cross.h0.scores"] / math.sqrt(2))),
    ("cross-causal-weights", "E", "cross.h1.weights", "cross_causal_mask",
     lambda T, P: softmax_rows(cross_causal(T["cross.h1.scores"] / math.sqrt(2)))),
    ("cross-padding-missing-masked", "E", "cross.h0.masked", "cross_padding_mask_missing",
     lambda T, P: T["cross.h0.scores"] / math.sqrt(2)),
    ("cross-padding-missing-weights", "E", "cross.h1.weights", "cross_padding_mask_missing",
     lambda T, P: softmax_rows(T["cross.h1.scores"] / math.sqrt(2))),
    ("cross-padding-missing-out", "E", "cross.h1.out", "cross_padding_mask_missing",
     lambda T, P: softmax_rows(T["cross.h1.scores"] / math.sqrt(2)) @ T["cross.v"][:, 2:]),
    ("cross-q-from-memory", "E", "cross.q", "cross_queries_from_memory",
     lambda T, P: cross_proj(T, P, "Q", T["memory"])),
    ("cross-scores-q-from-memory", "E", "cross.h0.scores", "cross_queries_from_memory",
     lambda T, P: cross_proj(T, P, "Q", T["memory"])[:, :2] @ T["cross.k"][:, :2].T),
    ("cross-norm-as-pre-q", "E", "cross.q", "cross_norm_as_pre_ln",
     lambda T, P: cross_proj(T, P, "Q", ln(T["norm1"], P["ln2.gamma"], P["ln2.beta"], EPS))),
    ("cross-norm-as-pre-norm2", "E", "norm2", "cross_norm_as_pre_ln", lambda T, P: T["resid2"]),
    # RoPE and grouped K/V heads (spec R)
    ("rope-interleaved-for-half", "R", "attn.q_rot", "rope_other_style",
     lambda T, P: turn(T["attn.q"], 4, POS_R, style="interleaved")),
    ("rope-from-one", "R", "attn.k_rot", "rope_positions_from_one",
     lambda T, P: turn(T["attn.k"], 4, [m + 1 for m in POS_R])),
    ("rope-sign", "R", "attn.q_rot", "rope_sign_flipped", lambda T, P: turn(T["attn.q"], 4, POS_R, sign=-1.0)),
    ("rope-on-v", "R", "attn.v", "rope_on_v", lambda T, P: turn(T["attn.v"], 2, POS_R)),
    ("rope-on-v-out", "R", "attn.h3.out", "rope_on_v",
     lambda T, P: T["attn.h3.weights"] @ turn(T["attn.v"], 2, POS_R)[:, 2:4]),
    ("causal-added", "B", "attn.h0.weights", "causal_mask_added",
     lambda T, P: softmax_rows(causal(T["attn.h0.scaled"], -np.inf))),
    ("rope-k-unrotated", "R", "attn.h0.scores", "rope_unrotated",
     lambda T, P: T["attn.q_rot"][:, 0:4] @ T["attn.k"][:, 0:4].T),
    ("rope-unrotated", "R", "attn.h3.scores", "rope_unrotated",
     lambda T, P: T["attn.q"][:, 12:16] @ T["attn.k"][:, 4:8].T),
    ("gqa-mod-scores", "R", "attn.h1.scores", "gqa_wrong_head",
     lambda T, P: T["attn.q_rot"][:, 4:8] @ T["attn.k_rot"][:, 4:8].T),
    ("gqa-mod-out", "R", "attn.h2.out", "gqa_wrong_head",
     lambda T, P: T["attn.h2.weights"] @ T["attn.v"][:, 0:2]),
]


def fmt(v, places=8):
    return "-inf" if np.isneginf(v) else f"{v:.{places}f}"


def answers_yaml(steps: dict, places=8) -> str:
    lines = [f"decimals: {places}", "steps:"]
    for name, m in steps.items():
        m = np.atleast_2d(m)
        rows = ", ".join("[" + ", ".join(fmt(v, places) for v in r) + "]" for r in m)
        lines.append(f"  {name}: [{rows}]")
    return "\n".join(lines) + "\n"


def check(cli, spec_file, spec_path, steps, places=8):
    code, out, err = cli("check", spec_path, spec_file(answers_yaml(steps, places), "answers.yaml"), "--json")
    assert err == ""
    data = json.loads(out)
    return code, data, {s["name"]: s for s in data["steps"]}


@pytest.mark.parametrize("case, key, step, code, planted", PLANTED, ids=[p[0] for p in PLANTED])
def test_planted_mistake_is_diagnosed(cli, spec_file, worlds, case, key, step, code, planted):
    spec_path, T, P, _ = worlds[key]
    value = planted(T, P)
    assert value.shape == T[step].shape
    finite = np.isfinite(T[step]) & np.isfinite(value)
    assert not np.allclose(value[finite], T[step][finite]) or not np.array_equal(
        np.isneginf(value), np.isneginf(T[step])), "the planted mistake must change the step"
    rc, data, steps = check(cli, spec_file, spec_path, {step: value})
    assert rc == 1 and data["first_break"] == step
    assert steps[step]["status"] == "wrong"
    assert steps[step]["diagnosis"] == [code]  # named, and nothing else reproduces it


def test_every_catalogue_entry_is_planted():
    planted = {p[3] for p in PLANTED}
    assert {m.code for m in CATALOGUE} <= planted
    assert all(EXPLANATIONS[m.code] for m in CATALOGUE)


@pytest.mark.parametrize("case, key, step, code, planted", PLANTED, ids=[p[0] for p in PLANTED])
def test_truth_gets_no_diagnosis(cli, spec_file, worlds, case, key, step, code, planted):
    """The same step written correctly is correct (the plant, not the step, is diagnosed)."""
    spec_path, T, P, _ = worlds[key]
    rc, data, steps = check(cli, spec_file, spec_path, {step: T[step]})
    assert rc == 0 and steps[step]["status"] == "correct" and steps[step]["diagnosis"] == []


def test_diagnosis_is_specific(cli, spec_file, worlds):
    """Codes are not shouted at every wrong step: a transposed W_Q is only that."""
    spec_path, T, P, _ = worlds["A"]
    rc, data, steps = check(cli, spec_file, spec_path, {"attn.q": T["x"] @ P["W_Q"].T + P["b_Q"]})
    assert steps["attn.q"]["diagnosis"] == ["weight_transposed"]
    rc, data, steps = check(cli, spec_file, spec_path, {"resid1": T["attn.out"]})
    assert steps["resid1"]["diagnosis"] == ["missing_residual"]


def test_mistake_then_carried_forward(cli, spec_file, worlds):
    """W_Q transposed at attn.q is diagnosed there; scores and weights built on that q are
    carried, not wrong; the chain first breaks at attn.q."""
    spec_path, T, P, _ = worlds["A"]
    q = T["x"] @ P["W_Q"].T + P["b_Q"]
    s0 = q[:, :3] @ T["attn.k"][:, :3].T
    w0 = softmax_rows(causal(s0 / math.sqrt(3), -np.inf))
    rc, data, steps = check(cli, spec_file, spec_path,
                            {"attn.q": q, "attn.h0.scores": s0, "attn.h0.weights": w0})
    assert rc == 1 and data["first_break"] == "attn.q"
    assert steps["attn.q"]["diagnosis"] == ["weight_transposed"]
    assert steps["attn.h0.scores"]["status"] == "carried"
    assert steps["attn.h0.weights"]["status"] == "carried"
    assert steps["attn.h0.weights"]["built_on"] == ["attn.q"]


def test_mistake_diagnosed_from_the_persons_own_inputs(cli, spec_file, worlds):
    """A wrong resid1 (a slip), then norm1.var with n−1 computed from that wrong resid1: the
    variance is diagnosed from the person's own resid1, not the truth."""
    spec_path, T, P, _ = worlds["A"]
    r1 = T["resid1"].copy()
    r1[0, 0] += 1
    var_s = ((r1 - r1.mean(1, keepdims=True)) ** 2).sum(1, keepdims=True) / 5
    rc, data, steps = check(cli, spec_file, spec_path, {"resid1": r1, "norm1.var": var_s})
    assert steps["resid1"]["status"] == "wrong"
    assert steps["norm1.var"]["status"] == "wrong"
    assert steps["norm1.var"]["diagnosis"] == ["ln_sample_variance"]


def test_rounding_slip(cli, spec_file, worlds):
    spec_path, T, P, _ = worlds["A"]
    v = np.round(T["attn.h0.scaled"], 3)
    v[1, 0] += 0.001  # one unit in the last place off
    rc, data, steps = check(cli, spec_file, spec_path, {"attn.h0.scaled": v}, places=3)
    assert steps["attn.h0.scaled"]["status"] == "slip"   # its own lighter status, ok stays true
    assert steps["attn.h0.scaled"]["diagnosis"] == ["rounding"] and data["ok"] and rc == 0
    marks = [e["mark"] for e in steps["attn.h0.scaled"]["entries"]]
    assert marks.count("slip") == 1 and marks.count("correct") == len(marks) - 1
    v[1, 0] += 0.001  # two units: not a rounding slip
    rc, data, steps = check(cli, spec_file, spec_path, {"attn.h0.scaled": v}, places=3)
    assert steps["attn.h0.scaled"]["status"] == "wrong"
    assert steps["attn.h0.scaled"]["diagnosis"] == []


def test_text_report_explains_codes(tmp_path, capsys, worlds):
    spec_path, T, P, _ = worlds["A"]
    path = tmp_path / "answers.yaml"
    path.write_text(answers_yaml({"resid1": T["attn.out"]}, 4), encoding="utf-8")
    code = main(["check", spec_path, str(path)])
    out = capsys.readouterr().out
    assert code == 1
    assert ("diagnosis: missing_residual — residual connection forgotten: the sub-layer output "
            "without its input added") in out


@pytest.mark.parametrize("example", spec_mod.block_example_names())
def test_every_step_of_every_example_checks(tmp_path, capsys, example):
    """Answer every step of a built-in example with NumPy's values to 9 places: all correct."""
    s = spec_mod.load(example)
    T = (numeric_cross.forward if s.options.cross_attention else numeric.forward)(s)
    path = tmp_path / "answers.yaml"
    path.write_text(answers_yaml(T, 9), encoding="utf-8")
    code = main(["check", example, str(path), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0, [(x["name"], x["status"]) for x in data["steps"] if x["status"] != "correct"]
    assert {x["status"] for x in data["steps"]} == {"correct"}
    assert len(data["steps"]) == len(T)


def test_masking_raw_scores_then_scaling_is_correct(cli, spec_file, worlds):
    """Mask first, scale after (DESIGN.md): `.masked` holds the masked raw scores, `.scaled` the
    scaled masked scores; both are right, and the weights follow."""
    spec_path, T, P, _ = worlds["A"]
    m = causal(T["attn.h0.scores"], -np.inf)
    rc, data, steps = check(cli, spec_file, spec_path, {"attn.h0.masked": m, "attn.h0.scaled": m / math.sqrt(3),
                                                          "attn.h0.weights": T["attn.h0.weights"]})
    assert rc == 0, steps
    assert [steps[f"attn.h0.{k}"]["status"] for k in ("scaled", "masked", "weights")] == ["correct"] * 3
    rc, data, steps = check(cli, spec_file, spec_path, {"attn.h0.masked": m / 3})  # not an order
    assert steps["attn.h0.masked"]["status"] == "wrong"


def test_a_padded_batch_checks_step_by_step(cli, spec_file, worlds):
    """Every step of the padded batch with dropout answered from NumPy: all correct; a wrong
    b1 step is carried into b1's later steps only."""
    spec_path, T, P, _ = worlds["C"]
    rc, data, steps = check(cli, spec_file, spec_path, dict(T), places=9)
    assert rc == 0 and {x["status"] for x in data["steps"]} == {"correct"}
    assert "b0.ffn.act.dropped" in steps and "b1.output" in steps


def test_every_catalogued_mistake_is_explained_in_chinese_too():
    """A Chinese report names every mistake the English one can (four codes once ended a --lang zh
    check in an internal error)."""
    import re
    from symblock.grading.lang import explanation
    from symblock.grading.mistakes import EXPLANATIONS
    for code in EXPLANATIONS:
        assert re.search(r"[\u4e00-\u9fff]", explanation(code, "zh")), code


@pytest.mark.parametrize("step, planted", [
    ("cross.k", lambda T, P: cross_proj(T, P, "K", T["norm1"])),
    ("cross.v", lambda T, P: cross_proj(T, P, "V", T["norm1"])),
    ("cross.h1.scores", lambda T, P: T["cross.q"][:, 2:] @ cross_proj(T, P, "K", T["norm1"])[:, 2:].T),
])
def test_a_slip_that_changes_the_shape_is_marked_and_diagnosed(cli, spec_file, worlds, step, planted):
    """Two decoder rows, three memory rows: K/V (or scores) worked from the decoder's rows are 2 × 4
    (2 × 2), not 3 × 4 (2 × 3). The step is wrong, the slip named, and the file marked, not refused."""
    spec_path, T, P, _ = worlds["F"]
    value = planted(T, P)
    assert value.shape != T[step].shape and T["memory"].shape[0] == 3 and T["x"].shape[0] == 2
    rc, data, steps = check(cli, spec_file, spec_path, {step: value})
    assert rc == 1 and data["first_break"] == step
    assert steps[step]["status"] == "wrong" and steps[step]["diagnosis"] == ["cross_kv_from_decoder"]
    marks = [e["mark"] for e in steps[step]["entries"]]
    code, out, err = cli("check", spec_path, spec_file(answers_yaml({step: value}), "answers.yaml"))
    assert code == 1 and err == ""
    if value.shape[1] != T[step].shape[1]:   # 2 × 2 scores for 2 × 3: every entry wrong, said in one line
        assert set(marks) == {"wrong"} and len(marks) == T[step].size
        assert out.count(f"written as a {value.shape[0]}×{value.shape[1]} matrix, not in this step's shape") == 1
    else:   # K or V of 2 full rows for 3: read as those rows, the third blank
        assert marks.count("blank") == T[step].shape[1] and "blank" not in marks[:-T[step].shape[1]]


def test_steps_worked_on_from_a_slip_of_another_shape_are_carried_not_charged_again(cli, spec_file, worlds):
    """K and V from the decoder's 2 rows (2 × 4, the memory has 3): the scores are 2 × 2, not 2 × 3,
    and so are their scaling, mask and softmax, each right from the person's own answers as written.
    The slip is charged where it is made (K and V, each named); what follows is carried. NumPy works
    the person's chain, each step from the last one as written (8 places); a weight 0.1 off is wrong."""
    spec_path, T, P, _ = worlds["F"]
    r = lambda m: np.round(m, 8)   # noqa: E731  (as written: each step from the one before, rounded)
    k, v = (r(cross_proj(T, P, w, T["norm1"])) for w in ("K", "V"))       # the decoder's rows: 2 × 4
    scores = r(T["cross.q"][:, :2] @ k[:, :2].T)                           # head 0: 2 × 2
    scaled = r(scores / math.sqrt(2))
    weights = r(softmax_rows(scaled))                                      # no padded column to mask
    chain = {"cross.k": k, "cross.v": v, "cross.h0.scores": scores, "cross.h0.scaled": scaled,
             "cross.h0.masked": scaled, "cross.h0.weights": weights, "cross.h0.out": r(weights @ v[:, :2])}
    assert scores.shape == (2, 2) and T["cross.h0.scores"].shape == (2, 3)
    rc, data, steps = check(cli, spec_file, spec_path, chain)
    assert rc == 1 and data["first_break"] == "cross.k"
    assert [steps[n]["status"] for n in ("cross.k", "cross.v")] == ["wrong"] * 2
    assert steps["cross.k"]["diagnosis"] == steps["cross.v"]["diagnosis"] == ["cross_kv_from_decoder"]
    for name in ("cross.h0.scores", "cross.h0.scaled", "cross.h0.masked", "cross.h0.weights", "cross.h0.out"):
        assert steps[name]["status"] == "carried", (name, steps[name])
        assert "cross.k" in steps[name]["built_on"]
    assert {e["mark"] for e in steps["cross.h0.weights"]["entries"]} == {"carried"}
    off = weights.copy()
    off[1, 0] += 0.1
    rc, data, steps = check(cli, spec_file, spec_path, {**chain, "cross.h0.weights": off})
    assert steps["cross.h0.weights"]["status"] == "wrong" and steps["cross.h0.scaled"]["status"] == "carried"
    code, out, err = cli("check", spec_path, spec_file(answers_yaml(chain), "answers.yaml"))
    assert "carried  cross.h0.weights  right from your own cross.k" in out


def test_a_matrix_of_more_rows_than_the_step_is_that_step_wrong(cli, spec_file, worlds):
    """resid1 of spec A written with an extra row: wrong, said once, and the other steps still marked."""
    spec_path, T, P, _ = worlds["A"]
    extra = np.vstack([T["resid1"], T["resid1"][:1]])
    rc, data, steps = check(cli, spec_file, spec_path, {"resid1": extra, "attn.out": T["attn.out"]})
    assert rc == 1 and steps["resid1"]["status"] == "wrong" and steps["attn.out"]["status"] == "correct"
    code, out, _ = cli("check", spec_path, spec_file(answers_yaml({"resid1": extra}), "answers.yaml"))
    assert out.count(f"written as a {extra.shape[0]}×{extra.shape[1]} matrix") == 1
