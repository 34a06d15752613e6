"""Exact engine = NumPy float64 = torch.nn, on every step, for every option combination.

The NumPy path (symblock/reference/numeric.py) is separate code written from DESIGN.md's conventions and the
torch path (symblock/reference/torch_ref.py) runs real nn modules, so agreement to 1e-9 on every step checks
the exact engine's arithmetic, wiring and semantics. torch is imported here unconditionally: CI
installs it, and a missing torch must fail, not skip.
"""
import numpy as np
import torch  # noqa: F401  (fail loudly without torch)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symblock.engine import block, spec
from symblock.reference import numeric, torch_ref, verify
from symblock.engine.exact import Real

TOL = 1e-9


@st.composite
def specs(draw):
    d_model = draw(st.integers(1, 8))
    heads = draw(st.sampled_from([h for h in range(1, d_model + 1) if d_model % h == 0]))
    pre = draw(st.booleans())
    data = {
        "layout": draw(st.sampled_from(["math", "torch"])),
        "dims": {"seq_len": draw(st.integers(1, 5)), "d_model": d_model,
                 "d_ff": draw(st.integers(1, 8)), "heads": heads},
        "block": {
            "norm_position": "pre" if pre else "post",
            "norm": draw(st.sampled_from(["layernorm", "rmsnorm"])),
            # ε > 0 keeps random rows with zero variance legal (ε = 0 is tested elsewhere)
            "eps": draw(st.sampled_from(["1e-5", "1/100", 1])),
            "final_norm": pre and draw(st.booleans()),
            "activation": draw(st.sampled_from(["relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu"])),
            "attention_scale": draw(st.sampled_from(["sqrt_dk", "none"])),
            "causal": draw(st.booleans()),
            "bias": draw(st.booleans()),
            "out_proj": draw(st.booleans()),
        },
        "random": {"seed": draw(st.integers(0, 10**6)), "low": -2, "high": 2},
    }
    return spec.from_mapping(data, "<hypothesis>")


@given(specs())
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_exact_equals_numpy_and_torch_on_every_step(s):
    trace = block.forward(s)
    for backend in (numeric.forward(s), torch_ref.forward(s)):
        assert list(backend) == trace.names()
        for step in trace:
            want = np.array(step.value.floats())
            scale = max(1.0, np.abs(want[np.isfinite(want)]).max(initial=0))
            assert verify.max_abs_diff(want, backend[step.name]) <= TOL * scale, step.name


@given(specs())
@settings(max_examples=25, deadline=None)
def test_every_value_is_exact(s):
    """No float sneaks into the trace: every entry is an exact Real."""
    for step in block.forward(s):
        assert all(isinstance(e, Real) for row in step.value.rows for e in row)


def test_eps_zero_specs_agree_too():
    for seed in range(30):
        s = spec.from_mapping({"dims": {"seq_len": 3, "d_model": 3, "d_ff": 4},
                               "block": {"norm": "layernorm", "activation": "relu"},
                               "random": {"seed": seed}})
        try:
            trace = block.forward(s)
        except spec.SpecError as e:
            assert "zero variance" in str(e)
            continue
        ref = numeric.forward(s)
        for step in trace:
            assert verify.max_abs_diff(np.array(step.value.floats()), ref[step.name]) <= TOL


def test_builtin_examples_verify():
    for name in spec.example_names():
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
