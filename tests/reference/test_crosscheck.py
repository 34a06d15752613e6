"""Exact engine = NumPy float64 = torch.nn, on every step, for every option combination.

The NumPy path (symblock/reference/numeric.py) is separate code written from DESIGN.md's conventions and the
torch path (symblock/reference/torch_ref.py) runs real nn modules, so agreement to 1e-9 on every step checks
the exact engine's arithmetic, wiring and semantics. torch is imported here unconditionally: CI
installs it, and a missing torch must fail, not skip.
"""
import numpy as np
import pytest
import torch  # noqa: F401  (fail loudly without torch)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from symblock.engine import block, spec
from symblock.reference import numeric, torch_ref, verify
from symblock.engine.exact import Real
from strategies import matrix, vector

TOL = 1e-9


@st.composite
def specs(draw):
    """Every option, ε = 0 included; X and the attention weights drawn from tests/strategies.py
    (wide integers, fractions, decimals as written, repeated entries), the rest from `random:`
    over a range drawn up to ±9."""
    d_model = draw(st.integers(1, 6))
    heads = draw(st.sampled_from([h for h in range(1, d_model + 1) if d_model % h == 0]))
    n = draw(st.integers(1, 4))
    pre = draw(st.booleans())
    norm = draw(st.sampled_from(["layernorm", "rmsnorm"]))
    bound = draw(st.sampled_from([2, 5, 9]))
    weights = {w: draw(matrix(d_model, d_model, bound)) for w in ("W_Q", "W_K", "W_V") if draw(st.booleans())}
    final_norm = pre and draw(st.booleans())
    lns = ["ln1", "ln2"] + (["ln_final"] if final_norm else [])   # ln_final only where the block has it
    if draw(st.booleans()):
        for ln in lns:
            weights[ln] = {"gamma": draw(vector(d_model))}
            if norm == "layernorm":
                weights[ln]["beta"] = draw(vector(d_model))
    data = {
        "layout": draw(st.sampled_from(["math", "torch"])),
        "dims": {"seq_len": n, "d_model": d_model, "d_ff": draw(st.integers(1, 6)), "heads": heads},
        "block": {
            "norm_position": "pre" if pre else "post",
            "norm": norm,
            "eps": draw(st.sampled_from([0, 0, "1e-5", "1/100", 1])),
            "final_norm": final_norm,
            "activation": draw(st.sampled_from(["relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu"])),
            "attention_scale": draw(st.sampled_from(["sqrt_dk", "none"])),
            "causal": draw(st.booleans()),
            "bias": draw(st.booleans()),
            "out_proj": draw(st.booleans()),
        },
        "weights": weights,
        "inputs": {"X": draw(matrix(n, d_model, bound))},
        "random": {"seed": draw(st.integers(0, 10**6)), "low": -bound, "high": bound},
    }
    return spec.from_mapping(data, "<hypothesis>")


def forward_or_refusal(s):
    """The exact trace, or None when the spec has a zero-variance row with ε = 0: then NumPy and
    torch refuse it too (the same contract on every path), or, where float rounding has already
    parted the row's entries (a matmul summing in another order per column), find that row's
    variance at rounding level, ~1e-32 of its scale."""
    try:
        return block.forward(s)
    except spec.SpecError as e:
        assert "zero variance" in str(e) or "divide by zero" in str(e), e
        assert s.options.eps == 0
        step, row = e.where.split("[")[0], int(e.where.split("[")[1].rstrip("]"))
        for backend in (numeric, torch_ref):
            try:
                got = backend.forward(s)
            except ZeroDivisionError as refusal:
                assert "norm" in str(refusal), refusal
                continue
            x = np.asarray(got[block.step_inputs(s.dims, s.options)[step][0]], dtype=float)[row]
            assert abs(float(np.asarray(got[step], dtype=float)[row][0])) <= 1e-24 * (1 + (x ** 2).max()), \
                (backend.__name__, step, row)
        return None


def well_conditioned(trace) -> bool:
    """With ε = 0, float64 loses digits in proportion to 1/σ: keep σ (or r) away from 0."""
    return all(abs(v) > 1e-2 for st_ in trace if st_.name.endswith((".std", ".rms"))
               for r in st_.value.floats() for v in r)


def assert_agrees(trace, backend, what):
    assert list(backend) == trace.names(), what
    for step in trace:
        want = np.array(step.value.floats())
        scale = max(1.0, np.abs(want[np.isfinite(want)]).max(initial=0))
        assert verify.max_abs_diff(want, backend[step.name]) <= TOL * scale, (what, step.name)


@given(specs())
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_exact_equals_numpy_and_torch_on_every_step(s):
    trace = forward_or_refusal(s)
    assume(trace is not None and well_conditioned(trace))
    assert_agrees(trace, numeric.forward(s), "numpy")
    assert_agrees(trace, torch_ref.forward(s), "torch")


