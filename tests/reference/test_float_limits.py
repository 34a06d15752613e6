"""verify where float64 itself cannot follow: a LayerNorm row at ε = 0 whose entries agree with
their mean to more digits than a double holds. The exact trace is right there; the float paths
are not, so their differences from that norm on are reported as float64's, not as failures, and
a float path that finds the row's variance 0 is reported as not run (never an internal error)."""
from __future__ import annotations

import json
from fractions import Fraction

import numpy as np

from symblock.engine import spec
from symblock.reference import numeric, verify

TINY = Fraction(1, 10**12)


def pre_ln(row, eps=0):
    """A Pre-LN block whose norm1 reads the row given (d_model 3), weights drawn."""
    return spec.from_mapping({"dims": {"seq_len": 2, "d_model": 3, "d_ff": 2, "heads": 1},
                              "block": {"norm_position": "pre", "eps": eps},
                              "inputs": {"X": [[str(x) for x in row], ["1", "2", "4"]]},
                              "random": {"seed": 3, "low": -2, "high": 2}}, "test")


def test_a_row_flat_to_13_digits_is_beyond_float64_and_said_so():
    # row 1 = 5 + (0, 1, 3)·10^-12: deviations (−4, −1, 5)/3 · 10^-12, σ² = 42/27 · 10^-24 by hand,
    # so μ/σ = (5 + 4/3·10^-12) / (√(14/9)·10^-12) ≈ 4.0·10^12: about 13 of a double's 16 digits go
    s = pre_ln([5, 5 + TINY, 5 + 3 * TINY])
    sigma = np.sqrt(42 / 27) * 1e-12
    got = numeric.forward(s)["norm1"][0]
    want = (np.array([-4, -1, 5]) / 3e12) / sigma
    assert np.max(np.abs(got - want)) > 1e-6   # float64's own error here: no tolerance of 1e-9 holds
    result = verify.run(s, use_torch=False)
    assert result.ok and not result.problems
    first = next(iter(result.limits))
    assert first == "norm1.var" and "output" in result.limits and "x" not in result.limits
    why = result.limits["norm1"]
    assert "norm1 row 1" in why and "about 13 digits" in why and "σ ≈ 1.25e-12" in why
    text = verify.table(result)
    checked = len(result.steps) - len(result.limits)
    assert "Beyond float64 at 21 of 23 steps, the first norm1.var" in text and checked == 2   # x and norm1.mean
    assert f"OK: the {checked} steps float64 can check agree; the exact values of the other {len(result.limits)}" in text
    rows = {line.split()[0]: line for line in text.splitlines() if line and line.split()[0] in result.steps}
    assert rows["norm1"].rstrip().endswith("beyond: not counted") and rows["x"].rstrip().endswith("checked")
    assert f"over {checked} steps checked, {len(result.limits)} more beyond float64" in text
    data = json.loads(verify.to_json(result))
    assert data["ok"] is True and data["beyond_float64"]["from"] == "norm1.var"


def plant(monkeypatch, module, step: str, delta: float) -> None:
    """`module.forward` (a float path) with `delta` added to its `step`: an error verify must catch."""
    orig = module.forward

    def wrong(s):
        out = orig(s)
        return {**out, step: out[step] + delta}
    monkeypatch.setattr(module, "forward", wrong)


def test_a_planted_error_before_the_flat_row_still_fails(monkeypatch):
    s = pre_ln([5, 5 + TINY, 5 + 3 * TINY])
    plant(monkeypatch, numeric, "x", 1e-6)   # the input itself: before any norm, float64 can tell
    result = verify.run(s, use_torch=False)
    assert not result.ok and result.problems == ["numpy differs at x by 1e-06"]


def test_well_conditioned_rows_have_no_limit():
    for row, eps in (([5, 6, 8], 0), ([5, 5 + TINY, 5 + 3 * TINY], "1e-5")):   # ε keeps σ ≥ √ε
        result = verify.run(pre_ln(row, eps), use_torch=False)
        assert result.ok and result.limits == {} and "Beyond" not in verify.table(result)


