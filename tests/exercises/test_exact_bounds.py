"""The generator's exact softmax_weights check on an attention input with an irrational σ.

There the fast float check (checks.check_scores) cannot run: the attention input is not rational,
so the exact check on the worked trace is the only guard, and it must hold both bounds."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from symblock.engine import block, spec
from symblock.engine.steps import step_inputs
from symblock.exercises.checks import check_attention
from symblock.exercises.constraints import Constraints


def numpy_weights(s) -> dict[int, np.ndarray]:
    """Each head's softmax weights of a Pre-LN causal block, in float64 from the spec's numbers
    (LayerNorm, Q K^T / sqrt(d_k), causal mask, softmax): independent of the exact engine."""
    f = lambda m: np.array([[float(e) for e in row] for row in m.tolist()])
    X, (n, d), dk = f(s.X), f(s.X).shape, s.dims.d_k
    dev = X - X.mean(axis=1, keepdims=True)
    sigma = np.sqrt((dev ** 2).mean(axis=1, keepdims=True) + float(s.options.eps))
    A = dev / sigma * f(s.params["ln1.gamma"]) + f(s.params["ln1.beta"])
    Q, K = A @ f(s.params["W_Q"]), A @ f(s.params["W_K"])
    out = {}
    for h in range(s.dims.heads):
        S = Q[:, h * dk:(h + 1) * dk] @ K[:, h * dk:(h + 1) * dk].T / np.sqrt(dk)
        S[np.triu_indices(n, 1)] = -np.inf
        e = np.exp(S - S.max(axis=1, keepdims=True))
        out[h] = e / e.sum(axis=1, keepdims=True)
    return out


def test_exact_check_refuses_weights_above_the_upper_bound_after_an_irrational_sigma():
    s = spec.load("pre-ln-causal-gelu")
    X = np.array([[float(e) for e in row] for row in s.X.tolist()])
    var = ((X - X.mean(axis=1, keepdims=True)) ** 2).mean(axis=1)
    assert not float(np.sqrt(var[0])).is_integer() and var[0] == 1.25   # σ = √5/2: irrational
    trace = block.forward(s)
    steps = {st.name: st.value for st in trace}
    graph = step_inputs(s.dims, s.options)
    W = numpy_weights(s)
    live = np.concatenate([W[h][i, :i + 1] for h in W for i in range(1, s.dims.seq_len)])
    top, low = float(live.max()), float(live.min())
    assert 0.5 < top < 1 and low > 0.002
    below = Fraction(top - 0.01).limit_denominator(1000)      # the largest weight exceeds this
    refused = check_attention(steps, graph, Constraints(softmax_weights=(Fraction(1, 1000), below)))
    assert refused and refused.startswith("softmax_weights: attn.h") and f", {below}]" in refused
    above = Fraction(top + 0.01).limit_denominator(1000)      # every weight within [1/1000, above]
    assert check_attention(steps, graph, Constraints(softmax_weights=(Fraction(1, 1000), above))) is None
    floor = Fraction(low + 0.001).limit_denominator(1000)     # the lower bound is held too
    refused = check_attention(steps, graph, Constraints(softmax_weights=(floor, above)))
    assert refused and refused.startswith("softmax_weights:") and f"[{floor}, " in refused


def test_exact_norm_min_check_refuses_a_sigma_just_below_the_bound():
    """σ of norm1's rows by NumPy; a bound just above the smallest is refused on that row, exactly,
    and a bound just below it passes norm1 (a later norm may still fail: it is not named norm1)."""
    from symblock.exercises.checks import check_norms
    s = spec.load("pre-ln-causal-gelu")
    X = np.array([[float(e) for e in row] for row in s.X.tolist()])
    sigma = np.sqrt(((X - X.mean(axis=1, keepdims=True)) ** 2).mean(axis=1))
    row = int(sigma.argmin())
    steps = {st.name: st.value for st in block.forward(s)}
    graph = step_inputs(s.dims, s.options)
    bound = Fraction(float(sigma[row]) + 1e-3).limit_denominator(10 ** 6)
    refused = check_norms(steps, graph, "layernorm", Constraints(norm_min=bound))
    assert refused and refused.startswith(f"norm_min: norm1.std row {row + 1} = ") and refused.endswith(f"< {bound}")
    bound = Fraction(float(sigma[row]) - 1e-3).limit_denominator(10 ** 6)
    passed = check_norms(steps, graph, "layernorm", Constraints(norm_min=bound))
    assert passed is None or not passed.startswith("norm_min: norm1.std"), passed


def spec_with_random(tmp_path, random: str):
    from symblock.engine.spec import example_text
    text = example_text("pre-ln-causal-gelu")
    line = next(l for l in text.splitlines() if l.startswith("random:"))
    path = tmp_path / "r.yaml"
    path.write_text(text.replace(line, random), encoding="utf-8")
    return path


@pytest.mark.parametrize("random, field, why", [
    ('random: {seed: 7, softmax_weights: ["0.6", "0.9"]}', "random.softmax_weights", "at most 1/2, below the bound 3/5"),
    ('random: {seed: 7, softmax_weights: ["0.02", "1.5"]}', "random.softmax_weights", "expected 0 < low <= high <= 1"),
    ('random: {seed: 7, softmax_weights: ["0", "0.9"]}', "random.softmax_weights", "expected 0 < low <= high <= 1"),
    ('random: {seed: 7, x_step: "1/101"}', "random.x_step", "denominator <= 100"),
])
def test_bounds_no_draw_can_meet_are_refused_before_drawing(tmp_path, capsys, random, field, why):
    from symblock.cli import main
    out = tmp_path / "out"
    assert main(["worksheet", str(spec_with_random(tmp_path, random)), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert field in err and why in err and "r.yaml" in err and "Traceback" not in err, err
    assert not out.exists()


def test_bounds_at_their_limits_are_accepted():
    from symblock.exercises.constraints import parse_random
    c = parse_random({"seed": 1, "softmax_weights": ["1/2", "1"], "x_step": "1/100"}, "r.yaml")
    assert c.softmax_weights == (Fraction(1, 2), Fraction(1)) and c.x_step == Fraction(1, 100)