@given(specs())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_value_is_exact_and_its_value_is_numpys_and_torchs(s):
    """No float sneaks into the trace: every entry is an exact Real, rational where only + and ·
    meet rational inputs, and its value is the float paths' value."""
    trace = forward_or_refusal(s)
    assume(trace is not None and well_conditioned(trace))
    ref = {"numpy": numeric.forward(s), "torch": torch_ref.forward(s)}
    # Post-LN: X, Q, K, V and the raw scores come from rational inputs through +, · only
    post = s.options.norm_position == "post"
    for step in trace:
        assert all(isinstance(e, Real) for row in step.value.rows for e in row)
        if step.name == "x" or post and (step.name in ("attn.q", "attn.k", "attn.v") or
                                          step.name.endswith(".scores")):
            assert all(e.is_rational for row in step.value.rows for e in row), step.name
        for what, backend in ref.items():
            got = np.array(step.value.floats())
            scale = max(1.0, np.abs(got[np.isfinite(got)]).max(initial=0))
            assert verify.max_abs_diff(got, backend[step.name]) <= TOL * scale, (what, step.name)


def test_eps_zero_specs_agree_too():
    """ε = 0: a spec with a constant row (zero variance) is refused by every path; the others agree."""
    refused = agreed = 0
    for seed in range(12):
        X = [[1, 2, 4], [3, 3, 3], [0, -1, 2]] if seed % 3 == 0 else None  # row 1: zero variance
        s = spec.from_mapping({"dims": {"seq_len": 3, "d_model": 3, "d_ff": 4},
                               "block": {"norm": "layernorm", "activation": "relu",
                                         "norm_position": "pre" if X else "post"},
                               **({"inputs": {"X": X}} if X else {}),
                               "random": {"seed": seed}})
        trace = forward_or_refusal(s)
        if trace is None:
            refused += 1
            continue
        agreed += 1
        assert_agrees(trace, numeric.forward(s), f"seed {seed}")
    assert refused == 4 and agreed == 8


def test_builtin_examples_verify():
    for name in spec.block_example_names():
        result = verify.run(spec.load(name), require_torch=True)
        assert result.ok, (name, result.problems)
        assert set(result.backends) == {"numpy", "torch"}
        assert result.backends["numpy"].max_abs_diff <= TOL


def test_verify_reports_a_disagreeing_backend(monkeypatch):
    real_forward = numeric.forward

    def broken(s):
        out = real_forward(s)
        out["ffn.out"] = out["ffn.out"] + 1e-6
        return out

    monkeypatch.setattr(numeric, "forward", broken)
    result = verify.run(spec.load("seed-post-ln"))
    assert not result.ok
    assert any("numpy differs at ffn.out" in p for p in result.problems)
    assert result.backends["numpy"].steps["ffn.out"] > 9e-7


def test_the_tolerance_is_relative_above_1():
    """1e10 in float64 is good to ~1e-6 absolute: a block whose FFN output is ~1e10 verifies (it
    failed with an absolute 1e-9), while a relative error of 1e-8 at 1e10 and an absolute 2e-9 at
    0.5 still fail."""
    problems: list[str] = []
    verify.compare({"s": np.array([[1e10, 0.5]])}, {"s": np.array([[1e10 + 5e-1, 0.5]])}, "x", TOL, problems)
    assert problems == []        # 5e-11 relative
    verify.compare({"s": np.array([[1e10]])}, {"s": np.array([[1e10 * (1 + 1e-8)]])}, "x", TOL, problems)
    verify.compare({"s": np.array([[0.5]])}, {"s": np.array([[0.5 + 2e-9]])}, "y", TOL, problems)
    verify.compare({"s": np.array([[-np.inf]])}, {"s": np.array([[-1e9]])}, "z", TOL, problems)
    assert [p.split(" ")[0] for p in problems] == ["x", "y", "z"]
    big = {"dims": {"seq_len": 2, "d_model": 2, "d_ff": 2, "heads": 1},
           "block": {"norm_position": "pre", "final_norm": False},
           "weights": {"W_Q": [[1, 0], [0, 1]], "W_K": [[1, 0], [0, 1]], "W_V": [[1, 0], [0, 1]],
                       "W_O": [[1, 0], [0, 1]], "W_1": [[3, 0], [0, 1]], "W_2": [["1e10", 0], [0, "7e9"]]},
           "inputs": {"X": [[1, 0], [0, 1]]}}
    result = verify.run(spec.from_mapping(big), require_torch=True)
    assert result.ok, result.problems
    assert np.abs(verify.exact_floats(block.forward(spec.from_mapping(big)))["output"]).max() > 1e10