def test_a_row_flat_beyond_a_double_is_not_run_not_an_internal_error(tmp_path, cli):
    # 5 + 10^-17 rounds to 5.0: float64 sees a constant row and cannot normalise it; exactly, σ ≠ 0:
    # deviations (−1, 0, 1)·10^-17, σ = √(2/3)·10^-17 ≈ 8.16e-18, μ/σ ≈ 6·10^17 (18 digits)
    tiny = Fraction(1, 10**17)
    row = [5, 5 + tiny, 5 + 2 * tiny]
    result = verify.run(pre_ln(row), require_torch=True)
    assert not result.ok and {b.available for b in result.backends.values()} == {False}
    assert "norm1: row 1 has zero variance in float64" in result.backends["numpy"].reason
    assert "norm1: row 1 has standard deviation 0 in float64" in result.backends["torch"].reason
    path = tmp_path / "flat.yaml"
    path.write_text("dims: {seq_len: 2, d_model: 3, d_ff: 2, heads: 1}\n"
                    "block: {norm_position: pre, eps: 0}\n"
                    f"inputs: {{X: [['5', '{5 + tiny}', '{5 + 2 * tiny}'], ['1', '2', '4']]}}\n"
                    "random: {seed: 3, low: -2, high: 2}\n", encoding="utf-8")
    code, out, err = cli("verify", str(path), "--no-torch")
    assert code == 1 and err == "" and "NOT CHECKED: no float path could run this example" in out
    assert "numpy: not run (norm1: row 1 has zero variance in float64" in out and "about 18 digits" in out
    assert "σ ≈ 8.16e-18" in out


CHAINED = {  # three layers at d_model 2 under ε = 1e-5: rows whose two entries (nearly) agree
    "model": {"vocab": ["a", "b", "c", "d"], "layers": 3, "norm_positions": ["pre", "post", "pre"],
              "prompt": [0, 1, 2], "positions": "learned", "head": "tied", "final_norm": True,
              "generate": 1, "kv_cache": False},
    "dims": {"d_model": 2, "d_ff": 2, "heads": 1},
    "block": {"norm": "layernorm", "eps": "1e-5", "activation": "relu", "attention_scale": "sqrt_dk",
              "bias": True, "out_proj": True},
    "random": {"seed": 69, "low": -2, "high": 2}}


def chained():
    import warnings
    from symblock.engine import model_spec
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # a mixed Pre-/Post-LN stack warns by design
        return model_spec.from_mapping(CHAINED, "test")


def test_norms_chained_under_a_small_sigma_are_beyond_float64_where_float64_drifts():
    # layer1.norm2's rows have mean 7 and variance ~0, so σ = √(var + 1e-5) ≈ 0.00316: a double's
    # rounding of 7 (~8e-16) comes out ≈ 2.5e-13; layer2's norms divide by σ ≈ 0.0032 and ≈ 0.006
    # again, so float64 drifts past 1e-9 by itself. No single norm's μ/σ is large (7 / 0.00316 ≈
    # 2200), so the κ rule alone called this FAILED.
    from symblock.engine import model
    from symblock.reference import numeric_model
    s = chained()
    trace = model.forward(s)
    assert max(float(e) for row in trace["layer1.norm2.std"].value.rows for e in row) < 0.0033
    want, got = verify.exact_floats(trace), numeric_model.forward(s)
    assert verify.max_abs_diff(want["layer2.norm2"], got["layer2.norm2"]) > 1e-9
    result = verify.run(s, use_torch=False)
    assert result.ok and not result.problems
    assert "layer2.norm2" in result.limits and "layer2.output" in result.limits
    assert "moves by" in result.limits["layer2.norm2"] and "smallest σ before it is 0.00316" in result.limits["layer2.norm2"]
    assert not any(n.startswith(("layer0.", "layer1.attn")) for n in result.limits)   # those are checked
    assert "gen1.probs" not in result.limits   # the final norm brings float64 back within 1e-9
    text = verify.table(result)
    assert f"OK: the {len(result.steps) - len(result.limits)} steps float64 can check agree" in text
    assert f"Beyond float64 at {len(result.limits)} of {len(result.steps)} steps, the first layer2." in text


def test_a_planted_error_where_float64_holds_still_fails_in_the_chained_model(monkeypatch):
    from symblock.reference import numeric_model
    plant(monkeypatch, numeric_model, "layer1.attn.q", 1e-7)
    result = verify.run(chained(), use_torch=False)
    assert not result.ok and "numpy differs at layer1.attn.q by 1e-07" in result.problems


def test_the_built_in_examples_leave_nothing_beyond_float64():
    from symblock.exercises.generate import load
    for name in ("tiny-gpt", "tiny-llama", "tiny-bert", "tiny-translate", "decoder-layer", "seed-post-ln"):
        result = verify.run(load(name, allow_model=True), use_torch=False)
        assert result.ok and result.limits == {}, name
